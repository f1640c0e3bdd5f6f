"""Cancelling is an expected outcome: a cancelled assessment leaves no traceback in the logs of the processes
that ran it (real `green-agent serve` subprocesses; on PostgreSQL also a separate `worker`), only
procrastinate's one line per stopped job. Issue 27 counted three tracebacks in serve and two in the worker per
cancel."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

from tests.api.servers import GreenProcess, free_port, poll


async def test_a_cancel_logs_no_traceback(database_url: str, slow_oracle_url: str, tmp_path: Path) -> None:
    port = free_port()
    serve = ["serve", "--host", "127.0.0.1", "--port", str(port)]
    processes = [GreenProcess(database_url, port, tmp_path / "serve.log")]
    if database_url.startswith("postgresql"):
        processes[0].command = [*serve, "--no-worker"]
        processes.append(GreenProcess(database_url, 0, tmp_path / "worker.log", command=["worker"]))
    body = {"agent_url": slow_oracle_url, "tasks": {"num_tasks": 12}, "concurrency": 4}
    try:
        for process in processes:
            process.start()
        await processes[0].wait_ready()
        async with httpx.AsyncClient(base_url=processes[0].url, timeout=30) as client:
            assessment_id = (await client.post("/assessments", json=body)).json()["id"]
            path = f"/assessments/{assessment_id}"
            await poll(client, path, lambda b: b["progress"]["trials_done"] >= 2, timeout_s=120)
            cancelled = await client.post(f"{path}/cancel")
            assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
            await asyncio.sleep(2)  # the running jobs stop and say so
    finally:
        for process in processes:
            process.stop()
    logs = {process.log_path.name: process.log_path.read_text() for process in processes}
    assert any("ended with status: Aborted" in log for log in logs.values()), logs  # the jobs did stop
    assert all("Traceback" not in log for log in logs.values()), logs
