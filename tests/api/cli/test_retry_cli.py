"""`green-agent retry ID` as a user runs it (real subprocesses, SQLite): a `run` stopped with Ctrl-C reports
what was planned ("6 x 1", "2 / 6"), ends by printing the retry command, and `retry` continues the same
assessment to a complete report with the same exit codes as `run`; nothing left to retry, or no such
assessment, is exit 1 with one line."""

from __future__ import annotations

import json
import re
from pathlib import Path

from api.cli.exit_codes import ExitCode
from tests.api.cli.test_cli import green_agent, interrupted_run

TASKS = "0,1,5,6,7,8"
"""Scored on the DB alone: complete without a judge."""


async def test_a_cancelled_run_is_continued_by_retry(slow_oracle_url: str, tmp_path: Path) -> None:
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'run.db'}"
    code, _, output = await interrupted_run(
        database_url,
        *("--agent-url", slow_oracle_url, "--task-ids", TASKS, "--concurrency", "1"),
        *("--output", str(tmp_path / "run.json")),
    )
    assert code == ExitCode.CANCELLED, output
    saved = json.loads((tmp_path / "run.json").read_text())
    assessment_id, done = saved["id"], saved["report"]["trials_total"]
    assert 1 <= done < 6
    assert re.search(r"tasks x trials\s*│\s*6 x 1", output), output  # what was planned, not what ran
    assert re.search(rf"trials scored / planned\s*│\s*{done} / 6", output), output
    assert f"green-agent retry {assessment_id}" in output
    assert "Traceback" not in output

    code, output = await green_agent(
        "retry", assessment_id, "--output", str(tmp_path / "retry.json"), "--database-url", database_url
    )
    assert code == ExitCode.OK, output
    assert f"attempt 2 of assessment {assessment_id}: run again: {6 - done} never run" in output
    assert "green-agent retry" not in output.split("report written to")[1]  # nothing left: no hint
    final = json.loads((tmp_path / "retry.json").read_text())
    assert final["id"] == assessment_id and final["status"] == "completed"
    assert final["report"]["complete"] and final["report"]["trials_total"] == 6
    assert [(a["number"], a["status"]) for a in final["attempts"]] == [(1, "cancelled"), (2, "completed")]

    code, output = await green_agent("retry", assessment_id, "--database-url", database_url, "--quiet")
    assert code == ExitCode.FAILED and "cannot retry:" in output and "nothing left to retry" in output
    code, output = await green_agent("retry", "no-such-id", "--database-url", database_url, "--quiet")
    assert code == ExitCode.FAILED and "no assessment with id no-such-id" in output


async def test_the_progress_bar_says_what_the_run_waits_for() -> None:
    from rich.progress import Progress

    from api.cli.run import _show_progress
    from api.runtime.events import Lagged, ProviderWaiting, Subscription

    subscription = Subscription()
    shown = "waiting for gpt-4.1 at api.openai.com: down since 14:02:11"
    with Progress(disable=True) as progress:
        bar = progress.add_task("trials", total=4, mean="-", waiting="")
        subscription.offer(ProviderWaiting(waiting_for=[shown]))
        subscription.offer(Lagged())  # ends the subscription
        await _show_progress(subscription, progress, bar)
        assert progress.tasks[0].fields["waiting"] == shown
        subscription = Subscription()
        subscription.offer(ProviderWaiting(waiting_for=[]))
        subscription.offer(Lagged())
        await _show_progress(subscription, progress, bar)
        assert progress.tasks[0].fields["waiting"] == ""
