"""Tolerant reading of white-agent replies in the text dialect.

White agents written for other green agents wrap their JSON in many ways. We look for JSON in this order:
`<json>...</json>`, a fenced code block, the whole text, the first balanced `{...}`; and accept these
shapes: `{"name", "arguments"}` (`kwargs` is an alias), `{"tool_call": {...}}`, `{"tool_calls": [...]}`, a
list of calls, and OpenAI's `{"function": {"name", "arguments"}}` with arguments as a JSON string. A call
named `respond` is a message to the user (`arguments.content`). Anything we cannot read goes to the user as
text, with a warning.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

RESPOND = "respond"

_JSON_TAG = re.compile(r"<json>\s*(.*?)\s*</json>", re.DOTALL | re.IGNORECASE)
_MAX_BRACE_STARTS = 32
"""Bounds the brace scan, which is quadratic in the worst case (a long reply full of braces)."""
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


class _ShapeError(ValueError):
    pass


def parse_text_reply(text: str) -> ParsedReply:
    """Read one text-dialect reply; never raises."""
    found = False
    shape_problem = ""
    for candidate in json_candidates(text):
        found = True
        try:
            calls = calls_from_json(candidate)
        except _ShapeError as exc:
            shape_problem = str(exc)
            continue
        return _split_respond(calls)
    if found:
        warning = f"reply JSON is not a tool call ({shape_problem}); it was sent to the user as text"
    else:
        warning = "reply is not JSON; it was sent to the user as text"
    return ParsedReply(text=text, warnings=(warning,))


def calls_from_json(value: Any) -> list[ParsedCall]:
    """Normalize every accepted shape to a list of calls; raises `_ShapeError` with the reason."""
    if isinstance(value, list):
        if not value:
            raise _ShapeError("empty list")
        return [call for item in value for call in calls_from_json(item)]
    if not isinstance(value, dict):
        raise _ShapeError(f"a JSON {type(value).__name__}, not an object")
    if "tool_calls" in value and isinstance(value["tool_calls"], list):
        return calls_from_json(value["tool_calls"])
    if "tool_call" in value and isinstance(value["tool_call"], dict):
        return calls_from_json(value["tool_call"])
    if "function" in value and isinstance(value["function"], dict):
        inner = dict(value["function"])
        inner.setdefault("id", value.get("id"))
        return calls_from_json(inner)
    return [_single_call(value)]


def _single_call(value: dict[str, Any]) -> ParsedCall:
    name = value.get("name")
    if not isinstance(name, str) or not name.strip():
        raise _ShapeError("no string 'name'")
    arguments: Any = value.get("arguments", value.get("kwargs", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            raise _ShapeError(f"'arguments' of {name!r} is a string that is not JSON") from exc
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise _ShapeError(f"'arguments' of {name!r} is not an object")
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


def json_candidates(text: str) -> Iterator[Any]:
    """Yield parsed JSON values found in the text, most explicit wrapping first."""
    seen: set[str] = set()

    def attempt(raw: str) -> Iterator[Any]:
        raw = raw.strip()
        if not raw or raw in seen:
            return
        seen.add(raw)
        try:
            yield json.loads(raw)
        except json.JSONDecodeError:
            return

    for match in _JSON_TAG.finditer(text):
        yield from attempt(match.group(1))
    for match in _FENCE.finditer(text):
        yield from attempt(match.group(1))
    yield from attempt(text)
    for raw in _balanced_objects(text):
        yield from attempt(raw)


def _balanced_objects(text: str) -> Iterator[str]:
    """Each balanced `{...}` substring, by start position, honouring JSON strings and escapes."""
    start = text.find("{")
    tried = 0
    while start != -1 and tried < _MAX_BRACE_STARTS:
        tried += 1
        end = _matching_brace(text, start)
        if end is not None:
            yield text[start : end + 1]
        start = text.find("{", start + 1)


def _matching_brace(text: str, start: int) -> int | None:
    depth = 0
    in_string = False
    escaped = False
    for pos in range(start, len(text)):
        char = text[pos]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return pos
    return None
