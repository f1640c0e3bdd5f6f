"""Tolerant reading of white-agent replies in the text dialect.

White agents written for other green agents wrap their JSON in many ways. We look for JSON in this order:
`<json>...</json>`, a fenced code block, the whole text, the first balanced `{...}`; and accept these
shapes: `{"name", "arguments"}` (`kwargs` is an alias), `{"tool_call": {...}}`, `{"tool_calls": [...]}`, a
list of calls, and OpenAI's `{"function": {"name", "arguments"}}` with arguments as a JSON string. A call
named `respond` is a message to the user (`arguments.content`). Anything we cannot read goes to the user as
text, with a warning.

The text is the agent's, so reading it must be safe and linear: JSON nested deeper than `max_depth` is not
parsed (it could exhaust the stack), numbers too long for Python are not JSON to us, and the brace scan makes
one pass over the text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from green_agent.core.limits import json_depth_within

RESPOND = "respond"
DEFAULT_MAX_DEPTH = 32

_JSON_TAG = re.compile(r"<json>\s*(.*?)\s*</json>", re.DOTALL | re.IGNORECASE)
_MAX_BRACE_STARTS = 32
"""How many `{` positions (the first ones) are tried as the start of an embedded JSON object."""
_NEXT_BRACE = re.compile(r'(?:[^{}"]++|"[^"\\]*+(?:\\.[^"\\]*+)*+")*+([{}])', re.DOTALL)
"""From inside an object to its next brace, over JSON strings; possessive, so it never backtracks (no match:
an unterminated string runs to the end of the text)."""
_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)```", re.DOTALL)


@dataclass(frozen=True)
class ParsedCall:
    name: str
    arguments: dict[str, Any]
    id: str | None = None


@dataclass(frozen=True)
class ParsedReply:
    """What a reply asks for: tool calls to run, and/or text meant for the user."""

    calls: tuple[ParsedCall, ...] = ()
    text: str | None = None
    warnings: tuple[str, ...] = field(default=())


class ShapeError(ValueError):
    """JSON that is no tool call in any accepted shape; the message says why."""


def parse_text_reply(text: str, max_depth: int = DEFAULT_MAX_DEPTH) -> ParsedReply:
    """Read one text-dialect reply; never raises."""
    found = False
    shape_problem = ""
    for candidate in json_candidates(text, max_depth):
        found = True
        try:
            calls = calls_from_json(candidate, max_depth)
        except ShapeError as exc:
            shape_problem = str(exc)
            continue
        return _split_respond(calls)
    if found:
        warning = f"reply JSON is not a tool call ({shape_problem}); it was sent to the user as text"
    else:
        warning = "reply is not JSON; it was sent to the user as text"
    return ParsedReply(text=text, warnings=(warning,))


def calls_from_json(value: Any, max_depth: int = DEFAULT_MAX_DEPTH) -> list[ParsedCall]:
    """Normalize every accepted shape to a list of calls; raises `ShapeError` with the reason.

    `value` comes from `json.loads` of text within `max_depth`, so the recursion here is bounded."""
    if isinstance(value, list):
        if not value:
            raise ShapeError("empty list")
        return [call for item in value for call in calls_from_json(item, max_depth)]
    if not isinstance(value, dict):
        raise ShapeError(f"a JSON {type(value).__name__}, not an object")
    if "tool_calls" in value and isinstance(value["tool_calls"], list):
        return calls_from_json(value["tool_calls"], max_depth)
    if "tool_call" in value and isinstance(value["tool_call"], dict):
        return calls_from_json(value["tool_call"], max_depth)
    if "function" in value and isinstance(value["function"], dict):
        inner = dict(value["function"])
        inner.setdefault("id", value.get("id"))
        return calls_from_json(inner, max_depth)
    return [_single_call(value, max_depth)]


def _single_call(value: dict[str, Any], max_depth: int) -> ParsedCall:
    name = value.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ShapeError("no string 'name'")
    arguments: Any = value.get("arguments", value.get("kwargs", {}))
    if isinstance(arguments, str):
        if not json_depth_within(arguments, max_depth):
            raise ShapeError(f"'arguments' of {name!r} is a string nested deeper than {max_depth}")
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError as exc:  # JSONDecodeError, or a number too long for Python's int
            raise ShapeError(f"'arguments' of {name!r} is a string that is not JSON") from exc
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise ShapeError(f"'arguments' of {name!r} is not an object")
    call_id = value.get("id")
    call_id = call_id if isinstance(call_id, str) else None
    return ParsedCall(name=name.strip(), arguments=arguments, id=call_id)


def _split_respond(calls: list[ParsedCall]) -> ParsedReply:
    tools = tuple(c for c in calls if c.name != RESPOND)
    texts: list[str] = []
    warnings: list[str] = []
    for call in calls:
        if call.name != RESPOND:
            continue
        content = call.arguments.get("content")
        if isinstance(content, str):
            texts.append(content)
        else:
            texts.append(json.dumps(call.arguments))
            warnings.append("'respond' without a string 'content'; its arguments were sent as text")
    return ParsedReply(calls=tools, text="\n".join(texts) if texts else None, warnings=tuple(warnings))


def json_candidates(text: str, max_depth: int = DEFAULT_MAX_DEPTH) -> Iterator[Any]:
    """Yield parsed JSON values found in the text, most explicit wrapping first; JSON nested deeper than
    `max_depth` is skipped unparsed."""
    seen: set[str] = set()

    def attempt(raw: str) -> Iterator[Any]:
        raw = raw.strip()
        if not raw or raw in seen:
            return
        seen.add(raw)
        if not json_depth_within(raw, max_depth):
            return
        try:
            yield json.loads(raw)
        except ValueError:  # JSONDecodeError, or a number too long for Python's int
            return

    for match in _JSON_TAG.finditer(text):
        yield from attempt(match.group(1))
    for match in _FENCE.finditer(text):
        yield from attempt(match.group(1))
    yield from attempt(text)
    for raw in _balanced_objects(text, max_depth):
        yield from attempt(raw)


def _balanced_objects(text: str, max_depth: int) -> Iterator[str]:
    """The balanced `{...}` substrings starting at the first `_MAX_BRACE_STARTS` braces, by start position.

    One pass: outside any object the next `{` is found with `str.find` (quotes there are prose); inside, a
    regular expression steps from brace to brace over JSON strings. So the Python loop runs once per brace,
    and the rest is linear in C. Once braces nest deeper than `max_depth` inside every tried start, the scan
    stops: those objects would be too deep to parse anyway."""
    stack: list[int] = []  # start positions of open braces; -1 for braces past the tried ones
    tried = 0
    ends: dict[int, int] = {}
    pos = 0
    while True:
        if not stack:
            if tried == _MAX_BRACE_STARTS:
                break
            pos = text.find("{", pos)
            if pos == -1:
                break
            char, at = "{", pos
        else:
            token = _NEXT_BRACE.match(text, pos)
            if token is None:
                break
            char, at = token.group(1), token.start(1)
        pos = at + 1
        if char == "{":
            if tried < _MAX_BRACE_STARTS:
                tried += 1
                stack.append(at)
            else:
                stack.append(-1)
                if len(stack) > _MAX_BRACE_STARTS + max_depth:  # tried starts all sit below index 32
                    break
        elif char == "}":
            start = stack.pop()
            if start >= 0:
                ends[start] = at
    for start in sorted(ends):
        yield text[start : ends[start] + 1]
