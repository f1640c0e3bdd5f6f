"""The in-process assessment behind `green-agent run` (also `run --failed-from ID`) and `green-agent demo`: a
rich progress bar while it runs, then the report written as JSON and printed as a table, each number with its
error bar. It goes through the same service as the server, so the assessment is stored in the database like
any other. Unless --quiet, the table is followed by the most common failure reasons, counted as the assessment
page counts them. `green-agent compare A B` prints the paired comparison of two stored assessments."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any, Literal

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from api.cli.exit_codes import ExitCode, exit_code
from api.db.repository import COMPLETED, AssessmentRecord, Attempt
from api.runtime.events import ProviderWaiting, Subscription, TrialDone
from api.runtime.runtime import Runtime, open_runtime
from api.runtime.service import (
    AssessmentNotFound,
    NotComparable,
    NothingToRerun,
    NothingToRetry,
    retry_would_help,
)
from api.security.auth import operator_principal
from api.security.quotas import QuotaExceeded
from api.settings import Settings
from api.web.schemas import AssessmentPublic
from api.web.ui import views
from domain_kit import DomainData
from green_agent.config import SCRIPTED_USER, AssessmentConfig, ConfigError, LLMEndpoint, TaskSelection
from green_agent.core.limits import display_name
from green_agent.core.models import SIGNAL_NL, AssessmentReport
from green_agent.domains import DEFAULT_DOMAIN
from green_agent.scoring.metrics import NOT_JUDGED
from green_agent.scoring.uncertainty import Comparison, Difference, format_p, plus_minus


def _rate(report: AssessmentReport, name: str) -> str:
    """A rate with how many trials (or assertions) it covers, e.g. `0.9500 of 40 trials`."""
    rate = report.signal_rates.get(name)
    if name not in report.signal_applicable:  # a schema-1 report: its rates carry no counts
        return "n/a" if rate is None else f"{rate:.4f}"
    unit = "assertions" if name == SIGNAL_NL else "trials"
    count = report.signal_applicable[name]
    return f"n/a ({count} {unit})" if rate is None else f"{rate:.4f} of {count} {unit}"


def report_table(record: AssessmentRecord, report: AssessmentReport) -> Table:
    partial = "" if report.complete else ", PARTIAL"
    table = Table(title=f"Assessment {record.id} ({record.status}{partial})", show_header=True)
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_row("agent", record.agent_url)
    table.add_row("domain", record.domain)
    table.add_row(
        "complete", "yes" if report.complete else f"[bold yellow]no: {report.partial_summary()}[/bold yellow]"
    )
    # What was planned, not only what ran: a run cancelled after 5 of 12 trials says "12 x 1" and "5 / 12".
    tasks = report.tasks_planned if report.tasks_planned is not None else report.num_tasks
    planned = report.trials_planned if report.trials_planned is not None else report.trials_total
    table.add_row("tasks x trials", f"{tasks} x {report.num_trials}")
    table.add_row("trials scored / planned", f"{report.trials_scored} / {planned}")
    if report.trials_total != planned:
        table.add_row("trials run", f"{report.trials_total} of {planned}")
    _add_headline(table, report)
    for name in report.signal_rates:
        table.add_row(f"rate {name}", _rate(report, name))
    for reason, count in sorted(report.termination_counts.items()):
        table.add_row(f"ended by {reason}", str(count))
    for reason, count in sorted(report.excluded.items()):
        if count:
            table.add_row(f"excluded ({reason})", str(count))
    table.add_row("time used", f"{report.time_used_s:.1f} s")
    usage = report.usage
    if usage is not None:
        for party, used in (
            ("user simulator", usage.user),
            ("judge", usage.judge),
            ("agent (reported)", usage.agent),
        ):
            if used is not None:
                cost = "cost unknown" if used.cost_usd is None else f"{used.cost_usd:.4f} USD"
                table.add_row(
                    f"{party} tokens", f"{used.prompt_tokens} in / {used.completion_tokens} out, {cost}"
                )
    return table


def _add_headline(table: Table, report: AssessmentReport) -> None:
    """Average reward and pass^k, as "0.817 +- 0.081" (95% interval over tasks) when the report has error
    bars; a report stored before them shows the bare numbers and says so."""
    stats = report.stats
    if stats is None:
        avg = f"{report.avg_reward:.4f}" if report.avg_reward is not None else "n/a"
        table.add_row("average reward", f"{avg} (no error bars: stored before schema version 3)")
        for k, value in sorted(report.pass_hat_k.items()):
            table.add_row(f"pass^{k}", f"{value:.4f}")
        return
    table.add_row("average reward", plus_minus(stats.avg_reward))
    for k, estimate in sorted(stats.pass_hat_k.items()):
        table.add_row(f"pass^{k}", plus_minus(estimate))
    if stats.avg_reward is not None and stats.avg_reward.stderr is None:
        table.add_row("error bars", "none: one task scored (no spread to measure)")
    else:
        table.add_row("error bars", f"95% intervals over the {stats.n_tasks} tasks scored")
    if stats.min_detectable_difference is not None:
        table.add_row(
            "detectable difference", f"{stats.min_detectable_difference:.3f} (80% power, vs a rerun)"
        )
    if stats.mixed_tasks is not None:
        table.add_row("tasks with mixed outcomes", str(len(stats.mixed_tasks)))


FAILURE_REASONS_SHOWN = 5
"""Reasons the report prints: the ones to fix first (the assessment page lists ten, its CSV every trial's)."""
REASON_CHARS = 160
"""A reason's length on the terminal, at most (it may quote an argument name or an error line)."""


def failure_reason_lines(common: Sequence[tuple[str, int]], shown: int = FAILURE_REASONS_SHOWN) -> list[str]:
    """The report's "most common failure reasons" block as plain lines, from `views.common_failures` (the
    assessment page's counts: failed trials per reason, most frequent first): the first `shown` with their
    counts, then a line saying there are more; nothing when no trial failed. A reason may carry the agent's
    text, so control and format characters are dropped (no escape sequence reaches the terminal); the caller
    prints the lines without rich markup."""
    if not common:
        return []
    width = len(str(max(count for _, count in common[:shown])))
    lines = ["most common failure reasons (failed trials with each):"]
    lines += [
        f"  {count:>{width}}  {display_name(reason, REASON_CHARS) or '?'}" for reason, count in common[:shown]
    ]
    if len(common) > shown:
        lines.append("  and more: the assessment page and its trials CSV list them")
    return lines


def print_failure_reasons(console: Console, common: Sequence[tuple[str, int]]) -> None:
    """The block as plain text: rich must not read an agent's "[...]" as markup."""
    for line in failure_reason_lines(common):
        console.print(line, markup=False, highlight=False, emoji=False)


async def _follow(
    runtime: Runtime, record: AssessmentRecord, console: Console, quiet: bool
) -> AssessmentRecord:
    """Show progress until the assessment is finished. The end is read from the database (`wait`), not only
    from this process's events: another process may be the one that finishes or fails it."""
    service = runtime.service
    async with service.subscribe(record.id) as subscription:
        await service.start(record)
        with Progress(
            TextColumn("[bold]assessing"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("trials, mean reward {task.fields[mean]}"),
            TimeElapsedColumn(),
            TextColumn("[yellow]{task.fields[waiting]}"),
            console=console,
            disable=quiet,
            transient=False,
        ) as progress:
            bar = progress.add_task(
                "trials", total=record.trials_total, completed=record.trials_done, mean="-", waiting=""
            )
            showing = asyncio.create_task(_show_progress(subscription, progress, bar))
            try:
                return await service.wait(record.id)
            finally:
                showing.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await showing


async def _show_progress(subscription: Subscription, progress: Progress, bar: TaskID) -> None:
    rewards: list[float] = []
    async for event in subscription:
        if isinstance(event, ProviderWaiting):  # "waiting for M at H: rate limited" / "...: down since ..."
            progress.update(bar, waiting="; ".join(event.waiting_for))
        elif isinstance(event, TrialDone):
            if event.reward is not None:
                rewards.append(event.reward)
            mean = f"{sum(rewards) / len(rewards):.3f}" if rewards else "-"
            progress.update(bar, completed=event.trials_done, mean=mean)


def _write_report(
    record: AssessmentRecord, output: Path | None, attempts: list[Attempt] | None = None
) -> Path:
    path = output or Path("reports") / f"{record.id}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    public = AssessmentPublic.from_record(record, attempts=attempts)
    path.write_text(json.dumps(public.model_dump(mode="json"), indent=2) + "\n")
    return path


async def _assess(
    runtime: Runtime,
    config: AssessmentConfig,
    *,
    output: Path | None,
    quiet: bool,
    console: Console,
    expected_partial: Collection[str] = (),
    builtin_oracle: bool = False,
) -> int:
    try:
        record, _ = await runtime.service.create(
            config,
            source="cli",
            start=False,
            allow_private_agents=runtime.settings.allow_private_agents,
            builtin_oracle=builtin_oracle,
        )
    except ConfigError as exc:
        console.print(f"[red]cannot run:[/red] {exc}")
        return ExitCode.USAGE
    return await _run_and_report(
        runtime, record, output=output, quiet=quiet, console=console, expected_partial=expected_partial
    )


async def _run_and_report(
    runtime: Runtime,
    record: AssessmentRecord,
    *,
    output: Path | None,
    quiet: bool,
    console: Console,
    expected_partial: Collection[str] = (),
) -> int:
    """Start a created assessment, show its progress, then write and print its report."""
    console.print(
        f"assessment {record.id}: {record.trials_total} {record.domain} trials of {record.agent_url}",
        highlight=False,
    )
    for warning in record.warnings:
        console.print(f"[yellow]warning:[/yellow] {warning}")
    try:
        final = await _follow(runtime, record, console, quiet)
    except asyncio.CancelledError:
        # Ctrl-C: a command-line run is over when its user stops it (a later `serve` must not resume it).
        # The trials that finished are kept: report them and exit CANCELLED rather than dying mid-way.
        current = asyncio.current_task()
        if current is None or current.uncancel() > 0:  # cancelled by something else too: honour it
            raise
        final = await runtime.service.cancel(record.id)
    path = _write_report(final, output, await runtime.repository.attempts(final.id))
    if final.report is not None:
        console.print(report_table(final, final.report))
        if not final.report.complete:
            expected = set(final.report.partial_reasons) <= set(expected_partial)
            note = " (expected in the demo, which has no LLM judge)" if expected else ""
            console.print(
                f"[bold yellow]PARTIAL{note}:[/bold yellow] {final.report.partial_summary()}; "
                "the numbers cover only the scored trials"
            )
        if not quiet:  # --quiet keeps to the table and the lines a script looks for
            summaries = await runtime.repository.trial_summaries(final.id)
            # One more than shown: whether to say there are more.
            print_failure_reasons(console, views.common_failures(summaries, limit=FAILURE_REASONS_SHOWN + 1))
    if final.status != COMPLETED:
        console.print(f"[red]assessment {final.status}:[/red] {final.error}")
    console.print(f"report written to {path}")
    if retry_would_help(final, judge_configured=runtime.engine.judge is not None):
        console.print(
            f"to run what is missing in the same assessment: green-agent retry {final.id}", highlight=False
        )
    return exit_code(final.status, final.report, expected_partial=expected_partial)


async def retry_assessment(
    settings: Settings, assessment_id: str, *, output: Path | None, quiet: bool
) -> int:
    """`green-agent retry ID`: the same assessment again, in this process (as `run`): what was excluded as
    an infrastructure error or never ran is run, what was left without a verdict is judged; same exit
    codes."""
    console = Console()
    async with open_runtime(settings, take_over=False) as runtime:
        try:
            record = await runtime.service.retry(
                assessment_id,
                source="cli",
                caller=operator_principal(settings.allow_private_agents),
                start=False,
            )
        except (AssessmentNotFound, NothingToRetry, QuotaExceeded) as exc:
            console.print(f"[red]cannot retry:[/red] {exc.args[0] if exc.args else exc}")
            return ExitCode.FAILED
        except ConfigError as exc:
            console.print(f"[red]cannot retry:[/red] {exc}")
            return ExitCode.USAGE
        attempts = await runtime.repository.attempts(record.id)
        console.print(
            f"attempt {record.attempt} of assessment {record.id}: {attempts[-1].reason}", highlight=False
        )
        return await _run_and_report(runtime, record, output=output, quiet=quiet, console=console)


async def rerun_failed(
    settings: Settings, source_id: str, overrides: dict[str, Any], *, output: Path | None, quiet: bool
) -> int:
    """`run --failed-from ID`: a new assessment over the tasks ID did not solve in every trial, with ID's
    config where `overrides` says nothing; ends with the `compare` command that says what changed."""
    console = Console()
    async with open_runtime(settings, take_over=False) as runtime:
        try:
            record, tasks = await runtime.service.rerun_failed(
                source_id,
                overrides,
                source="cli",
                caller=operator_principal(settings.allow_private_agents),
                start=False,
            )
        except (AssessmentNotFound, NothingToRerun) as exc:
            console.print(f"[red]cannot rerun:[/red] {exc.args[0] if exc.args else exc}")
            return ExitCode.FAILED
        except ConfigError as exc:
            console.print(f"[red]cannot rerun:[/red] {exc}")
            return ExitCode.USAGE
        shown = ", ".join(tasks[:20]) + (f" and {len(tasks) - 20} more" if len(tasks) > 20 else "")
        console.print(f"rerunning the {len(tasks)} task(s) of {source_id} not solved in every trial: {shown}")
        code = await _run_and_report(runtime, record, output=output, quiet=quiet, console=console)
    console.print(f"next: green-agent compare {record.id} {source_id}", highlight=False)
    return code


async def compare_assessments(settings: Settings, a_id: str, b_id: str, *, as_json: bool) -> int:
    """`green-agent compare A B [--json]`: A against B, paired by task, with the uncertainty of it."""
    console = Console()
    async with open_runtime(settings, take_over=False, worker=False) as runtime:
        try:
            result = await runtime.service.compare(a_id, b_id)
            a, b = await runtime.service.get(a_id), await runtime.service.get(b_id)
        except (AssessmentNotFound, NotComparable) as exc:
            print(f"cannot compare: {exc.args[0] if exc.args else exc}", file=sys.stderr)
            return ExitCode.FAILED
    if as_json:
        print(result.model_dump_json(indent=2))
        return ExitCode.OK
    console.print(comparison_table(result, a, b))
    console.print(result.sentence, highlight=False)
    return ExitCode.OK


def comparison_table(result: Comparison, a: AssessmentRecord, b: AssessmentRecord) -> Table:
    table = Table(title=f"A = {a.id} vs B = {b.id}", show_header=True)
    table.add_column("")
    table.add_column("A - B", justify="right")
    table.add_column("95% interval", justify="right")
    table.add_column("p", justify="right")
    table.add_column("verdict")
    for name, difference in [
        ("mean reward", result),
        *((f"pass^{k}", d) for k, d in sorted(result.pass_hat_k.items())),
    ]:
        table.add_row(name, *_difference_cells(difference))
    table.caption = (
        f"A: {a.agent_url}; B: {b.agent_url}. {result.tasks_compared} tasks compared "
        f"(A better on {result.a_better}, B better on {result.b_better}, {result.ties} equal"
        + (f"; flipped: {', '.join(f.task_id for f in result.flipped)}" if result.flipped else "")
        + (f"; only in A: {len(result.only_in_a)}" if result.only_in_a else "")
        + (f"; only in B: {len(result.only_in_b)}" if result.only_in_b else "")
        + ")"
    )
    return table


def _difference_cells(difference: Difference) -> list[str]:
    ci = f"[{difference.ci95[0]:+.3f}, {difference.ci95[1]:+.3f}]" if difference.ci95 is not None else "n/a"
    verdict = "a real difference" if difference.significant else "within the noise"
    p_value = format_p(difference.p_value).removeprefix("p = ").removeprefix("p ")
    return [f"{difference.difference:+.3f}", ci, p_value, verdict]


# What `make demo` ends with: where to look next.
DEMO_NEXT_STEP = (
    "next: see it in the web UI: .venv/bin/green-agent serve, then open http://127.0.0.1:9009/ui\n"
    '      assess your own agent: README.md, "Quick start: assess your own agent"'
)


async def run_assessment(
    settings: Settings, config: AssessmentConfig, *, output: Path | None, quiet: bool
) -> int:
    console = Console()
    async with open_runtime(settings, take_over=False) as runtime:
        return await _assess(runtime, config, output=output, quiet=quiet, console=console)


async def run_demo(
    settings: Settings,
    *,
    trials: int,
    num_tasks: int | None,
    concurrency: int,
    output: Path | None,
    quiet: bool,
    user_model: str = SCRIPTED_USER,
    max_steps: int | None = None,
    agent_llm: LLMEndpoint | None = None,
    pick_tasks: Callable[[DomainData, int], list[str]] | None = None,
    domain: str = DEFAULT_DOMAIN,
) -> int:
    """The built-in oracle, assessed with the scripted user and no judge (the default: nothing to configure)
    or with `user_model`, a configured LLM user (`demo --local-llm`, which configures a judge too), on
    `domain`'s tasks. With `agent_llm` the agent is the `llm` reference agent on that endpoint
    (schema-constrained actions). `pick_tasks(data, num_tasks)` chooses the task ids (default: the first
    `num_tasks` of the domain's base split)."""
    from green_agent.reference_agents import serve_reference_agent

    console = Console()
    started = time.monotonic()
    kind: Literal["oracle", "llm"] = "oracle" if agent_llm is None else "llm"
    async with open_runtime(settings, take_over=False) as runtime:
        data = await runtime.engine.load_domain(domain)
        async with serve_reference_agent(
            kind, data=data, host="127.0.0.1", port=0, llm=agent_llm, tool_calls="json_schema"
        ) as agent_url:
            code = await _demo_on(
                runtime,
                data,
                agent_url,
                agent_llm=agent_llm,
                user_model=user_model,
                trials=trials,
                num_tasks=num_tasks,
                concurrency=concurrency,
                max_steps=max_steps,
                pick_tasks=pick_tasks,
                output=output,
                quiet=quiet,
                console=console,
            )
    console.print(f"demo finished in {time.monotonic() - started:.1f} s")
    console.print(DEMO_NEXT_STEP, highlight=False)
    return code


async def _demo_on(
    runtime: Runtime,
    data: DomainData,
    agent_url: str,
    *,
    agent_llm: LLMEndpoint | None,
    user_model: str,
    trials: int,
    num_tasks: int | None,
    concurrency: int,
    max_steps: int | None,
    pick_tasks: Callable[[DomainData, int], list[str]] | None,
    output: Path | None,
    quiet: bool,
    console: Console,
) -> int:
    """The demo's assessment of the built-in agent at `agent_url` on `data`'s domain."""
    settings = runtime.settings
    user = "scripted user" if user_model == SCRIPTED_USER else f"customer played by LLM {user_model!r}"
    judged = settings.effective_judge()[0] is not None
    judge = "LLM judge" if judged else "no judge"
    agent = "oracle" if agent_llm is None else f"LLM ({agent_llm.model})"
    console.print(
        f"demo: built-in {agent} white agent at {agent_url}, {data.name} domain, {user}, {judge}, "
        f"database {settings.database_url_for_display()}",
        highlight=False,
    )
    split = data.default_split
    if pick_tasks is not None and num_tasks is not None:
        tasks = TaskSelection(split=split, task_ids=pick_tasks(data, num_tasks))
    else:
        tasks = TaskSelection(split=split, num_tasks=num_tasks)
    config = AssessmentConfig(
        agent_url=agent_url,
        domain=data.name,
        tasks=tasks,
        trials=trials,
        concurrency=concurrency,
        user_model=user_model,
        **({"max_steps": max_steps} if max_steps is not None else {}),
    )
    # Without a judge (nothing configured) `not_judged` trials are expected; with one, nothing is.
    code = await _assess(
        runtime,
        config,
        output=output,
        quiet=quiet,
        console=console,
        expected_partial=set() if judged else {NOT_JUDGED},
        builtin_oracle=agent_llm is None,
    )
    return code
