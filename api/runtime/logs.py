"""Logging of the service processes: plain text (default) or one JSON object per line.

Either way one record is one line: log messages quote text from outside (agent URLs, an agent's error text,
names), and a line break in it would forge a record of its own. Requests refuse such text at the door
(green_agent/core/one_line.py); the formatters here escape whatever got in another way: text lines write
control, format and bidi characters as escapes and indent every line of a traceback under its record; JSON
lines are ASCII, every such character a `\\u` escape.

JSON lines carry the assessment, task and trial a record was written for, when there is one: the trial job
sets them in context variables (`trial_context`), which every coroutine of that trial inherits, so log
collectors can follow one trial across the engine, the white-agent client and the storage layer.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator
from contextvars import ContextVar
from datetime import UTC, datetime

from api.settings import LogFormat
from green_agent.core.one_line import escape_line

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
TRACEBACK_INDENT = "    "

_assessment_id: ContextVar[str | None] = ContextVar("assessment_id", default=None)
_task_id: ContextVar[str | None] = ContextVar("task_id", default=None)
_trial: ContextVar[int | None] = ContextVar("trial", default=None)


@contextlib.contextmanager
def trial_context(assessment_id: str, task_id: str, trial: int) -> Iterator[None]:
    tokens = (_assessment_id.set(assessment_id), _task_id.set(task_id), _trial.set(trial))
    try:
        yield
    finally:
        _trial.reset(tokens[2])
        _task_id.reset(tokens[1])
        _assessment_id.reset(tokens[0])


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name, var in (("assessment_id", _assessment_id), ("task_id", _task_id), ("trial", _trial)):
            value = var.get()
            if value is not None:
                entry[name] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        # ensure_ascii: line breaks, U+2028/U+2029 and bidi controls all become \u escapes.
        return json.dumps(entry, default=str, ensure_ascii=True)


class TextFormatter(logging.Formatter):
    """`TEXT_FORMAT`, one record per line: the message with control, format and bidi characters escaped;
    a traceback (or stack) on the lines below it, each indented and escaped, so that nothing an exception's
    message holds can start a line that reads like a record."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)

    def format(self, record: logging.LogRecord) -> str:
        record.message = escape_line(record.getMessage())
        record.asctime = self.formatTime(record, self.datefmt)
        text = self.formatMessage(record)
        details = []
        if record.exc_info:
            details.append(self.formatException(record.exc_info))
        if record.stack_info:
            details.append(self.formatStack(record.stack_info))
        for detail in details:
            # split("\n"), not splitlines(): the other separators splitlines knows are escaped, not cut.
            text += "".join(f"\n{TRACEBACK_INDENT}{escape_line(line)}" for line in detail.split("\n"))
        return text


def configure_logging(level: str, log_format: LogFormat) -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)
