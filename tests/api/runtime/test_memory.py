"""What a process keeps in memory: imports it does not need stay lazy, and what a finished trial leaves behind
is bounded (docs/benchmarks.md, "Turn cost", Memory)."""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pydantic import ValidationError
from sqlalchemy import text

from api.db.repository import COMPLETED, AssessmentRecord
from api.runtime.queue import LocalConnector
from api.runtime.runtime import open_runtime
from green_agent.config import AssessmentConfig, TaskSelection
from green_agent.core.models import TrialResult, TurnTaken
from tests.api.servers import green_settings

REPO = Path(__file__).resolve().parents[3]

SERVICE_WITHOUT_LLM = textwrap.dedent(
    """
    import asyncio, sys

    import api.web.app, api.cli, api.runtime.worker
    from api.runtime.runtime import open_runtime
    from api.settings import Settings

    async def main() -> None:
        settings = Settings(database_url=sys.argv[1])
        async with open_runtime(settings) as runtime:
            assert runtime.worker_running
    asyncio.run(main())
    print("openai" in sys.modules)
    from green_agent.config import LLMEndpoint
    from green_agent.llm.client import ChatLLM
    ChatLLM(LLMEndpoint(model="m", base_url="http://127.0.0.1:9/v1"))
    print("openai" in sys.modules)
    import ctypes
    ctypes.CDLL(None).malloc_stats()  # one "Arena n:" block per arena, on stderr
    """
)


def test_the_service_without_llms_never_imports_openai(tmp_path: Path) -> None:
    """openai costs ~18 MiB of RSS: a service whose customers are scripted and which has no judge (the
    defaults) opens its runtime, worker included, without it; the first LLM client imports it. The runtime
    also caps malloc's arenas before its SQLite connections start their threads."""
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
    # The runtime capped malloc's arenas (GREEN_AGENT_MALLOC_ARENAS, 2) before its database threads started.
    assert out.stderr.count("Arena ") == 2


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


ARENAS = textwrap.dedent(
    """
    import ctypes, sys, threading
    from api.runtime.memory import limit_malloc_arenas

    cap = int(sys.argv[1])
    print(limit_malloc_arenas(cap))
    kept = []
    started = threading.Barrier(6)

    def allocate() -> None:
        started.wait()  # all six at once, so none can reuse an arena another has left
        kept.extend(bytearray(2000) for _ in range(200))  # past 512 bytes: malloc, not pymalloc

    threads = [threading.Thread(target=allocate) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ctypes.CDLL(None).malloc_stats()  # one "Arena n:" block per arena, on stderr
    """
)


def _python(snippet: str, argument: int) -> subprocess.CompletedProcess[str]:
    """`snippet` run by a fresh interpreter (process-wide settings apply to it alone)."""
    return subprocess.run(
        [sys.executable, "-c", snippet, str(argument)],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )


def _arenas(cap: int) -> tuple[bool, int]:
    out = _python(ARENAS, cap)
    return out.stdout.split() == ["True"], out.stderr.count("Arena ")


def test_malloc_arenas_are_capped_for_the_threads_started_after() -> None:
    """`GREEN_AGENT_MALLOC_ARENAS` (default 2): six threads allocating at once share two arenas with the
    main thread's; at the cap of 1 everything shares one; 0 leaves glibc's default, an arena per thread."""
    assert _arenas(2) == (True, 2)
    assert _arenas(1) == (True, 1)
    taken, arenas = _arenas(0)
    assert not taken and arenas == 7


