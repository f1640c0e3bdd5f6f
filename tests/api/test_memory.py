"""What a process keeps in memory: imports it does not need stay lazy, and what a finished trial leaves behind
is bounded (docs/benchmarks.md, "Turn cost", Memory)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from api.db.repository import COMPLETED
from api.queue import LocalConnector
from api.runtime import open_runtime
from green_agent.config import AssessmentConfig, TaskSelection
from green_agent.models import TrialResult, TurnTaken
from tests.api.servers import green_settings

REPO = Path(__file__).resolve().parents[2]

SERVICE_WITHOUT_LLM = textwrap.dedent(
    """
    import asyncio, sys

    import api.app, api.cli, api.worker
    from api.runtime import open_runtime
    from api.settings import Settings

    async def main() -> None:
        settings = Settings(database_url=sys.argv[1])
        async with open_runtime(settings) as runtime:
            assert runtime.worker_running
    asyncio.run(main())
    print("openai" in sys.modules)
    from green_agent.config import LLMEndpoint
    from green_agent.llm import ChatLLM
    ChatLLM(LLMEndpoint(model="m", base_url="http://127.0.0.1:9/v1"))
    print("openai" in sys.modules)
    """
)


def test_the_service_without_llms_never_imports_openai(tmp_path: Path) -> None:
    """openai costs ~18 MiB of RSS: a service whose customers are scripted and which has no judge (the
    defaults) opens its runtime, worker included, without it; the first LLM client imports it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GREEN_AGENT_", "OPENAI_", "DATABASE_"))}
    out = subprocess.run(
        [sys.executable, "-c", SERVICE_WITHOUT_LLM, f"sqlite+aiosqlite:///{tmp_path / 'g.db'}"],
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert out.stdout.split() == ["False", "True"], out.stderr


async def test_the_report_reads_no_transcripts(database_url: str, oracle_url: str) -> None:
    """Finishing an assessment reads every stored trial at once for its report: without transcripts, which
    the report never looks at (456 trials' transcripts were the +60 MiB at the end of a SQLite run)."""
    async with open_runtime(green_settings(database_url)) as runtime:
        repository = runtime.repository
        reads: list[bool] = []
        read_trials = repository.trial_results

        async def recorded(assessment_id: str, *, transcripts: bool = True) -> list[TrialResult]:
            reads.append(transcripts)
            return await read_trials(assessment_id, transcripts=transcripts)

        repository.trial_results = recorded  # type: ignore[method-assign]
        config = AssessmentConfig(agent_url=oracle_url, tasks=TaskSelection(task_ids=["0", "1"]), trials=2)
        record, _ = await runtime.service.create(config, source="cli")
        final = await runtime.service.wait(record.id)
    assert final.status == COMPLETED and final.report is not None and final.report.avg_reward == 1.0
    assert reads == [False]


async def test_the_in_memory_queue_keeps_only_waiting_and_running_jobs(
    tmp_path: Path, oracle_url: str, slow_oracle_url: str
) -> None:
    """On SQLite the trial queue lives in memory for the life of the process: finished and cancelled jobs,
    their events and the queries that ran are not kept (procrastinate's test connector kept all three)."""
    async with open_runtime(green_settings(f"sqlite+aiosqlite:///{tmp_path / 'g.db'}")) as runtime:
        connector = runtime.service.queue.connector
        assert isinstance(connector, LocalConnector)
        finished, _ = await runtime.service.create(
            AssessmentConfig(agent_url=oracle_url, tasks=TaskSelection(task_ids=["0", "1"]), trials=2),
            source="cli",
        )
        assert (await runtime.service.wait(finished.id)).status == COMPLETED
        slow = AssessmentConfig(
            agent_url=slow_oracle_url, tasks=TaskSelection(num_tasks=6), trials=1, concurrency=2
        )
        cancelled, _ = await runtime.service.create(slow, source="cli")
        async with runtime.service.subscribe(cancelled.id) as progress:
            async for event in progress:  # one trial under way: jobs waiting and running
                if isinstance(event, TurnTaken):
                    break
        assert {job["status"] for job in connector.jobs.values()} == {"doing"}
        await runtime.service.cancel(cancelled.id)
        for _ in range(200):  # the running jobs stop at their next turn
            if not connector.jobs:
                break
            await asyncio.sleep(0.05)
        assert connector.jobs == {} and connector.events == {} and connector.queries == []
