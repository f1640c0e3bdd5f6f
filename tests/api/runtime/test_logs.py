"""Service logs: JSON lines carry the assessment, task and trial of the trial that logged them; text and JSON
records stay one line whatever outside text they quote (issue 37)."""

from __future__ import annotations

import asyncio
import json
import logging
import sys

import pytest

from api.runtime.logs import TRACEBACK_INDENT, JsonFormatter, TextFormatter, configure_logging, trial_context


def test_json_lines_carry_the_trial_ids_of_their_context() -> None:
    formatter = JsonFormatter()
    logger = logging.getLogger("tests.logs")
    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(formatter.format(record))  # formatted where it is logged, as a real handler does

    handler = Keep()
    logger.addHandler(handler)
    try:

        async def trial_code() -> None:
            await asyncio.sleep(0)
            logger.warning("turn %d timed out", 3)

        async def job() -> None:
            with trial_context("a-1", "17", 2):
                await asyncio.create_task(trial_code())  # a task started inside inherits the ids

        asyncio.run(job())
        logger.warning("outside any trial")
    finally:
        logger.removeHandler(handler)

    inside, outside = (json.loads(line) for line in lines)
    assert inside["message"] == "turn 3 timed out" and inside["level"] == "warning"
    assert (inside["assessment_id"], inside["task_id"], inside["trial"]) == ("a-1", "17", 2)
    assert "assessment_id" not in outside and outside["logger"] == "tests.logs"


# -- one record, one line (issue 37) ------------------------------------------------------------------------

FORGED_LINE = "2026-01-01 12:00:00,000 WARNING api.security.auth: key d107 (ops, admin) revoked by operator"
HOSTILE = f"http://127.0.0.1:19402/\r\n{FORGED_LINE}\n\x1b[31mred\u202eesrever\u2028\x85\ud800 end"


def formatted(formatter: logging.Formatter, *, with_exception: bool) -> str:
    """A record quoting HOSTILE, as a handler formats it; with an exception whose message quotes it too."""
    exc_info = None
    if with_exception:
        try:
            raise ValueError(f"the agent said: {HOSTILE}")
        except ValueError:
            exc_info = sys.exc_info()
    record = logging.LogRecord(
        "api.runtime.service", logging.WARNING, __file__, 1, "agent %s failed", (HOSTILE,), exc_info
    )
    return formatter.format(record)


@pytest.mark.parametrize("with_exception", [False, True])
def test_a_text_record_is_one_line_whatever_it_quotes(with_exception: bool) -> None:
    text = formatted(TextFormatter(), with_exception=with_exception)
    first, *rest = text.split("\n")
    assert first.endswith(
        "WARNING api.runtime.service: agent http://127.0.0.1:19402/\\r\\n"
        + FORGED_LINE
        + "\\n\\x1b[31mred\\u202eesrever\\u2028\\x85\\ud800 end failed"
    )
    # The traceback, if any, is below its record, every line indented: nothing in it starts like a record.
    assert bool(rest) == with_exception
    assert all(line.startswith(TRACEBACK_INDENT) for line in rest), rest
    # The exception's message breaks its own lines (a traceback is several): the forged record in it is
    # indented, so it cannot pass for one of ours.
    assert (TRACEBACK_INDENT + FORGED_LINE in rest) == with_exception
    for char in "\r\x1b\u202e\u2028\x85\ud800":
        assert char not in text


@pytest.mark.parametrize("with_exception", [False, True])
def test_a_json_record_is_one_ascii_line_that_reads_back_whole(with_exception: bool) -> None:
    line = formatted(JsonFormatter(), with_exception=with_exception)
    assert "\n" not in line and "\r" not in line and line.isascii()
    entry = json.loads(line)
    assert entry["message"] == f"agent {HOSTILE} failed"  # escaped, not lost: the collector reads it back
    if with_exception:
        assert entry["exception"].endswith(f"ValueError: the agent said: {HOSTILE}")


def test_the_text_format_is_what_the_service_logs_with() -> None:
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        configure_logging("info", "text")
        (handler,) = root.handlers
        assert isinstance(handler.formatter, TextFormatter)
        configure_logging("info", "json")
        (handler,) = root.handlers
        assert isinstance(handler.formatter, JsonFormatter)
    finally:
        root.handlers[:], _ = saved
        root.setLevel(saved[1])
