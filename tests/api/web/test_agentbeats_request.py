"""Parsing of the AgentBeats request into an AssessmentConfig (no network)."""

from __future__ import annotations

import json

import pytest

from api.web.a2a.request import RequestError, parse_request, shard

SPLITS = {"base": tuple(str(i) for i in range(10)), "train": ("0", "1"), "test": ("2",)}
MODELS = ["scripted", "gpt-small"]


def parse(payload: object) -> tuple:
    return parse_request(json.dumps(payload), split_ids=SPLITS, user_models=MODELS)


def test_full_request_with_unknown_keys_ignored() -> None:
    config, notes = parse(
        {
            "participants": {"agent": "http://127.0.0.1:8080/agent/"},
            "config": {
                "domain": "retail",
                "task_ids": [3, "5"],
                "num_trials": 4,
                "max_steps": 50,
                "user_llm": "gpt-small",
                "user_llm_args": {"temperature": 0.5},
                "num_instances": 7,
                "something_new": True,
            },
        }
    )
    assert config.agent_url == "http://127.0.0.1:8080/agent"
    assert config.tasks.task_ids == ["3", "5"]
    assert (config.trials, config.max_steps, config.user_model) == (4, 50, "gpt-small")
    assert notes == []


def test_num_tasks_shards_and_unknown_user_llm() -> None:
    config, notes = parse(
        {
            "participants": {"agent": "http://a"},
            "config": {
                "domain": "retail",
                "num_tasks": 7,
                "shard_index": 1,
                "num_shards": 3,
                "user_llm": "x",
            },
        }
    )
    assert config.tasks.task_ids == ["2", "3"]
    assert config.user_model is None
    assert any("not configured" in n for n in notes)
    # Shards cover the list exactly once.
    ids = [str(i) for i in range(114)]
    assert [t for i in range(5) for t in shard(ids, i, 5)] == ids


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Hello", "not JSON"),
        ("[1]", "JSON object"),
        (
            '{"participants": {"agent": "http://a"}, "config": {"domain": "airline"}}',
            'domain must be "retail"',
        ),
        ('{"participants": {"white": "http://a"}, "config": {"domain": "retail"}}', 'role "agent"'),
        ('{"participants": {"agent": "http://a"}}', "config"),
        ('{"participants": {"agent": "ftp://a"}, "config": {"domain": "retail"}}', "agent_url"),
        (
            '{"participants": {"agent": "http://a"}, "config": {"domain": "retail", "shard_index": 3, '
            '"num_shards": 2}}',
            "shard_index must be below",
        ),
    ],
)
def test_invalid_requests_say_what_is_expected(text: str, message: str) -> None:
    with pytest.raises(RequestError, match=message) as info:
        parse_request(text, split_ids=SPLITS, user_models=MODELS)
    assert "participants" in str(info.value) or "shard" in str(info.value)
