"""Conformance with upstream's own runs, task by task.

base_task_facts.json (all 114 base tasks) is ../shared/conformance/telecom/task_facts.json;
full_sample_facts.json holds the same facts for the 20 'small' tasks and 60 others of the 'full' split,
computed with upstream's code the same way (its "_about" says how). For each task: the hashes of both
databases after the initial state, every gold call's exact output when agent and customer make it (sync
included), both databases after those calls, the evaluator's own gold databases (replayed without the
sync), each env assertion before and after, and the reward upstream's evaluator gives a trajectory made of
exactly the gold calls.
"""

from __future__ import annotations

from typing import Any

import pytest

from domain_kit import ToolCall, check_actions, score_trial
from telecom_domain import TelecomData

from .conftest import PRISTINE_AGENT_HASH, PRISTINE_USER_HASH, load_facts

BASE: dict[str, Any] = load_facts("base_task_facts.json")
SAMPLE: dict[str, Any] = load_facts("full_sample_facts.json")
TASKS = [pytest.param(fact, id=fact["id"]) for fact in BASE["tasks"] + SAMPLE["tasks"]]


def gold_calls(fact: dict[str, Any]) -> list[ToolCall]:
    return [ToolCall(c["name"], dict(c["arguments"]), c["requestor"]) for c in fact["gold_actions"]]


def test_the_facts_cover_the_base_split_and_a_sample_of_full(telecom: TelecomData) -> None:
    assert [fact["id"] for fact in BASE["tasks"]] == list(telecom.split("base"))
    sample = [fact["id"] for fact in SAMPLE["tasks"]]
    assert set(telecom.split("small")) <= set(sample) and len(sample) == 80
    assert set(sample).isdisjoint(telecom.split("base")) and set(sample) <= set(telecom.split("full"))
    assert BASE["pristine"] == {
        "agent_db_hash": PRISTINE_AGENT_HASH,
        "user_db_hash": PRISTINE_USER_HASH,
        "note": BASE["pristine"]["note"],
    }


def test_pristine_databases(telecom: TelecomData) -> None:
    env = telecom.new_environment()
    assert (env.db_hash(), env.user_db_hash()) == (PRISTINE_AGENT_HASH, PRISTINE_USER_HASH)
    assert telecom.initial_db_hash() == PRISTINE_AGENT_HASH


@pytest.mark.parametrize("fact", TASKS)
def test_task_against_upstream(telecom: TelecomData, fact: dict[str, Any]) -> None:
    task = telecom.task(fact["id"])
    assert list(task.reward_basis) == fact["reward_basis"]

    # The initial state, and each env assertion on it.
    env = telecom.new_environment(task.id)
    assert (env.db_hash(), env.user_db_hash()) == tuple(fact["initial"].values())
    before = [
        env.assertion(a.func_name, a.arguments, a.env_type) == a.assert_value for a in task.env_assertions
    ]
    assert before == [a["before_gold"] for a in fact["env_assertions"]]

    # The gold calls as agent and customer make them: exact outputs, then both databases.
    env = telecom.new_environment(task.id)
    calls = gold_calls(fact)
    assert [(c.name, c.arguments, c.requestor) for c in calls] == [
        (a.name, a.arguments, a.requestor) for a in task.gold_actions
    ]
    for call, expected in zip(calls, fact["gold_actions"], strict=True):
        result = env.call(call.name, call.arguments, call.requestor)
        assert (result.content, result.error) == (expected["output"], expected["error"]), call
    assert (env.db_hash(), env.user_db_hash()) == tuple(fact["gold_db_live"].values())

    # The evaluator's gold replay (no sync: it misses what the agent's calls do to the phone).
    gold = telecom.gold(task.id)
    assert (gold.db_hash, gold.user_db_hash) == tuple(fact["gold_db"].values())
    assert gold.failed_calls == ()

    # What upstream's evaluator makes of a trajectory of exactly the gold calls.
    check = telecom.check_environment(task.id, env, calls)
    after = [a.actual == a.expected for a in check.assertions]
    assert after == [a["after_gold"] for a in fact["env_assertions"]]
    assert check.db_matched == fact["gold_trajectory_eval"]["db_match"]
    assert check.db_actual_hash == fact["gold_db_live"]["agent_db_hash"]
    assert check.user_db_hash == fact["gold_db_live"]["user_db_hash"]
    actions = check_actions(task.gold_actions, calls, telecom.write_tools)
    reward = score_trial(
        task,
        "user_stop",
        db_matched=check.db_matched,
        env_assertions_met=check.assertions_met,
        actions_met=all(a.matched for a in actions),
    )
    assert reward.reward == fact["gold_trajectory_eval"]["reward"] == 1.0


def test_gold_run_db_match_is_upstreams_diagnostic(telecom: TelecomData) -> None:
    """Upstream's unsynced gold replay differs from a perfect run in 71 of the 114 base tasks."""
    mismatched = [fact["id"] for fact in BASE["tasks"] if not fact["gold_trajectory_eval"]["db_match"]]
    assert len(mismatched) == 71
    for task_id in mismatched[:5]:
        env = telecom.new_environment(task_id)
        calls = [a.to_tool_call() for a in telecom.task(task_id).gold_actions]
        check = telecom.check_environment(task_id, env, calls)
        assert not check.db_matched and check.assertions_met
