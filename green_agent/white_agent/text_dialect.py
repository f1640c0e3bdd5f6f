"""The text dialect: everything in one text part, replies as JSON tool calls (AgentBeats tau2 compatible).

The first message carries the policy verbatim, the tool schemas, the reply format and the customer's first
words; later messages carry the customer's words, or one line per tool result:
`Tool '<name>' result: <content>`. The wording of the framing is this project's own.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any

from a2a.helpers import new_text_part
from a2a.types import Part

from green_agent.core.history import HistoryMessage, agent_view
from green_agent.white_agent.client import AgentReply
from green_agent.white_agent.dialect import ToolOutcome
from green_agent.white_agent.reply_parsing import (
    DEFAULT_MAX_DEPTH,
    RESPOND,
    ParsedReply,
    calls_from_json,
    parse_text_reply,
)

RESPOND_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": RESPOND,
        "description": "Send a message to the customer. Use it whenever you are not calling a tool.",
        "parameters": {
            "type": "object",
            "properties": {
                "content": {"type": "string", "description": "The text the customer will read."},
            },
            "required": ["content"],
        },
    },
}

_FRAME = """{policy}

You act on the company's systems only through the tools listed below, in OpenAI function format. Make at most
one tool call per turn.

Tools:
{tools}

To write to the customer, call this tool:
{respond}

How to answer: every reply must be a single JSON object, with no other text around it, holding the tool's
name and its arguments:
{{"name": "<tool name>", "arguments": {{<argument name>: <value>, ...}}}}

Examples:
{example}
{{"name": "respond", "arguments": {{"content": "Could you tell me the order number, please?"}}}}

Tool results come back to you as lines of the form: Tool '<name>' result: <result>

The customer's first message follows.
{user_text}"""


_FIRST_MESSAGE = "The customer's first message follows.\n"
_SO_FAR = (
    "This conversation began before you joined it. So far (the customer's words, your own replies in the "
    "format above, and the results of your tool calls):"
)


def _history_line(message: HistoryMessage) -> str | None:
    """One message of the conversation so far, as the agent would have seen or written it."""
    if message.role == "user":
        return f"Customer: {message.content or ''}"
    if message.role == "tool":
        return f"Tool '{message.name or ''}' result: {message.content or ''}"
    if message.tool_calls:
        return "\n".join(
            "You: " + json.dumps({"name": call.name, "arguments": call.arguments})
            for call in message.tool_calls
        )
    return "You: " + json.dumps({"name": RESPOND, "arguments": {"content": message.content or ""}})


@functools.lru_cache(maxsize=8)
def _frame_head(policy: str, tools_json: str) -> str:
    """Everything before the customer's words; the same for every trial, so built once."""
    return _FRAME.format(
        policy=policy.rstrip("\n"),
        tools=tools_json,
        respond=json.dumps(RESPOND_SCHEMA, indent=2),
        example=_example_call(json.loads(tools_json)),
        user_text="",
    )


def _example_call(tools: list[dict[str, Any]]) -> str:
    """A call of one of the domain's own tools, for the reply format's first example: the first lookup
    (`get_...`, `find_...`) that needs at most one argument, else the first tool; placeholders for values."""
    functions = [t.get("function", {}) for t in tools]
    lookups = [
        f
        for f in functions
        if str(f.get("name", "")).startswith(("get_", "find_"))
        and len(f.get("parameters", {}).get("required", [])) <= 1
    ]
    chosen = (lookups or functions or [{"name": "<tool name>"}])[0]
    required = chosen.get("parameters", {}).get("required", [])
    return json.dumps({"name": chosen["name"], "arguments": {name: f"<{name}>" for name in required}})


_TOOLS_JSON: dict[int, tuple[list[dict[str, Any]], str]] = {}


def _tools_json(tools: list[dict[str, Any]]) -> str:
    # Indented JSON goes through the slow pure-Python encoder: render each tools list once (keyed by identity,
    # the list object kept alive with its text so the id cannot be reused).
    cached = _TOOLS_JSON.get(id(tools))
    if cached is None or cached[0] is not tools:
        cached = (tools, json.dumps(tools, indent=2))
        _TOOLS_JSON[id(tools)] = cached
    return cached[1]


class TextDialect:
    name = "text"

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
        head = _frame_head(policy, _tools_json(tools))
        if not history:
            return [new_text_part(head + user_text)]
        lines = [_history_line(message) for message in agent_view(history)]
        so_far = "\n".join(line for line in lines if line is not None)
        return [
            new_text_part(
                head.removesuffix(_FIRST_MESSAGE)
                + f"{_SO_FAR}\n{so_far}\n\nThe customer's next message follows.\n{user_text}"
            )
        ]

    def user_turn(self, text: str) -> list[Part]:
        return [new_text_part(text)]

    def tool_results(self, outcomes: list[ToolOutcome]) -> list[Part]:
        return [new_text_part("\n".join(f"Tool '{o.name}' result: {o.content}" for o in outcomes))]

    def parse(self, reply: AgentReply) -> ParsedReply:
        if reply.text.strip():
            return parse_text_reply(reply.text, self.max_json_depth)
        # No text, only DataParts: accept a call there too, as agents of other greens sometimes do.
        for payload in reply.data:
            try:
                calls = calls_from_json(payload, self.max_json_depth)
            except ValueError:
                continue
            as_text = json.dumps([{"name": c.name, "arguments": c.arguments} for c in calls])
            return parse_text_reply(as_text, self.max_json_depth + 2)  # + the list and call around arguments
        return ParsedReply(
            text=json.dumps(list(reply.data)),
            warnings=("reply held only data the text dialect cannot read; it was sent to the user as text",),
        )
