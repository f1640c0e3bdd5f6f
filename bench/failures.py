"""What classifying a failed trial costs (green_agent.scoring.failures), from an ordinary failure to a
hostile flood of tool calls (200 steps x 16 calls, the default bounds), against tau2's ACTION check, which
scoring already runs over the same calls.

    .venv/bin/python -m bench.failures

Prints a table (median of 5 runs per case); asserts nothing about time. Scoring classifies in a thread, so
none of this runs on the event loop.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from bench.tables import print_table
from green_agent.core.models import SIGNAL_DB, Signal, ToolCallRecord, TranscriptMessage, TrialResult
from green_agent.scoring.failures import classify_trial, trial_calls_with_results
from retail_domain import WRITE_TOOLS, RetailData, Task, ToolCall, check_actions, load_retail_data

Call = tuple[str, dict[str, Any], bool]


def failed_trial(task: Task, calls: list[Call]) -> TrialResult:
    now = datetime.now(UTC)
    transcript: list[TranscriptMessage] = []
    for start in range(0, len(calls), 16):  # up to 16 calls per reply (max_tool_calls)
        reply = calls[start : start + 16]
        records = [
            ToolCallRecord(id=f"c{start + i}", name=n, arguments=a) for i, (n, a, _) in enumerate(reply)
        ]
        transcript.append(TranscriptMessage(index=len(transcript), role="assistant", tool_calls=records))
        for record, (_, _, error) in zip(records, reply, strict=True):
            content = "Error: not found" if error else '{"ok": true}'
            transcript.append(
                TranscriptMessage(
                    index=len(transcript), role="tool", content=content, tool_call_id=record.id, error=error
                )
            )
    return TrialResult(
        task_id=task.id,
        trial=0,
        seed=1,
        termination_reason="max_steps",
        reward=0.0,
        is_successful=False,
        signals=[Signal(name=SIGNAL_DB, passed=False, counts=True, detail="")],
        transcript=transcript,
        started_at=now,
        finished_at=now,
    )


def cases(data: RetailData) -> dict[str, tuple[Task, list[Call]]]:
    task = max(data.tasks.values(), key=lambda t: len(t.gold_actions))  # the most gold actions to compare
    gold = [(a.name, dict(a.arguments), False) for a in task.gold_actions]
    write = next(a for a in task.gold_actions if a.name.startswith("modify"))
    flood = 200 * 16
    return {
        f"gold calls but the last write (task {task.id})": (task, gold[:-1]),
        f"{flood} failing lookups": (
            task,
            [("get_order_details", {"order_id": f"#W{i:07d}"}, True) for i in range(flood)],
        ),
        f"{flood} wrong calls of a gold write": (
            task,
            [(write.name, {**write.arguments, "item_ids": [str(i)]}, True) for i in range(flood)],
        ),
        f"{flood} successful extra writes": (
            task,
            [
                ("modify_user_address", {"user_id": "u", "address1": str(i), "city": "c", "zip": "1"}, False)
                for i in range(flood)
            ],
        ),
    }


def median_ms(run: Callable[[], object], repeat: int = 5) -> float:
    run()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> int:
    data = load_retail_data()
    rows = []
    for name, (task, calls) in cases(data).items():
        result = failed_trial(task, calls)
        gold_failed = {index for index, _, _ in data.gold(task.id).failed_calls}
        tool_calls = [ToolCall(c.name, c.arguments) for c in trial_calls_with_results(result)]
        options: dict[str, Any] = {"write_tools": WRITE_TOOLS, "gold_failed": gold_failed}
        failures = classify_trial(task, result, **options)
        rows.append(
            [
                name,
                len(calls),
                f"{median_ms(lambda: classify_trial(task, result, **options)):.2f}",  # noqa: B023
                f"{median_ms(lambda: check_actions(task.gold_actions, tool_calls, WRITE_TOOLS)):.2f}",  # noqa: B023
                len(failures),
            ]
        )
    print_table(
        "Classifying one failed trial",
        ["trial", "calls", "classify ms", "ACTION check ms (already in scoring)", "failures listed"],
        rows,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
