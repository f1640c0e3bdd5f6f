"""A `green-agent run` beside a `green-agent serve` on the same SQLite file, all real subprocesses, with a
reference agent started from the command line: the run finishes by itself, and the serve never touches it
(each process keeps its trial queue in memory and resumes only what it runs; see `RunnerLease`)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import get_args

import httpx
import pytest

from api.cli.exit_codes import ExitCode
from api.cli.reference import REFERENCE_KINDS
from green_agent.reference_agents import ReferenceKind
from tests.api.cli.test_cli import green_agent
from tests.api.servers import GREEN_AGENT_BIN, REPO_ROOT, GreenProcess, free_port, poll

# The serve looks for unfinished assessments to resume every `worker_stalled_after_s`: make that often, so
# that it has many chances to take the run's assessment over while the run lasts.
FAST_REPAIR = {"GREEN_AGENT_WORKER_HEARTBEAT_S": "0.25", "GREEN_AGENT_WORKER_STALLED_AFTER_S": "1"}


@contextlib.asynccontextmanager
async def reference_agent_from_cli(kind: str, *args: str) -> AsyncIterator[str]:
    """`green-agent reference-agent KIND --port P` as a user starts it; yields the URL it prints."""
    port = free_port()
    process = await asyncio.create_subprocess_exec(
        str(GREEN_AGENT_BIN),
        *("reference-agent", kind, "--port", str(port), *args),
        cwd=REPO_ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        assert process.stdout is not None
        line = (await asyncio.wait_for(process.stdout.readline(), 60)).decode()
        assert f"reference agent {kind} serving at http://127.0.0.1:{port}/" in line, line
        yield f"http://127.0.0.1:{port}/"
    finally:
        if process.returncode is None:
            process.terminate()
        await asyncio.wait_for(process.wait(), 30)


async def test_run_beside_serve_on_one_sqlite_file_finishes_by_itself(tmp_path: Path) -> None:
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'shared.db'}"
    serve = GreenProcess(database_url, free_port(), tmp_path / "serve.log", env=FAST_REPAIR)
    async with reference_agent_from_cli("oracle", "--delay", "0.05") as agent_url:
        try:
            serve.start()
            await serve.wait_ready()
            started = time.monotonic()
            run = await asyncio.create_subprocess_exec(
                str(GREEN_AGENT_BIN),
                *("run", "--agent-url", agent_url, "--task-ids", "0,1,5", "--trials", "3"),
                *("--concurrency", "1"),
                *("--database-url", database_url, "--output", str(tmp_path / "report.json"), "--quiet"),
                cwd=REPO_ROOT,
                env={**os.environ, "COLUMNS": "160", **FAST_REPAIR},
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
            )
            output, _ = await asyncio.wait_for(run.communicate(), 300)
            took = time.monotonic() - started
            assert run.returncode == ExitCode.OK, output.decode()
            saved = json.loads((tmp_path / "report.json").read_text())
            assert saved["status"] == "completed" and saved["report"]["trials_total"] == 9
            # The serve had many rounds to take it over, and took none.
            assert took > 4 * float(FAST_REPAIR["GREEN_AGENT_WORKER_STALLED_AFTER_S"]), took
            assert saved["id"] not in serve.log_path.read_text()

            # The serve still runs its own assessments on the same file.
            async with httpx.AsyncClient(base_url=serve.url, timeout=30) as client:
                created = await client.post(
                    "/assessments", json={"agent_url": agent_url, "tasks": {"task_ids": ["0"]}}
                )
                assert created.status_code == 202, created.text
                path = f"/assessments/{created.json()['id']}"
                done = await poll(client, path, lambda b: b["status"] == "completed", timeout_s=120)
                assert done["progress"] == {"trials_done": 1, "trials_total": 1}
                # ... and shows the run's assessment, finished by the run.
                seen = (await client.get(f"/assessments/{saved['id']}")).json()
                assert seen["status"] == "completed"
        finally:
            serve.stop()


@pytest.mark.parametrize("kind", ["no_tools", "garbage"])
async def test_reference_agents_start_from_the_cli(kind: str) -> None:
    async with reference_agent_from_cli(kind) as url, httpx.AsyncClient(timeout=10) as client:
        card = (await client.get(f"{url}.well-known/agent-card.json")).json()
        assert card["name"] == f"reference-{kind}"


def test_the_cli_offers_every_reference_agent() -> None:
    assert get_args(ReferenceKind) == REFERENCE_KINDS


async def test_reference_agent_mistakes_are_one_line() -> None:
    status, output = await green_agent("reference-agent", "llm", "--port", "0")
    assert status == ExitCode.USAGE and output.strip().splitlines() == [
        "green-agent reference-agent: llm needs --model (and --base-url for a local one)"
    ]
    async with reference_agent_from_cli("no_tools") as url:
        port = url.rsplit(":", 1)[1].strip("/")
        status, output = await green_agent("reference-agent", "oracle", "--port", port)
    assert status == ExitCode.FAILED and len(output.strip().splitlines()) == 1
    assert f"cannot listen on 127.0.0.1:{port}" in output
