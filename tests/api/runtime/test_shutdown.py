"""Processes on PostgreSQL exit promptly: `serve` and `worker` within a few seconds of SIGTERM once their work
is done, `run` on its own as soon as its report is written. Real subprocesses on the local PostgreSQL; the
progress relay is busy (a progress stream follows the assessment), as it was when processes hung in its
LISTEN loop after their work (issue 18)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from pathlib import Path

import httpx

from tests.api.servers import GREEN_AGENT_BIN, REPO_ROOT, GreenProcess, free_port, poll

EXIT_WITHIN_S = 6.0
"""A few seconds: the worker's shutdown grace (5 s) applies only to running trials, and none runs here."""


async def seconds_to_exit(process: subprocess.Popen[bytes], limit_s: float = 60) -> float:
    """Wait (without blocking the loop, which serves the white agent) until the process exits."""
    started = time.monotonic()
    while process.poll() is None:
        if time.monotonic() - started > limit_s:
            process.kill()
            process.wait()
            return float("inf")
        await asyncio.sleep(0.05)
    return time.monotonic() - started


async def run_followed(client: httpx.AsyncClient, oracle_url: str) -> dict[str, object]:
    """Create an assessment, follow its progress stream to the end, return its final state."""
    config = {"agent_url": oracle_url, "tasks": {"num_tasks": 10}, "trials": 2, "concurrency": 8}
    assessment_id = (await client.post("/assessments", json=config)).json()["id"]
    async with client.stream("GET", f"/assessments/{assessment_id}/events") as stream:
        async for line in stream.aiter_lines():
            if line.startswith("data:") and '"completed"' in line:
                break
    return await poll(client, f"/assessments/{assessment_id}", lambda b: b["status"] != "running")


async def test_serve_exits_within_seconds_of_sigterm_after_an_assessment(
    pg_database: str, oracle_url: str, tmp_path: Path
) -> None:
    serve = GreenProcess(pg_database, free_port(), tmp_path / "serve.log")
    try:
        serve.start()
        await serve.wait_ready()
        async with httpx.AsyncClient(base_url=serve.url, timeout=60) as client:
            final = await run_followed(client, oracle_url)
        assert final["status"] == "completed"
        assert serve.process is not None
        serve.process.send_signal(signal.SIGTERM)
        took = await seconds_to_exit(serve.process)
    finally:
        serve.stop()
    assert took < EXIT_WITHIN_S, f"serve took {took:.1f} s to exit:\n{serve.log_path.read_text()[-3000:]}"


async def test_worker_exits_within_seconds_of_sigterm_after_its_trials(
    pg_database: str, oracle_url: str, tmp_path: Path
) -> None:
    api = GreenProcess(
        pg_database, free_port(), tmp_path / "api.log", env={"GREEN_AGENT_WORKER_ENABLED": "false"}
    )
    worker = GreenProcess(pg_database, 0, tmp_path / "worker.log", command=["worker"])
    try:
        api.start()
        await api.wait_ready()
        worker.start()
        async with httpx.AsyncClient(base_url=api.url, timeout=60) as client:
            final = await run_followed(client, oracle_url)
        assert final["status"] == "completed"
        assert worker.process is not None and api.process is not None
        worker.process.send_signal(signal.SIGTERM)
        api.process.send_signal(signal.SIGTERM)
        took = [await seconds_to_exit(worker.process), await seconds_to_exit(api.process)]
    finally:
        worker.stop()
        api.stop()
    assert max(took) < EXIT_WITHIN_S, f"worker / API took {took} s to exit"


async def test_run_exits_on_its_own_once_its_report_is_written(
    pg_database: str, oracle_url: str, tmp_path: Path
) -> None:
    report = tmp_path / "report.json"
    command = [str(GREEN_AGENT_BIN), "run", "--agent-url", oracle_url, "--num-tasks", "10", "--trials", "2"]
    command += ["--user-model", "scripted", "--quiet", "--output", str(report)]
    env = {**os.environ, "DATABASE_URL": pg_database}
    with (tmp_path / "run.log").open("wb") as log:
        # A real process, started once; its exit is then awaited without blocking the loop.
        process = subprocess.Popen(  # noqa: ASYNC220
            command, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
        )
    try:
        for _ in range(2400):  # up to 2 minutes for the assessment itself
            if report.exists() or process.poll() is not None:
                break
            await asyncio.sleep(0.05)
        assert report.exists(), (tmp_path / "run.log").read_text()
        took = await seconds_to_exit(process)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert took < EXIT_WITHIN_S, f"run took {took:.1f} s to exit after writing its report"
    assert process.returncode in (0, 3)  # 3: complete but for the NL assertions, which nobody judges here
