"""The `green-agent` command as a user runs it (real subprocesses): db upgrade on both backends, run against
the oracle white agent with the report written as JSON, the zero-configuration demo, and replay."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import sqlalchemy as sa

from api.db.engine import create_engine
from tests.api.servers import GREEN_AGENT_BIN, REPO_ROOT


async def green_agent(
    *args: str, env: dict[str, str] | None = None, timeout_s: float = 240
) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        str(GREEN_AGENT_BIN),
        *args,
        cwd=REPO_ROOT,
        env={**os.environ, "COLUMNS": "160", **(env or {})},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await asyncio.wait_for(process.communicate(), timeout_s)
    return process.returncode or 0, output.decode()


async def test_db_upgrade(database_url: str) -> None:
    code, output = await green_agent("db", "upgrade", "--database-url", database_url)
    assert code == 0, output
    assert "up to date" in output
    engine = create_engine(database_url)
    try:
        async with engine.connect() as connection:
            tables = await connection.run_sync(lambda c: set(sa.inspect(c).get_table_names()))
    finally:
        await engine.dispose()
    assert {
        "assessments",
        "trials",
        "transcript_messages",
        "nl_verdicts",
        "green_agent_schema_version",
    } <= tables


async def test_run_writes_report(oracle_url: str, tmp_path: Path) -> None:
    output_path = tmp_path / "report.json"
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'run.db'}"
    code, output = await green_agent(
        "run",
        "--agent-url",
        oracle_url,
        "--task-ids",
        "0,1,2,3",
        "--trials",
        "2",
        "--output",
        str(output_path),
        "--database-url",
        database_url,
    )
    assert code == 0, output
    saved = json.loads(output_path.read_text())
    assert saved["status"] == "completed" and saved["source"] == "cli"
    assert saved["report"]["trials_total"] == 8 and saved["report"]["avg_reward"] == 1.0
    assert "pass^2" in output and "average reward" in output  # the printed table


async def test_run_refuses_bad_options(oracle_url: str, tmp_path: Path) -> None:
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'run.db'}"
    code, output = await green_agent(
        "run", "--agent-url", oracle_url, "--task-ids", "nope", "--database-url", database_url
    )
    assert code == 2 and "unknown task ids" in output


async def test_demo_runs_with_zero_configuration(tmp_path: Path) -> None:
    # A scrubbed environment, as on a fresh machine; the demo must not need anything set.
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "COLUMNS": "160"}
    process = await asyncio.create_subprocess_exec(
        str(GREEN_AGENT_BIN),
        "demo",
        "--num-tasks",
        "10",
        "--output",
        str(tmp_path / "demo.json"),
        cwd=tmp_path,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    raw, _ = await asyncio.wait_for(process.communicate(), 240)
    output = raw.decode()
    assert process.returncode == 0, output
    report = json.loads((tmp_path / "demo.json").read_text())["report"]
    assert report["trials_total"] == 10 and report["avg_reward"] == 1.0
    assert "demo finished" in output
    # The demo runs on the embedded default database, so a later `serve` shows it over REST.
    assert (tmp_path / "green_agent.db").is_file()


async def test_replay_delegates_to_the_domain_tool() -> None:
    code, output = await green_agent("replay", "--task", "0", "--gold")
    assert code == 0, output
    assert "matches gold" in output


def test_entry_point_is_installed() -> None:
    assert GREEN_AGENT_BIN.exists(), f"green-agent is not installed next to {sys.executable}"


async def test_worker_and_api_only_need_postgresql(tmp_path: Path) -> None:
    """With SQLite the queue lives in the serving process: a separate worker or an API without one would
    leave every trial waiting forever, so both are refused with a message saying why."""
    sqlite = f"sqlite+aiosqlite:///{tmp_path / 'x.db'}"
    code, output = await green_agent("worker", "--database-url", sqlite, timeout_s=60)
    assert code == 2 and "needs PostgreSQL" in output
    code, output = await green_agent("serve", "--no-worker", "--database-url", sqlite, timeout_s=60)
    assert code == 2 and "needs PostgreSQL" in output
