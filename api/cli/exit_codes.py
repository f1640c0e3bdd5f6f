"""Exit codes of the `green-agent` command, so that a CI pipeline can gate on what happened.

`run` exits 0 only when the assessment completed and its report is complete (every planned trial ran and
was scored). The demo has no LLM judge by design, so for it (and only it) trials `not_judged` are expected
and do not make it exit PARTIAL; it still prints that its report is partial.
"""

from __future__ import annotations

from collections.abc import Collection
from enum import IntEnum

from api.db.repository import CANCELLED, COMPLETED
from green_agent.core.models import AssessmentReport


class ExitCode(IntEnum):
    OK = 0
    """Completed, and the report is complete."""
    FAILED = 1
    """The assessment failed, or the command could not do its work: the white agent, an LLM endpoint or
    the database could not be reached or refused us; the message (one or two lines) says what to fix."""
    USAGE = 2
    """Bad options or settings (an unknown flag, a malformed URL); nothing ran."""
    PARTIAL = 3
    """Completed, but trials were excluded or not judged: the numbers are not final."""
    CANCELLED = 4
    """Cancelled (Ctrl-C); the report covers the trials that finished."""


EXIT_CODES_HELP = """exit codes:
  0  completed, and the report is complete (every trial ran and was scored)
  1  failed: the white agent, an LLM endpoint or the database could not be reached or refused us;
     the message says what to fix (--debug shows the traceback)
  2  bad options or settings (an unknown flag, a malformed URL); nothing ran
  3  partial: completed, but some trials were excluded (infrastructure errors) or not judged (no judge)
  4  cancelled (Ctrl-C); the report written covers the trials that finished"""

DEMO_EXIT_CODES_HELP = (
    EXIT_CODES_HELP
    + """
The demo has no LLM judge, so its trials of tasks with NL assertions are reported `not_judged` and the
report is partial; that is expected and the demo exits 0 for it (it says "partial" in the table). Any
other reason for a partial report exits 3. With --local-llm the local model judges: the report is complete
or the demo exits 3."""
)


def exit_code(status: str, report: AssessmentReport | None, *, expected_partial: Collection[str] = ()) -> int:
    """The exit code for an assessment that ended with `status`; `expected_partial` lists partial reasons
    that do not count against it (the demo's `not_judged`)."""
    if status == CANCELLED:
        return ExitCode.CANCELLED
    if status != COMPLETED or report is None:
        return ExitCode.FAILED
    if set(report.partial_reasons) - set(expected_partial):
        return ExitCode.PARTIAL
    return ExitCode.OK
