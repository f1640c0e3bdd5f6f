"""The trials of an assessment as CSV, one row per trial (task, trial, reward, termination, signals, failure
kinds and reasons, error, link), for a spreadsheet.

Agent text reaches some cells (an error line, an argument name the agent chose), and a spreadsheet runs a
cell that starts like a formula: every cell starting with = + - @, a tab or a carriage return gets a leading
apostrophe, which spreadsheets show as text (OWASP, "CSV injection")."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from typing import Any

from fastapi import Response

from api.db.repository import TrialSummary
from api.web.ui.views import task_sort_key
from green_agent.core.models import SIGNAL_NAMES
from green_agent.scoring.failures import failure_label, kinds

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")

COLUMNS = (
    "task_id",
    "trial",
    "reward",
    "success",
    "termination_reason",
    "steps",
    "nl_status",
    *SIGNAL_NAMES,
    "failure_kinds",
    "failures",
    "error",
    "link",
)


def cell(value: Any) -> str:
    """A value as a CSV cell that a spreadsheet shows as text, never runs."""
    if value is None:
        return ""
    text = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def _signal(summary: TrialSummary, name: str) -> str:
    for signal in summary.signals:
        if signal.get("name") == name:
            passed = signal.get("passed")
            return "" if passed is None else ("passed" if passed else "failed")
    return ""


def row(summary: TrialSummary, link: str) -> list[str]:
    failures = summary.failures or ()
    error = (summary.error or "").strip().splitlines()
    values: list[Any] = [
        summary.task_id,
        summary.trial,
        summary.reward,
        summary.is_successful,
        summary.termination_reason,
        summary.steps,
        summary.nl_status,
        *(_signal(summary, name) for name in SIGNAL_NAMES),
        ";".join(kinds(failures)),
        " | ".join(dict.fromkeys(failure_label(f) for f in failures)),
        error[0] if error else None,
        link,
    ]
    return [cell(value) for value in values]


def trials_csv(summaries: Iterable[TrialSummary], link_prefix: str) -> str:
    """Every trial in grid order (task, then trial); `link_prefix` + `/<task>/<trial>` opens each."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(COLUMNS)
    for summary in sorted(summaries, key=lambda s: (task_sort_key(s.task_id), s.trial)):
        writer.writerow(row(summary, f"{link_prefix}/{summary.task_id}/{summary.trial}"))
    return out.getvalue()


def csv_response(body: str, assessment_id: str) -> Response:
    """The CSV as a download (REST and UI alike)."""
    return Response(
        body,
        media_type="text/csv; charset=utf-8",
        headers={
            "Content-Disposition": f'attachment; filename="trials-{assessment_id}.csv"',
            "X-Content-Type-Options": "nosniff",
        },
    )
