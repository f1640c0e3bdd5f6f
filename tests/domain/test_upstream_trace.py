"""Conformance against upstream's own tool code.

150 random call sequences (writes, reads, bad ids, wrong types, missing and extra arguments, odd expressions)
were run through upstream tau2-bench v1.0.1's RetailTools. The file keeps every error text verbatim, every
successful result as a sha256, and each sequence's final DB hash.

Note: pydantic validation messages embed the pydantic version in a URL; the vectors were produced with the
pydantic pinned in this project, so they match here."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from retail_domain import RetailData

from .conftest import load_vectors

TRACE: dict[str, Any] = load_vectors("upstream_tool_trace_v1.json")
SEQUENCES: list[dict[str, Any]] = TRACE["sequences"]


def test_trace_exercises_every_tool_and_both_outcomes() -> None:
    calls = [call for sequence in SEQUENCES for call in sequence["calls"]]
    assert len(calls) > 1000
    succeeded = {call["name"] for call in calls if not call["error"]}
    failed = {call["name"] for call in calls if call["error"]}
    assert len(succeeded) == 16  # every tool succeeded at least once...
    assert len(failed - {"nonexistent_tool"}) >= 14  # ...and nearly every tool failed at least once


@pytest.mark.parametrize("sequence", SEQUENCES, ids=[str(s["seed"]) for s in SEQUENCES])
def test_sequence_matches_upstream(data: RetailData, sequence: dict[str, Any]) -> None:
    env = data.new_environment()
    for index, call in enumerate(sequence["calls"]):
        result = env.call(call["name"], call["arguments"])
        where = f"call {index} {call['name']}({call['arguments']})"
        assert result.error == call["error"], where
        if call["error"]:
            assert result.content == call["content"], where
        else:
            assert hashlib.sha256(result.content.encode()).hexdigest() == call["content_sha256"], where
    assert env.db_hash() == sequence["final_db_hash"]
