"""Fixtures for the mock domain tests: the real verified data (the installed tau2-mock-mcp-eval package and
`green-agent data install`'s policy.md, or TAU2_MOCK_DATA_DIR) and upstream's facts about it
(task_facts.json, tool_signatures.json: copies of /work/shared/conformance/mock/, computed by running
upstream tau2-bench a2c0247)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mock_domain import MockData, load_mock_data

HERE = Path(__file__).parent


def load_facts(name: str) -> Any:
    return json.loads((HERE / name).read_text(encoding="utf-8"))


FACTS: dict[str, Any] = load_facts("task_facts.json")
TASK_FACTS: dict[str, dict[str, Any]] = {task["id"]: task for task in FACTS["tasks"]}


@pytest.fixture(scope="session")
def data() -> MockData:
    return load_mock_data()


@pytest.fixture(scope="session")
def data_files(data: MockData) -> dict[str, Path]:
    return dict(data.source.paths)
