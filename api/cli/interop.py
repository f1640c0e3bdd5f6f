"""`green-agent export`, `submission` and `rescore`: tau2-bench interop from the shell."""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console
from rich.table import Table

from api.cli.exit_codes import ExitCode
from api.runtime.runtime import open_runtime
from api.runtime.service import AssessmentNotFound
from api.runtime.tau2_interop import (
    NotExportable,
    export_document,
    store_rescore,
    write_json,
    write_submission,
)
from api.settings import Settings
from domain_kit import DataError
from green_agent.domains import DEFAULT_DOMAIN, UnknownDomainError, load_domain
from green_agent.engine import Engine
from green_agent.tau2_format.rescore import (
    InvalidResultsFile,
    RescoreReport,
    domain_to_rescore,
    rescore_document,
)
from green_agent.tau2_format.submission import SubmissionRefused, Submitter


async def export(settings: Settings, assessment_id: str, output: Path, *, domain: str | None = None) -> int:
    async with open_runtime(settings) as runtime:
        try:
            document = await export_document(runtime, assessment_id, domain=domain)
        except (AssessmentNotFound, NotExportable) as exc:
            print(f"cannot export: {_message(exc)}", file=sys.stderr)
            return ExitCode.FAILED
    write_json(document, output)
    count = len(document["simulations"])
    name = document["info"]["environment_info"]["domain_name"]
    print(f"tau2 {name} results file written to {output} ({count} simulations; excluded trials are left out)")
    return ExitCode.OK


async def submission(
    settings: Settings,
    assessment_ids: list[str],
    output: Path,
    submitter: Submitter,
    *,
    domain: str | None = None,
) -> int:
    async with open_runtime(settings) as runtime:
        try:
            written = await write_submission(
                runtime, assessment_ids, output, submitter, today=datetime.now(UTC).date(), domain=domain
            )
        except (AssessmentNotFound, NotExportable, SubmissionRefused) as exc:
            print(f"submission refused: {_message(exc)}", file=sys.stderr)
            return ExitCode.FAILED
    for notice in written.notices:
        print(f"note: {notice}")
    files = ", ".join(f"{output}/trajectories/{name}" for name in written.trajectory_files.values())
    print(f"submission written to {output}/submission.json and {files}")
    print("next: `tau2 submit validate` on that directory, then follow tau2's docs/leaderboard-submission.md")
    return ExitCode.OK


def _data_dir(settings: Settings, domain: str) -> Path | None:
    """The operator's data directory for `domain` (the setting names retail's; the others read their own
    TAU2_<NAME>_DATA_DIR in the domain's loader)."""
    return settings.data_dir if domain == DEFAULT_DOMAIN else None


async def rescore(
    settings: Settings, path: Path, *, as_json: bool, store: bool, domain: str | None = None
) -> int:
    try:
        document = json.loads(await asyncio.to_thread(path.read_text, encoding="utf-8"))
        name = domain_to_rescore(document, domain)
        data = await asyncio.to_thread(load_domain, name, _data_dir(settings, name))
    except (OSError, json.JSONDecodeError, DataError, UnknownDomainError) as exc:
        print(f"cannot rescore: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    except InvalidResultsFile as exc:
        print(f"cannot rescore {path}: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    stored: str | None = None
    try:
        if store:
            async with open_runtime(settings) as runtime:
                report = await rescore_document(document, data, runtime.engine.judge)
                record, skipped = await store_rescore(runtime, path.name, report)
                stored = f"stored as assessment {record.id} (source import)" + (
                    f"; {skipped} repeated (task, trial) simulation(s) skipped" if skipped else ""
                )
        else:
            async with Engine(settings.engine_settings(), data) as engine:
                report = await rescore_document(document, data, engine.judge)
    except InvalidResultsFile as exc:
        print(f"cannot rescore {path}: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    if as_json:
        print(json.dumps(report.model_dump(mode="json"), indent=2))
    else:
        _print_rescore(path, report)
    if stored:
        print(stored, file=sys.stderr if as_json else sys.stdout)
    totals = report.totals
    return ExitCode.OK if totals.rewards_agree == totals.rewards_compared else ExitCode.FAILED


def _print_rescore(path: Path, report: RescoreReport) -> None:
    console = Console()
    table = Table(title=f"rescore of {path.name} ({report.domain})")
    for column in ("task", "trial", "ended", "stored", "recomputed", "agrees", "DB agrees", "note"):
        table.add_column(column)
    for row in report.simulations:
        table.add_row(
            row.task_id,
            str(row.trial),
            row.termination_reason,
            _shown(row.stored_reward),
            _shown(row.reward),
            _shown(row.reward_agrees),
            _shown(row.db_agrees),
            (row.note or "")
            + (f" {row.replay_mismatches} replay mismatch(es)" if row.replay_mismatches else ""),
        )
    console.print(table)
    t = report.totals
    rate = f"{t.reward_agreement:.1%}" if t.reward_agreement is not None else "n/a"
    console.print(
        f"{t.simulations} simulations ({t.excluded} excluded): "
        f"reward agrees {t.rewards_agree}/{t.rewards_compared} ({rate}), "
        f"{t.rewards_unknown} not recomputable; DB {t.db_agree}/{t.db_compared}; "
        f"actions {t.actions_agree}/{t.actions_compared}; "
        f"communicate {t.communicate_agree}/{t.communicate_compared}; "
        + (
            f"env assertions {t.env_assertions_agree}/{t.env_assertions_compared}; "
            if t.env_assertions_compared
            else ""
        )
        + f"replay mismatches {t.replay_mismatches}; judge: {report.judge_model or 'none'}"
    )


def _shown(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _message(exc: Exception) -> str:
    return str(exc.args[0]) if isinstance(exc, LookupError) and exc.args else str(exc)
