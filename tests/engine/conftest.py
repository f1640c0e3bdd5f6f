"""Fixtures of the engine tests: the verified retail data, engines, and a collector of progress events."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from green_agent import AssessmentConfig, AssessmentReport, Engine, EngineSettings, TrialResult
from retail_domain import RetailData, load_retail_data

GOLD_EQUALS_INITIAL = {"10", "12", "24", "25", "50", "57", "62", "65", "67", "68", "105"}
"""Tasks whose gold DB equals the initial DB (conformance/task_table.md)."""


@pytest.fixture(scope="session")
def data() -> RetailData:
    return load_retail_data()


class Collector:
    """An `on_event` handler that keeps every event, like the service's, but in memory."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    async def __call__(self, event: Any) -> None:
        self.events.append(event)

    @property
    def results(self) -> list[TrialResult]:
        return [e.result for e in self.events if e.kind == "trial_finished"]

    def by_task(self) -> dict[str, TrialResult]:
        return {r.task_id: r for r in self.results}


@contextlib.asynccontextmanager
async def engine_for(data: RetailData, **settings: Any) -> AsyncIterator[Engine]:
    async with Engine(EngineSettings(**settings), data) as engine:
        yield engine


async def run(
    data: RetailData, config: AssessmentConfig, **settings: Any
) -> tuple[AssessmentReport, Collector]:
    collector = Collector()
    async with engine_for(data, **settings) as engine:
        report = await engine.run(config, on_event=collector)
    return report, collector


def expected_applicability(data: RetailData, scored_ids: list[str]) -> dict[str, int]:
    """`signal_applicable` for one scored trial per task of `scored_ids`, no judge: derived from the task
    data, independently of the engine's code."""
    scored = [data.tasks[t] for t in scored_ids]
    return {
        "DB_STATE_MATCH": len(scored),
        "NL_ASSERTION": 0,
        "CLEAN_EXIT": len(scored),
        "ACTION_MATCH": sum(1 for task in scored if task.gold_actions),
        "COMMUNICATE": sum(1 for task in scored if task.communicate_info),
        "ENV_ASSERTION": sum(1 for task in scored if task.env_assertions),
    }
