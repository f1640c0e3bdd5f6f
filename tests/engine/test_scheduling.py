"""Trials start longest first: the task's gold action count orders them, report order breaks ties; the
`longest_first` setting off keeps report order (trial-major, tasks.json order)."""

from __future__ import annotations

import itertools

from green_agent import AssessmentConfig, Engine, EngineSettings, TaskSelection
from retail_domain import RetailData


def test_longest_first_orders_by_gold_actions_then_report_order(data: RetailData) -> None:
    engine = Engine(EngineSettings(), data)
    config = AssessmentConfig(agent_url="http://127.0.0.1:1/", tasks=TaskSelection(split="base"), trials=2)
    keys = engine.trial_keys(config)
    assert keys[:2] == [(next(iter(data.splits["base"])), 0), (data.splits["base"][1], 0)]

    ordered = engine.longest_first(config, keys)
    assert sorted(ordered) == sorted(keys)
    lengths = [len(data.tasks[task_id].gold_actions) for task_id, _ in ordered]
    assert lengths == sorted(lengths, reverse=True) and lengths[0] > lengths[-1]
    position = {k: i for i, k in enumerate(keys)}
    for before, after in itertools.pairwise(ordered):
        if len(data.tasks[before[0]].gold_actions) == len(data.tasks[after[0]].gold_actions):
            assert position[before] < position[after]

    in_order = Engine(EngineSettings(longest_first=False), data)
    assert in_order.longest_first(config, keys) == keys
