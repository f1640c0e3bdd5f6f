"""Parsing of the AgentBeats request into an AssessmentConfig (no network): the official tau2 green's keys,
ours, unknown keys named, and tasks chosen in the task file's order."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from api.web.a2a.request import ParsedRequest, RequestError, parse_request, shard

# The task file holds 0..9; the split file lists "base" in another order (as retail's does: 5 and 9 late).
TASKS = [str(i) for i in range(10)]
SPLITS = {"base": ("0", "1", "2", "3", "4", "6", "7", "8", "5", "9"), "train": ("1", "0"), "test": ("2",)}


@dataclass(frozen=True)
class Catalog:
    tasks: dict[str, object]
    splits: dict[str, tuple[str, ...]]


CATALOG = Catalog(dict.fromkeys(TASKS), SPLITS)


def parse(payload: object, **options: Any) -> ParsedRequest:
    return parse_request(json.dumps(payload), catalog=lambda domain: CATALOG, **options)


def request(**config: Any) -> dict[str, Any]:
    return {
        "participants": {"agent": "http://127.0.0.1:8080/agent/"},
        "config": {"domain": "retail", **config},
    }


def test_the_official_greens_keys_and_ours() -> None:
    parsed = parse(
        request(
            task_ids=[3, "5"],
            num_trials=4,
            max_steps=50,
            user_llm="openai/gpt-4.1",
            user_llm_args={"temperature": 0.5, "reasoning_effort": "low", "max_tokens": 300},
            judge_llm="openai/gpt-4.1-2025-04-14",
            evaluation="ACTION",
        )
    )
    config = parsed.config
    assert config.agent_url == "http://127.0.0.1:8080/agent"
    assert config.tasks.task_ids == ["3", "5"]
    assert (config.trials, config.max_steps, config.user_model) == (4, 50, "openai/gpt-4.1")
    assert config.user_llm_args.request_arguments() == {
        "temperature": 0.5,
        "reasoning_effort": "low",
        "max_tokens": 300,
    }
    assert config.judge_model == "openai/gpt-4.1-2025-04-14" and config.evaluation == "action"
    assert parsed.notes == [] and parsed.ignored == []


def test_unknown_keys_are_ignored_and_named() -> None:
    parsed = parse(
        request(
            num_tasks=2,
            num_instances=7,
            something_new=True,
            user_llm_args={"temperature": 0, "api_base": "http://elsewhere", "seed": 3},
        )
    )
    assert parsed.ignored == ["num_instances", "something_new"]
    assert parsed.notes == [
        "config keys ignored (not used by this green agent): 'num_instances', 'something_new'",
        "user_llm_args ignored (not sent to the customer model): 'api_base', 'seed'",
    ]
    assert parsed.config.user_llm_args.request_arguments() == {"temperature": 0}
    many = parse(request(**{f"k{i:02d}": i for i in range(25)}))
    assert len(many.ignored) == 25 and many.notes[0].endswith("'k09' and 15 more")


def test_tasks_are_chosen_in_the_task_files_order() -> None:
    # The first N of the task file (as tau2 and the official green), not of the split file.
    assert parse(request(num_tasks=7)).config.tasks.task_ids == ["0", "1", "2", "3", "4", "5", "6"]
    # task_ids in any order run in the file's order, then num_tasks cuts, then the shard slices.
    assert parse(request(task_ids=[9, 2, 7, 0], num_tasks=3)).config.tasks.task_ids == ["0", "2", "7"]
    sharded = parse(request(num_tasks=7, shard_index=1, num_shards=3))
    assert sharded.config.tasks.task_ids == ["2", "3"] and sharded.notes == ["shard 2 of 3: 2 tasks"]
    assert parse(request(split="train")).config.tasks.task_ids == ["0", "1"]
    # More than there are: all of them, said (the official green runs all too).
    clamped = parse(request(num_tasks=40))
    assert clamped.config.tasks.task_ids == TASKS and "more than the 10 tasks" in clamped.notes[0]
    # Shards cover the list exactly once.
    ids = [str(i) for i in range(114)]
    assert [t for i in range(5) for t in shard(ids, i, 5)] == ids


def test_blank_values_and_defaults() -> None:
    # A scenario that leaves a setting empty passes "" or null: the default then.
    parsed = parse(request(num_tasks="", user_llm=None, task_ids=None, max_steps=""), default_user_llm="x/y")
    assert parsed.config.tasks.task_ids == TASKS and parsed.config.user_model == "x/y"
    assert "max_steps" not in parsed.config.model_fields_set
    assert parse(request(user_llm="scripted"), default_user_llm="x/y").config.user_model == "scripted"
    assert parse(request(num_tasks="3")).config.tasks.task_ids == ["0", "1", "2"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Hello", "not JSON"),
        ("[1]", "JSON object"),
        (
            '{"participants": {"agent": "http://a"}, "config": {"domain": "banking"}}',
            'domain must be "retail", "airline"',
        ),
        ('{"participants": {"white": "http://a"}, "config": {"domain": "retail"}}', 'role "agent"'),
        ('{"participants": {"agent": "http://a"}}', "config"),
        ('{"participants": {"agent": "ftp://a"}, "config": {"domain": "retail"}}', "agent_url"),
        (
            '{"participants": {"agent": "http://a"}, "config": {"domain": "retail", "shard_index": 3, '
            '"num_shards": 2}}',
            "shard_index must be below",
        ),
        (
            '{"participants": {"agent": "http://a"}, "config": {"domain": "retail", "evaluation": "db"}}',
            "evaluation",
        ),
        (
            '{"participants": {"agent": "http://a"}, "config": {"domain": "retail", '
            '"user_llm_args": {"temperature": 9}}}',
            "temperature",
        ),
        (
            '{"participants": {"agent": "http://a"}, "config": {"domain": "retail", "task_ids": [1, "x"]}}',
            "do not exist: 'x'",
        ),
    ],
)
def test_invalid_requests_say_what_is_expected(text: str, message: str) -> None:
    with pytest.raises(RequestError, match=message) as info:
        parse_request(text, catalog=lambda domain: CATALOG)
    assert "\n" not in str(info.value)