async def test_sqlite_connections_keep_a_bounded_page_cache(tmp_path: Path) -> None:
    """`GREEN_AGENT_SQLITE_CACHE_KIB` (default 512) bounds each pooled SQLite connection's page cache; past
    it SQLite reads pages from the file again: a table four times the cache comes back whole."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'g.db'}"
    assert green_settings(url).sqlite_cache_kib == 512
    with pytest.raises(ValidationError, match="sqlite_cache_kib"):
        green_settings(url, sqlite_cache_kib=63)
    async with open_runtime(green_settings(url, sqlite_cache_kib=64)) as runtime:
        async with runtime.database.begin() as connection:
            assert (await connection.exec_driver_sql("PRAGMA cache_size")).scalar() == -64
            await connection.exec_driver_sql("CREATE TABLE filler (n INTEGER, blob TEXT)")
            rows = [{"n": n, "blob": f"{n:04d}" * 256} for n in range(256)]  # 256 KiB
            await connection.execute(text("INSERT INTO filler VALUES (:n, :blob)"), rows)
        async with runtime.database.connect() as connection:
            read = (await connection.exec_driver_sql("SELECT n, blob FROM filler ORDER BY n")).all()
    assert [tuple(row) for row in read] == [(r["n"], r["blob"]) for r in rows]


async def test_live_trials_do_not_each_hold_the_assessment_record(
    tmp_path: Path, slow_oracle_url: str
) -> None:
    """A trial job reads the assessment's record to open it, then lets it go for the minutes the trial lasts:
    with 6 trials live, no copy per trial is left (each held its decoded config, ~2 KiB)."""
    async with open_runtime(green_settings(f"sqlite+aiosqlite:///{tmp_path / 'g.db'}")) as runtime:
        config = AssessmentConfig(
            agent_url=slow_oracle_url, tasks=TaskSelection(num_tasks=6), trials=2, concurrency=6
        )
        record, _ = await runtime.service.create(config, source="cli")
        live: set[tuple[str, int]] = set()
        async with runtime.service.subscribe(record.id) as progress:
            async for event in progress:
                if isinstance(event, TurnTaken) and event.message.role == "assistant":
                    live.add((event.task_id, event.trial))
                    if len(live) == 6:
                        break
        gc.collect()
        held = [o for o in gc.get_objects() if isinstance(o, AssessmentRecord) and o.id == record.id]
        await runtime.service.cancel(record.id)
    assert len(held) <= 1  # the test's own `record` at most


GC_RUNS = textwrap.dedent(
    """
    import gc, sys
    from api.runtime.memory import tune_garbage_collector

    tune_garbage_collector(int(sys.argv[1]))
    runs = []
    gc.callbacks.append(lambda phase, info: runs.append(info["generation"]) if phase == "start" else None)
    kept = [[] for _ in range(200_000)]  # 200,000 container objects allocated and kept
    print(gc.get_threshold()[0], len(runs))
    """
)


def _young_collections(threshold: int) -> tuple[int, int]:
    threshold_set, runs = _python(GC_RUNS, threshold).stdout.split()
    return int(threshold_set), int(runs)


async def test_the_cycle_collector_runs_every_gc_gen0_threshold_allocations(tmp_path: Path) -> None:
    """`GREEN_AGENT_GC_GEN0_THRESHOLD` (default 10,000): 200,000 objects allocated make about 20 runs of the
    collector (young and middle generations) instead of ~300 at Python's 700; 0 leaves Python's default.
    The runtime applies it when it opens; past the bound the setting is refused."""
    threshold, runs = _young_collections(10_000)
    assert threshold == 10_000 and 18 <= runs <= 21
    threshold, runs = _young_collections(0)
    assert threshold == 700 and runs >= 250
    url = f"sqlite+aiosqlite:///{tmp_path / 'g.db'}"
    assert green_settings(url).gc_gen0_threshold == 10_000
    with pytest.raises(ValidationError, match="gc_gen0_threshold"):
        green_settings(url, gc_gen0_threshold=10_000_001)
    before = gc.get_threshold()
    try:
        async with open_runtime(green_settings(url, gc_gen0_threshold=12_345)):
            assert gc.get_threshold() == (12_345, *before[1:])
    finally:
        gc.set_threshold(*before)
