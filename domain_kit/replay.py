"""Replay a trajectory's tool calls for one task on a fresh environment of its domain, and compare the end
state with the task's gold replay: the final DB hash, whether it matches gold, and the field-level
differences. Pure (no I/O): `retail-replay` prints it, and the service's trial pages diagnose a stored trial
with it, for every domain.

Calls come as `ParsedCall`s, either from a file (`parse_calls`: a JSON list of ``{"name", "arguments"}`` or
OpenAI-style ``{"function": {"name", "arguments": "<JSON>"}}`` entries, or an object with a ``tool_calls`` or
``calls`` list) or from a stored trial (each with who made it: the agent, or in dual control the customer).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from .calls import Requestor, ToolResult
from .diff import db_differences
from .protocols import DomainData, DomainEnvironment


class InputError(ValueError):
    """The calls file is not in a supported shape."""


@dataclass(frozen=True)
class ParsedCall:
    name: str
    arguments: Any
    problem: str | None = None  # set when the entry could not be turned into a call
    requestor: Requestor = "assistant"


def parse_calls(document: Any) -> list[ParsedCall]:
    """Accept a list of calls in either supported shape (or an object wrapping one)."""
    if isinstance(document, dict):
        for key in ("tool_calls", "calls"):
            if isinstance(document.get(key), list):
                document = document[key]
                break
    if not isinstance(document, list):
        raise InputError("expected a JSON list of tool calls (or an object with a 'tool_calls' list)")
    calls: list[ParsedCall] = []
    for index, entry in enumerate(document):
        if not isinstance(entry, dict):
            raise InputError(f"entry {index} is not an object")
        nested = entry.get("function")
        function: dict[str, Any] = nested if isinstance(nested, dict) else entry
        name = function.get("name")
        if not isinstance(name, str):
            raise InputError(f"entry {index} has no tool name")
        arguments = function.get("arguments", {})
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError as exc:
                calls.append(ParsedCall(name, arguments, f"arguments are not valid JSON: {exc}"))
                continue
        calls.append(ParsedCall(name, arguments if arguments is not None else {}))
    return calls


def _run(env: DomainEnvironment, call: ParsedCall) -> ToolResult:
    if call.problem is not None:
        return ToolResult(f"Error: {call.problem}", True)
    return env.call(call.name, call.arguments, call.requestor)


def replayed_environment(
    data: DomainData, task_id: str, calls: list[ParsedCall], normalize_ids: bool = False
) -> tuple[DomainEnvironment, list[dict[str, Any]]]:
    """A fresh environment of the task (in its initial state) after `calls`, each run for the party that
    made it, and every call's result."""
    task = data.task(task_id)
    env = data.new_environment(task.id, normalize_ids=normalize_ids)
    results = []
    for index, call in enumerate(calls):
        result = _run(env, call)
        results.append(
            {
                "index": index,
                "name": call.name,
                "arguments": call.arguments,
                "error": result.error,
                "content": result.content,
            }
        )
    return env, results


def replay_calls(
    data: DomainData, task_id: str, calls: list[ParsedCall], normalize_ids: bool = False
) -> dict[str, Any]:
    """Run `calls` on a fresh environment of the task and compare with its gold replay; the report (what
    `retail-replay --json` prints): every call's result, the final and gold DB hashes, whether they match,
    the field differences (this replay vs gold) and the gold calls that fail."""
    env, results = replayed_environment(data, task_id, calls, normalize_ids)
    return compared_with_gold(data, task_id, env, results)


def compared_with_gold(
    data: DomainData, task_id: str, env: DomainEnvironment, results: list[dict[str, Any]]
) -> dict[str, Any]:
    """`replay_calls`'s report for an environment already replayed (`replayed_environment`)."""
    task = data.task(task_id)
    gold = data.gold(task.id)
    gold_env = data.new_environment(task.id)
    for action in gold.actions:
        gold_env.call(action.name, action.arguments, action.requestor)
    actual_hash = env.db_hash(known=gold.fingerprint)
    return {
        "task_id": task.id,
        "calls": results,
        "db_hash": actual_hash,
        "gold_db_hash": gold.db_hash,
        "initial_db_hash": data.initial_db_hash(),
        "matched": actual_hash == gold.db_hash,
        "differences": [asdict(d) for d in db_differences(env, gold_env)],
        "gold_failed_calls": [list(entry) for entry in gold.failed_calls],
    }
