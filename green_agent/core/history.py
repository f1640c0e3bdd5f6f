"""A task's message history: the conversation that happened before the trial (upstream's
`initial_state.message_history`; two mock tasks have one: the customer asked for a task, the agent created
it and said so).

As upstream runs such a task: its environment already holds the history's writes (the domain applies them
with the initial state), the trial's transcript opens with the history instead of the greeting, the white
agent is shown all of it in its first message (docs/dialects.md, each dialect its own way), the customer
model its own side (the texts, roles flipped, and its own calls), and the last message says who speaks
next. What the trial's calls are replayed on is the task's initial state, history included: so the replays
of a stored trial (its environment check, its diagnosis, a re-scored file) leave the history's calls out,
`history_length` telling how many leading messages of a transcript are the task's history.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from domain_kit import Task
from green_agent.core.models import ToolCallRecord, TranscriptMessage


@dataclass(frozen=True)
class HistoryMessage:
    """One message of a task's history. `requestor`: on a tool result, who made the call."""

    role: Literal["assistant", "user", "tool"]
    content: str | None = None
    tool_calls: tuple[ToolCallRecord, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    """On a tool result: the tool's name (from the call it answers)."""
    requestor: Literal["assistant", "user"] = "assistant"
    error: bool = False

    @property
    def is_text(self) -> bool:
        """A message for the other party (no tool calls): what the other side sees of it."""
        return self.role != "tool" and not self.tool_calls

    def transcript_fields(self) -> dict[str, Any]:
        """Its fields beyond role and text, as a transcript message keeps them (a tool result's requestor
        only where the customer made the call, as the engine records its own)."""
        return {
            "tool_calls": list(self.tool_calls) or None,
            "tool_call_id": self.tool_call_id,
            "error": self.error,
            "requestor": "user" if self.role == "tool" and self.requestor == "user" else None,
        }


def task_history(task: Task) -> list[HistoryMessage]:
    """The task's message history as messages (empty for almost every task). Raises ValueError on a history
    this engine cannot run: a message of another role, or one that is not followed through (see
    `opening_turn`)."""
    raw = task.initial_state.message_history if task.initial_state is not None else ()
    names: dict[str, str] = {}
    messages = []
    for entry in raw:
        role = entry.get("role")
        if role not in ("assistant", "user", "tool"):
            raise ValueError(f"task {task.id}: a history message of role {role!r}")
        calls = tuple(
            ToolCallRecord(
                id=str(call.get("id") or ""),
                name=str(call["name"]),
                arguments=dict(call.get("arguments") or {}),
            )
            for call in entry.get("tool_calls") or ()
        )
        for call in calls:
            names[call.id] = call.name
        call_id = (
            (str(entry.get("id") or entry.get("tool_call_id") or "") or None) if role == "tool" else None
        )
        requestor = entry.get("requestor") or ("assistant" if role == "tool" else role)
        messages.append(
            HistoryMessage(
                role=role,
                content=_text(entry.get("content")),
                tool_calls=calls,
                tool_call_id=call_id,
                name=names.get(call_id or "") if role == "tool" else None,
                requestor="user" if requestor == "user" else "assistant",
                error=bool(entry.get("error", False)),
            )
        )
    if messages:
        opening_turn(task.id, messages)
    return messages


def agent_view(history: Sequence[HistoryMessage]) -> list[HistoryMessage]:
    """What the agent sees of a history, as upstream's agent does: the customer's words, its own messages
    and the results of its own calls; never the customer's calls or their results."""
    return [
        m
        for m in history
        if (m.role == "user" and m.is_text)
        or m.role == "assistant"
        or (m.role == "tool" and m.requestor != "user")
    ]


def customer_view(history: Sequence[HistoryMessage]) -> list[dict[str, Any]]:
    """What the customer model sees of a history, in chat form with the roles flipped (as upstream's user
    simulator): the agent's words as "user", its own words and calls as "assistant", its own calls' results
    as "tool"; never the agent's calls or their results."""
    shown: list[dict[str, Any]] = []
    for m in history:
        if m.role == "assistant" and m.is_text:
            shown.append({"role": "user", "content": m.content or ""})
        elif m.role == "user":
            message: dict[str, Any] = {"role": "assistant", "content": m.content}
            if m.tool_calls:
                message["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                    }
                    for call in m.tool_calls
                ]
            shown.append(message)
        elif m.role == "tool" and m.requestor == "user":
            shown.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content or ""})
    return shown


def opening_turn(task_id: str, history: Sequence[HistoryMessage]) -> Literal["user", "assistant"]:
    """Who speaks first after the history: the customer after the agent's last text, the agent after the
    customer's. (Upstream also resumes after a tool call or its result; no task of tau2's does, and this
    engine refuses such a history rather than guess.)"""
    last = history[-1]
    if last.is_text and last.role == "assistant":
        return "user"
    if last.is_text and last.role == "user":
        return "assistant"
    raise ValueError(
        f"task {task_id}: its message history ends with a tool call or its result; this service runs "
        "histories that end with a text message of the agent or the customer"
    )


def history_length(task: Task | None, transcript: Sequence[TranscriptMessage]) -> int:
    """How many leading messages of `transcript` are `task`'s message history (0 when the task has none, or
    the transcript does not open with it: a trial stored before histories were shown)."""
    return leading_history(
        task, [(m.role, m.content, [c.name for c in m.tool_calls or ()]) for m in transcript]
    )


def leading_history(task: Task | None, messages: Sequence[tuple[str, Any, Sequence[str]]]) -> int:
    """`history_length` over messages given as (role, content, names of the tools called): a stored
    transcript, or a results file's simulation (where upstream's trajectories open with the history too)."""
    if task is None or task.initial_state is None or not task.initial_state.message_history:
        return 0
    history = task.initial_state.message_history
    if len(messages) < len(history):
        return 0
    for raw, (role, content, names) in zip(history, messages, strict=False):
        called = [str(call.get("name")) for call in raw.get("tool_calls") or ()]
        if raw.get("role") != role or _text(raw.get("content")) != _text(content) or called != list(names):
            return 0
    return len(history)


def _text(content: Any) -> str | None:
    if content is None or isinstance(content, str):
        return content
    return json.dumps(content)
