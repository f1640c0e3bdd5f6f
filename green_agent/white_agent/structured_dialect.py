"""The structured dialect: framing, tool results and tool calls travel as DataParts; no prompt parsing.

Green -> white:
* first message: DataPart `{"dialect": URI, "type": "session_start", "policy", "tools"}` (and "history",
  the conversation so far, where the task has a message history), then a TextPart with the customer's first
  words;
* customer's words: one TextPart;
* tool results: DataPart `{"dialect": URI, "type": "tool_results", "results": [{"tool_call_id", "name",
  "content", "error"}]}`.
White -> green: DataPart `{"tool_calls": [{"id"?, "name", "arguments"}]}` to call tools (text alongside is
kept in the transcript but not shown to the customer, as in tau2), or text alone to talk to the customer.
Text that looks like a text-dialect tool call is read as text all the same, with a protocol warning: the
agent probably speaks the text dialect only.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from a2a.helpers import new_data_part, new_text_part
from a2a.types import Part

from green_agent.core.history import HistoryMessage, agent_view
from green_agent.white_agent.client import AgentReply
from green_agent.white_agent.dialect import STRUCTURED_DIALECT_URI, ToolOutcome
from green_agent.white_agent.reply_parsing import (
    DEFAULT_MAX_DEPTH,
    ParsedCall,
    ParsedReply,
    ShapeError,
    calls_from_json,
    json_candidates,
)


class StructuredDialect:
    name = "structured"

    def __init__(self, max_json_depth: int = DEFAULT_MAX_DEPTH) -> None:
        self.max_json_depth = max_json_depth

    def opening(
        self,
        *,
        policy: str,
        tools: list[dict[str, Any]],
        user_text: str,
        history: Sequence[HistoryMessage] = (),
    ) -> list[Part]:
        frame: dict[str, Any] = {
            "dialect": STRUCTURED_DIALECT_URI,
            "type": "session_start",
            "policy": policy,
            "tools": tools,
        }
        if history:
            frame["history"] = [_history_entry(message) for message in agent_view(history)]
        return [new_data_part(frame), new_text_part(user_text)]

    def user_turn(self, text: str) -> list[Part]:
        return [new_text_part(text)]

    def tool_results(self, outcomes: list[ToolOutcome]) -> list[Part]:
        results = [
            {"tool_call_id": o.call_id, "name": o.name, "content": o.content, "error": o.error}
            for o in outcomes
        ]
        return [
            new_data_part({"dialect": STRUCTURED_DIALECT_URI, "type": "tool_results", "results": results})
        ]

    def parse(self, reply: AgentReply) -> ParsedReply:
        warnings: list[str] = []
        calls: list[ParsedCall] = []
        for payload in reply.data:
            raw_calls = payload.get("tool_calls") if isinstance(payload, dict) else None
            if not isinstance(raw_calls, list):
                warnings.append("a DataPart without a 'tool_calls' list was ignored")
                continue
            for raw in raw_calls:
                call = _call(raw)
                if call is None:
                    warnings.append(f"malformed tool call ignored: {json.dumps(raw)[:200]}")
                else:
                    calls.append(call)
        text = reply.text if reply.text.strip() else None
        if text is not None and (name := self._tool_call_in(text)) is not None:
            warnings.append(
                f"the reply's text looks like a call of tool {name[:60]!r}; under the structured dialect "
                'tool calls go in a DataPart {"tool_calls": [...]}, so it was treated as text'
                + ("" if calls else " for the customer")
            )
        if not calls and text is None:
            warnings.append("reply held no tool call and no text; its data was sent to the user as text")
            text = json.dumps(list(reply.data))
        return ParsedReply(calls=tuple(calls), text=text, warnings=tuple(warnings))

    def _tool_call_in(self, text: str) -> str | None:
        """The tool name, when the text holds JSON that reads as a text-dialect tool call."""
        for candidate in json_candidates(text, self.max_json_depth):
            try:
                calls = calls_from_json(candidate, self.max_json_depth)
            except ShapeError:
                continue
            return calls[0].name
        return None


def _history_entry(message: HistoryMessage) -> dict[str, Any]:
    """One message of the conversation so far: the customer's words (role "user"), the agent's own text or
    calls (role "assistant", calls as the agent sends them), a result of its calls (role "tool", as in
    `tool_results`)."""
    if message.role == "tool":
        return {
            "role": "tool",
            "tool_call_id": message.tool_call_id,
            "name": message.name,
            "content": message.content,
            "error": message.error,
        }
    entry: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        entry["tool_calls"] = [
            {"id": call.id, "name": call.name, "arguments": call.arguments} for call in message.tool_calls
        ]
    return entry


def _call(raw: Any) -> ParsedCall | None:
    if not isinstance(raw, dict):
        return None
    name = raw.get("name")
    arguments = raw.get("arguments", {})
    if not isinstance(name, str) or not name or not isinstance(arguments, dict):
        return None
    call_id = raw.get("id")
    return ParsedCall(
        name=name, arguments=_whole_numbers(arguments), id=call_id if isinstance(call_id, str) else None
    )


def _whole_numbers(value: Any) -> Any:
    """Undo protobuf's number widening: DataParts turn every JSON integer into a float."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _whole_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_whole_numbers(v) for v in value]
    return value
