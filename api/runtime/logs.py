"""Logging of the service processes: plain text (default) or one JSON object per line.

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
        return json.dumps(entry, default=str)


def configure_logging(level: str, log_format: LogFormat) -> None:
    handler = logging.StreamHandler()
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)
