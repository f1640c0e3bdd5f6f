"""Putting a fresh environment into a task's initial state, as upstream's ``Environment.set_state`` does:
data merged into the databases, then the setup calls (hidden functions included) each followed by the sync,
then the message history's writes replayed, then a last sync.

Every telecom task uses only setup calls (the first always tells the phone its owner); the other two steps
are here for task files that use them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from domain_kit import ToolCall
from domain_kit.tasks import InitialState

from .environment import TelecomEnvironment
from .model import build, dump
from .phone import TelecomUserDB
from .records import TelecomDB
from .schemas import MUTATING_TOOLS


def apply_initial_state(env: TelecomEnvironment, state: InitialState | None) -> None:
    """Raises what a setup step raises (a task whose state cannot be set up cannot be run)."""
    if state is not None:
        data = state.initialization_data or {}
        if data.get("agent_data") is not None:
            env.tools.db = build(TelecomDB, _merged(dump(env.tools.db), data["agent_data"]), "agent_data")
        if data.get("user_data") is not None:
            env.user_tools.db = build(
                TelecomUserDB, _merged(dump(env.user_tools.db), data["user_data"]), "user_data"
            )
        for action in state.initialization_actions:
            env.run_function(action.env_type, action.func_name, action.arguments)
        replay_history(env, state.message_history)
    env.sync()


def _merged(base: Any, update: Any) -> Any:
    """Upstream's update of a dump (addict): tables merge key by key, anything else is replaced."""
    if isinstance(base, dict) and isinstance(update, Mapping):
        merged = dict(base)
        for key, value in update.items():
            merged[key] = _merged(base[key], value) if key in base else value
        return merged
    return update


def replay_history(env: TelecomEnvironment, messages: Sequence[Mapping[str, Any]]) -> None:
    """Re-run the writes of a recorded conversation (each tool call paired with the tool message after it),
    checking that each gives the recorded result, as upstream's strict replay does. Reads and names neither
    side has are skipped."""
    pending = list(messages)
    pending.reverse()
    while pending:
        message = pending.pop()
        if message.get("role") == "tool":
            raise ValueError("Tool message not expected. Tool messages should always follow a tool call.")
        for raw_call in message.get("tool_calls") or ():
            if not pending:
                raise ValueError("Tool message expected. Got None.")
            answer = pending.pop()
            if answer.get("role") != "tool":
                raise ValueError(f"Tool message expected. Got {answer.get('role')}")
            if raw_call.get("id") != answer.get("id"):
                raise ValueError(f"Tool call id mismatch. Got {raw_call.get('id')} and {answer.get('id')}")
            call = ToolCall(
                str(raw_call["name"]),
                dict(raw_call.get("arguments") or {}),
                "user" if raw_call.get("requestor") == "user" else "assistant",
            )
            if call.name not in MUTATING_TOOLS:
                continue
            result = env.call(call.name, call.arguments, call.requestor)
            if _parsed(result.content) != _parsed(answer.get("content")):
                raise ValueError(
                    f"Tool call:\n{call}\n\nReturned:\n{result.content}\n\nExpected:\n{answer.get('content')}"
                )


def _parsed(content: Any) -> Any:
    try:
        return json.loads(content)
    except (TypeError, json.JSONDecodeError):
        return content
