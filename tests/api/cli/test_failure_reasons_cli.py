"""`green-agent run`'s report names the most common failure reasons, with the assessment page's counts: a
buggy agent (tests.support.agents.BuggyExecutor: a missing write, a wrong argument, an extra write) run as a
user runs it, the block compared with what the page computes from the stored trials; --quiet prints none of
it. Agent text in a reason reaches the terminal as plain, inert text."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console

from api.cli.exit_codes import ExitCode
from api.cli.run import FAILURE_REASONS_SHOWN, failure_reason_lines, print_failure_reasons
from api.db.engine import create_engine
from api.db.repository import AssessmentRepository
from api.web.ui import views
from retail_domain import RetailData
from tests.api.cli.test_cli import green_agent
from tests.support.agents import BuggyExecutor, serve_executor

HEADING = "most common failure reasons (failed trials with each):"


def block(output: str) -> list[str]:
    """The report's failure-reason lines, from its heading to the first line that is not one of them."""
    lines = output.splitlines()
    start = lines.index(HEADING)
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith("  ")), len(lines))
    return lines[start:end]


async def page_counts(database_url: str, assessment_id: str) -> list[tuple[str, int]]:
    """What the assessment page lists under "most common failure reasons", over the stored trials."""
    engine = create_engine(database_url)
    try:
        summaries = await AssessmentRepository(engine).trial_summaries(assessment_id)
    finally:
        await engine.dispose()
    return views.common_failures(summaries)


async def test_run_prints_the_most_common_failure_reasons(retail_data: RetailData, tmp_path: Path) -> None:
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'buggy.db'}"
    bugs = {"0": "skip_write", "1": "wrong_payment", "5": "extra_write"}
    async with serve_executor(BuggyExecutor(retail_data, bugs)) as agent_url:
        run = ("run", "--agent-url", agent_url, "--task-ids", "0,1,5,7", "--trials", "2")
        code, output = await green_agent(
            *run, "--output", str(tmp_path / "run.json"), "--database-url", database_url
        )
        assert code == ExitCode.OK, output
        code, quiet = await green_agent(
            *run, "--output", str(tmp_path / "quiet.json"), "--database-url", database_url, "--quiet"
        )
        assert code == ExitCode.OK, quiet
    saved = json.loads((tmp_path / "run.json").read_text())
    assert block(output) == [
        HEADING,
        "  2  missing exchange_delivered_order_items",
        "  2  wrong payment_method_id to exchange_delivered_order_items",
        "  2  tool error in exchange_delivered_order_items",
        "  2  extra write modify_user_address",
    ]
    # The page's counts, in its order (ties in the order the trials were read, as the page has them).
    assert block(output)[1:] == [
        f"  {n}  {reason}" for reason, n in await page_counts(database_url, saved["id"])
    ]
    assert output.index("average reward") < output.index(HEADING) < output.index("report written to")

    # Nothing new for a script to trip on: --quiet prints the table without the block.
    assert "failure reasons" not in quiet and "average reward" in quiet


def test_the_block_shows_the_first_few_and_keeps_agent_text_inert() -> None:
    hostile = "wrong \x1b[31m[bold red]amount[/bold red]\u202e :smile: to \x1b]0;title\x07refund"
    common = [(hostile, 12), *((f"missing write_{i}", 3) for i in range(FAILURE_REASONS_SHOWN))]
    lines = failure_reason_lines(common)
    assert len(lines) == 1 + FAILURE_REASONS_SHOWN + 1 and lines[-1].startswith("  and more")
    assert lines[2] == "   3  missing write_0"  # counts right-aligned under the widest shown
    console = Console(file=io.StringIO(), record=True, width=200, force_terminal=True, color_system=None)
    print_failure_reasons(console, common)
    text = console.export_text(styles=False)
    assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text
    assert "12  wrong [31m[bold red]amount[/bold red] :smile: to ]0;title refund" in text  # shown, not run
    assert failure_reason_lines([]) == []  # no failed trial: no block at all
    assert failure_reason_lines([("x" * 1000, 1)])[1] == "  1  " + "x" * 159 + "…"
