"""The `green-agent` command as a user runs it (real subprocesses): db upgrade on both backends, run against
the oracle white agent with the report written as JSON, each exit code, the zero-configuration demo, and
replay."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import sys
from datetime import UTC, datetime
from pathlib import Path

import sqlalchemy as sa
from alembic.script import ScriptDirectory
from rich.console import Console

from api.cli.exit_codes import ExitCode
from api.cli.run import report_table
from api.db.engine import create_engine
from api.db.migrate import alembic_config, upgrade
from api.db.repository import AssessmentRecord
from green_agent.core.models import AssessmentReport
from green_agent.reference_agents import serve_app
from green_agent.reference_agents.hostile import HostileAgent
from retail_domain import RetailData
from tests.api.servers import GREEN_AGENT_BIN, REPO_ROOT
from tests.engine.test_uncertainty import STORED_V2


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
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    code, output = await green_agent("db", "upgrade", "--database-url", database_url)
    assert code == 0, output
    assert output.strip().endswith(f": created the tables at revision {head}"), output
    code, output = await green_agent("db", "upgrade", "--database-url", database_url)
    assert code == 0 and output.strip().endswith(f": already at revision {head}"), output
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


async def test_db_upgrade_of_an_older_schema_says_from_what_to_what(database_url: str) -> None:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    engine = create_engine(database_url)
    try:
        assert (await upgrade(engine, "0002")).summary() == "created the tables at revision 0002"
    finally:
        await engine.dispose()
    code, output = await green_agent("db", "upgrade", "--database-url", database_url)
    assert code == 0 and output.strip().endswith(f": upgraded from revision 0002 to {head}"), output


async def test_run_writes_report(oracle_url: str, tmp_path: Path) -> None:
    output_path = tmp_path / "report.json"
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'run.db'}"
    code, output = await green_agent(
        "run",
        "--agent-url",
        oracle_url,
        "--task-ids",
        "0,1,5",
        "--trials",
        "2",
        "--output",
        str(output_path),
        "--database-url",
        database_url,
    )
    assert code == ExitCode.OK, output  # completed, and complete: none of these tasks needs the judge
    saved = json.loads(output_path.read_text())
    assert saved["status"] == "completed" and saved["source"] == "cli"
    assert saved["report"]["trials_total"] == 6 and saved["report"]["avg_reward"] == 1.0
    assert saved["report"]["complete"] is True
    assert "pass^2" in output and "average reward" in output  # the printed table
    assert "1.0000 of 6 trials" in output  # rates come with how many trials they cover
    assert "PARTIAL" not in output
    # `run` cannot know the agent is an oracle: pairing it with the scripted customer is warned about.
    assert "warning: the customer is the scripted one" in " ".join(output.split())


async def test_run_exits_partial_failed_and_cancelled_with_their_own_codes(
    oracle_url: str, slow_oracle_url: str, tmp_path: Path
) -> None:
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'run.db'}"
    common = ("--database-url", database_url, "--quiet")

    # Task 2 needs the NL judge and none is configured: the report is partial, and `run` says so by its code.
    code, output = await green_agent(
        "run", "--agent-url", oracle_url, "--task-ids", "0,2", "--output", str(tmp_path / "p.json"), *common
    )
    assert code == ExitCode.PARTIAL, output
    assert "PARTIAL:" in output and "1 trial not judged" in output
    assert json.loads((tmp_path / "p.json").read_text())["report"]["complete"] is False

    code, output = await green_agent(
        "run", "--agent-url", "http://127.0.0.1:9/", "--output", str(tmp_path / "f.json"), *common
    )
    assert code == ExitCode.FAILED, output
    assert "could not be reached" in output
    assert json.loads((tmp_path / "f.json").read_text())["status"] == "failed"

    # Ctrl-C: the assessment is cancelled, the trials that finished are reported, and the code says so.
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'cancelled.db'}"
    code, started, output = await interrupted_run(
        database_url,
        *("--agent-url", slow_oracle_url, "--trials", "4", "--concurrency", "2"),
        *("--output", str(tmp_path / "c.json")),
    )
    assert "trials of" in started, started
    assert code == ExitCode.CANCELLED, output
    saved = json.loads((tmp_path / "c.json").read_text())
    assert saved["status"] == "cancelled"
    report = saved["report"]
    assert report["complete"] is False and 0 < report["partial_reasons"]["not_run"] < 456
    assert report["trials_total"] + report["partial_reasons"]["not_run"] == 456
    assert "PARTIAL:" in output and "not run" in output


async def interrupted_run(database_url: str, *args: str) -> tuple[int, str, str]:
    """`green-agent run ARGS --database-url URL --quiet` in a subprocess, sent SIGINT (Ctrl-C) once a trial is
    stored: its exit code, its first line and its whole output."""
    process = await asyncio.create_subprocess_exec(
        str(GREEN_AGENT_BIN),
        *("run", *args, "--database-url", database_url, "--quiet"),
        cwd=REPO_ROOT,
        env={**os.environ, "COLUMNS": "160"},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    assert process.stdout is not None
    started = await asyncio.wait_for(process.stdout.readline(), 60)
    await _until_a_trial_is_stored(database_url)
    process.send_signal(signal.SIGINT)
    rest, _ = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None  # communicate() waited for the exit
    return process.returncode, started.decode(), (started + rest).decode()


async def _until_a_trial_is_stored(database_url: str, timeout_s: float = 60) -> None:
    engine = create_engine(database_url)
    try:
        async with asyncio.timeout(timeout_s):
            while True:
                with contextlib.suppress(sa.exc.OperationalError):  # the run has not made its tables yet
                    async with engine.connect() as connection:
                        if (await connection.execute(sa.text("SELECT count(*) FROM trials"))).scalar():
                            return
                await asyncio.sleep(0.1)
    finally:
        await engine.dispose()


async def test_help_documents_the_exit_codes() -> None:
    for command in ("run", "demo"):
        code, output = await green_agent(command, "--help")
        assert code == 0, output
        assert "exit codes:" in output and "3  partial" in output and "4  cancelled" in output


async def test_run_refuses_bad_options(oracle_url: str, tmp_path: Path) -> None:
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'run.db'}"
    code, output = await green_agent(
        "run", "--agent-url", oracle_url, "--task-ids", "nope", "--database-url", database_url
    )
    assert code == ExitCode.USAGE and "unknown task ids" in output


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
    # The demo has no judge by design: its report is partial (not judged), it says so, and it exits 0 for
    # that reason alone, so that `make demo` works as the README's first command.
    assert process.returncode == ExitCode.OK, output
    report = json.loads((tmp_path / "demo.json").read_text())["report"]
    assert report["trials_total"] == 10 and report["avg_reward"] == 1.0
    assert report["complete"] is False and set(report["partial_reasons"]) == {"not_judged"}
    assert "PARTIAL (expected in the demo, which has no LLM judge)" in output
    assert "demo finished" in output
    assert output.rstrip().splitlines()[-2].startswith("next: see it in the web UI")  # the last words
    assert "the customer is the scripted one" not in output  # the built-in oracle is the one it suits
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


async def test_a_fix_and_check_loop_is_run_failed_from_then_compare(
    retail_data: RetailData, oracle_url: str, tmp_path: Path
) -> None:
    """An agent that gives up on tasks 1 and 6; `run --failed-from` runs those two again against the fixed
    agent (the oracle), and `compare` says by how much, with its uncertainty."""
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'loop.db'}"
    common = ("--database-url", database_url, "--quiet")
    async with serve_app(HostileAgent(retail_data, {"1": [], "6": []}).app) as giving_up:
        code, output = await green_agent(
            "run", "--agent-url", giving_up, "--task-ids", "0,1,5,6,7", "--trials", "2",
            "--output", str(tmp_path / "first.json"), *common,
        )  # fmt: skip
    assert code == ExitCode.OK, output
    first = json.loads((tmp_path / "first.json").read_text())["id"]
    # mean rewards 1, 0, 1, 0, 1: 0.6, stderr 0.244949, 1.96 x stderr = 0.480; 2.8 x sqrt(2) x it = 0.970
    assert re.search(r"average reward\s*│\s*0\.600 \+- 0\.480", output), output
    assert re.search(r"pass\^2\s*│\s*0\.600 \+- 0\.480", output), output
    assert "95% intervals over the 5 tasks scored" in output and "0.970 (80% power" in output

    code, output = await green_agent(
        "run", "--failed-from", first, "--agent-url", oracle_url, "--output", str(tmp_path / "re.json"),
        *common,
    )  # fmt: skip
    assert code == ExitCode.OK, output
    rerun = json.loads((tmp_path / "re.json").read_text())
    assert rerun["config"]["tasks"]["task_ids"] == ["1", "6"] and rerun["config"]["trials"] == 2
    assert f"rerunning the 2 task(s) of {first} not solved in every trial: 1, 6" in output
    assert f"next: green-agent compare {rerun['id']} {first}" in output

    code, output = await green_agent("compare", rerun["id"], first, "--database-url", database_url)
    assert code == ExitCode.OK, output
    assert "A is ahead of B by 1.000 +- 0.000 in mean reward (p < 0.001, 2 tasks)" in output
    assert "a real difference" in output and "flipped: 1, 6" in output
    code, output = await green_agent("compare", first, rerun["id"], "--json", "--database-url", database_url)
    assert code == ExitCode.OK, output
    compared = json.loads(output)
    assert compared["difference"] == -1.0 and compared["tasks_compared"] == 2 and compared["b"] == rerun["id"]

    code, output = await green_agent("compare", first, "nope", "--database-url", database_url)
    assert code == ExitCode.FAILED and "cannot compare: no assessment with id nope" in output
    code, output = await green_agent("run", "--failed-from", rerun["id"], *common)
    assert code == ExitCode.FAILED and "solved all its 2 tasks in every trial" in output
    code, output = await green_agent("run", "--failed-from", first, "--task-ids", "1", *common)
    assert code == ExitCode.USAGE and "leave out --task-ids" in output
    code, output = await green_agent("run", "--trials", "2", *common)
    assert code == ExitCode.USAGE and "--agent-url is required (or --failed-from ID)" in output


def test_a_report_stored_before_error_bars_still_prints() -> None:
    """A version-2 report (no `stats`) prints its bare numbers and says why there are no error bars."""
    report = AssessmentReport.model_validate(STORED_V2)
    record = AssessmentRecord(
        id="old",
        status="completed",
        agent_url="http://agent",
        config={},
        source="rest",
        idempotency_key=None,
        a2a_task_id=None,
        a2a_context_id=None,
        warnings=[],
        trials_total=3,
        trials_done=3,
        run_seconds=2.5,
        report=report,
        error=None,
        created_at=datetime.now(UTC),
        started_at=None,
        finished_at=None,
    )
    console = Console(record=True, width=160)
    console.print(report_table(record, report))
    text = console.export_text()
    assert "0.5000 (no error bars: stored before schema version 3)" in text and "pass^1" in text
