"""How fast the web UI's pages answer with 1,000 assessments stored and a trial of 200 messages.

Seeds a fresh SQLite database through the repository (1,000 completed assessments with 114-task reports, one
of them with 114 x 4 stored trials, one trial of 200 messages whose DB differs from gold, so its page
replays the calls), serves the real app with uvicorn on loopback, and times each page over HTTP.

    .venv/bin/python -m bench.ui_pages                     # 1,000 assessments, 20 requests per page
    .venv/bin/python -m bench.ui_pages --assessments 200 --requests 5     # quick look

Prints a table (median and slowest time per page, response size); asserts nothing about time.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from api.db.engine import create_engine
from api.db.migrate import upgrade
from api.db.repository import COMPLETED, AssessmentRepository, NewAssessment
from api.settings import Settings
from api.web.app import create_app
from bench.tables import print_table
from green_agent.core.models import (
    AssessmentReport,
    Failure,
    Signal,
    ToolCallRecord,
    TranscriptMessage,
    TrialResult,
)
from green_agent.reference_agents import serve_app
from retail_domain import RetailData, load_retail_data

AGENTS = 10
TRIALS = 4
LONG_TRIAL_MESSAGES = 200


def _report(data: RetailData, quality: float) -> AssessmentReport:
    tasks = list(data.tasks)
    return AssessmentReport(
        num_tasks=len(tasks),
        num_trials=TRIALS,
        trials_total=len(tasks) * TRIALS,
        trials_scored=len(tasks) * TRIALS,
        complete=True,
        avg_reward=quality,
        pass_hat_k={k: quality**k for k in range(1, TRIALS + 1)},
        signal_rates={"DB_STATE_MATCH": quality},
        termination_counts={"user_stop": len(tasks) * TRIALS},
        task_rewards={t: quality for t in tasks},
        time_used_s=60.0,
    )


def _trial(task_id: str, trial: int, messages: int, passed: bool) -> TrialResult:
    now = datetime.now(UTC)
    transcript = [TranscriptMessage(index=0, role="assistant", content="Hi! How can I help you today?")]
    while len(transcript) < messages:
        index = len(transcript)
        call = ToolCallRecord(id=f"c{index}", name="get_order_details", arguments={"order_id": "#W2378156"})
        transcript.append(TranscriptMessage(index=index, role="assistant", tool_calls=[call], timestamp=now))
        transcript.append(
            TranscriptMessage(
                index=index + 1, role="tool", content='{"order_id": "#W2378156"}', tool_call_id=call.id
            )
        )
    return TrialResult(
        task_id=task_id,
        trial=trial,
        seed=trial,
        termination_reason="user_stop",
        reward=1.0 if passed else 0.0,
        is_successful=passed,
        signals=[Signal(name="DB_STATE_MATCH", passed=passed, counts=True, detail="")],
        transcript=transcript[:messages],
        db_expected_hash="gold",
        db_actual_hash="gold" if passed else "other",
        # What the engine stores with a failed trial (green_agent/scoring/failures.py): the lists count these.
        failures=[]
        if passed
        else [
            Failure(kind="missing_action", action="cancel_pending_order", detail="never called"),
            Failure(kind="tool_errors", action="get_order_details", got="Error", detail="an error"),
        ],
        steps=messages // 2,
        started_at=now - timedelta(seconds=30),
        finished_at=now,
    )


async def seed(database_url: str, data: RetailData, assessments: int) -> tuple[str, str]:
    """Store the assessments; return the one with trials and another to compare it with."""
    engine = create_engine(database_url)
    try:
        await upgrade(engine)
        repository = AssessmentRepository(engine)
        ids = []
        for i in range(assessments):
            record, _ = await repository.create(
                NewAssessment(
                    config={"agent_url": f"http://agent-{i % AGENTS}.example", "trials": TRIALS},
                    agent_url=f"http://agent-{i % AGENTS}.example",
                    trials_total=len(data.tasks) * TRIALS,
                    source="rest",
                    warnings=[],
                )
            )
            await repository.finish(record.id, COMPLETED, report=_report(data, (i % 97) / 100))
            ids.append(record.id)
        detailed = ids[-1]
        for n, task_id in enumerate(data.tasks):
            for trial in range(TRIALS):
                long = (n, trial) == (5, 0)
                result = _trial(
                    task_id,
                    trial,
                    LONG_TRIAL_MESSAGES if long else 14,
                    passed=(n + trial) % 3 > 0 and not long,
                )
                await repository.save_trial(detailed, result)
        return detailed, ids[-2]
    finally:
        await engine.dispose()


async def measure(assessments: int, requests: int) -> None:
    data = await asyncio.to_thread(load_retail_data)
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite+aiosqlite:///{Path(folder) / 'ui.db'}"
        started = time.perf_counter()
        detailed, other = await seed(url, data, assessments)
        print(f"seeded {assessments} assessments in {time.perf_counter() - started:.1f} s", flush=True)
        long_task = list(data.tasks)[5]
        failed_task = list(data.tasks)[6]  # (6 + 0) % 3 == 0: failed
        pages = {
            "list, page 1": "/ui",
            "list, page 20": "/ui?page=20",
            "list, one agent": "/ui?agent=http://agent-3.example",
            "leaderboard": "/ui/leaderboard?partial=true",
            f"assessment ({len(data.tasks)} x {TRIALS} grid)": f"/ui/assessments/{detailed}",
            f"trial of {LONG_TRIAL_MESSAGES} messages (with DB replay)": (
                f"/ui/assessments/{detailed}/trials/{long_task}/0"
            ),
            "compare": f"/ui/compare?id={other}&id={detailed}",
            "assessment, filtered by kind": f"/ui/assessments/{detailed}?kind=missing_action",
            "failed trial, 14 messages (DB replay)": f"/ui/assessments/{detailed}/trials/{failed_task}/0",
            f"trials CSV ({len(data.tasks) * TRIALS} rows)": f"/ui/assessments/{detailed}/trials.csv",
            "new assessment (the form)": "/ui/assessments/new",
        }
        rows = []
        settings = Settings(_env_file=None, database_url=url, resume_on_start=False)
        async with (
            serve_app(lambda _: create_app(settings)) as base,
            httpx.AsyncClient(base_url=base, timeout=60) as client,
        ):
            for name, path in pages.items():
                times, size = [], 0
                for _ in range(requests + 1):  # the first request warms caches and is not counted
                    start = time.perf_counter()
                    response = await client.get(path)
                    times.append(time.perf_counter() - start)
                    response.raise_for_status()
                    size = len(response.content)
                times = times[1:]
                rows.append(
                    [
                        name,
                        f"{statistics.median(times) * 1000:.0f}",
                        f"{max(times) * 1000:.0f}",
                        f"{size / 1024:.0f}",
                    ]
                )
    print_table(
        f"Web UI pages, {assessments} assessments stored (SQLite), {requests} requests each",
        ["page", "median ms", "slowest ms", "KiB"],
        rows,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--assessments", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=20)
    args = parser.parse_args(argv)
    asyncio.run(measure(args.assessments, args.requests))
    return 0


if __name__ == "__main__":
    sys.exit(main())
