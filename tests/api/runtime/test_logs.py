"""JSON logs: one object per line, carrying the assessment, task and trial of the trial that logged it."""

from __future__ import annotations

import asyncio
import json
import logging

from api.runtime.logs import JsonFormatter, trial_context


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
