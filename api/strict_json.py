"""Strict JSON for outside input: what `json.loads` accepts but this service must not.

Python's parser takes `NaN`, `Infinity` and `1e999` (which becomes inf), integers of any length, and
strings holding NUL or lone surrogates; each of these later failed somewhere else (a 500 when a response
could not be serialized, PostgreSQL refusing NUL, integer columns overflowing). `loads` refuses them up front
with a message that says where, in one pass over the text plus one linear walk over the result.

`preview` shortens any input quoted back in an error message, so an error never echoes a large body.
"""

from __future__ import annotations

import json
import math
from typing import Any

from green_agent.config import unstorable_reason

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
# Longest decimal integer literal that can fit in 64 bits (sign included); longer ones are refused before
# Python converts them (the conversion of a huge literal is itself quadratic).
_MAX_INT_LITERAL = 20
PREVIEW_CHARS = 120


class UnsafeJSON(ValueError):
    """The body is not acceptable JSON; the message says why and where."""


def preview(value: Any, limit: int = PREVIEW_CHARS) -> str:
    """`repr(value)` cut to `limit` characters, saying how long the whole was."""
    if isinstance(value, str | bytes) and len(value) > limit * 4:
        value = value[: limit * 4]  # never repr a huge string whole
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} characters)"


def _reject_constant(name: str) -> Any:
    raise UnsafeJSON(f"{name} is not a JSON number; send a finite number")


def _parse_int(literal: str) -> int:
    digits = literal.lstrip("-")
    if len(digits) > _MAX_INT_LITERAL - 1:
        raise UnsafeJSON(f"integer {preview(literal, 40)} is out of range (64-bit integers only)")
    value = int(literal)
    if not INT64_MIN <= value <= INT64_MAX:
        raise UnsafeJSON(f"integer {literal} is out of range (64-bit integers only)")
    return value


def _parse_float(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise UnsafeJSON(f"number {preview(literal, 40)} is out of range (finite 64-bit floats only)")
    return value


def _where(path: list[str | int]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".") or "the body"


def check_value(value: Any, *, max_depth: int) -> None:
    """Walk a parsed JSON value once: depth within `max_depth`, every string (keys too) storable."""
    stack: list[tuple[Any, list[str | int]]] = [(value, [])]
    while stack:
        item, path = stack.pop()
        if len(path) > max_depth:
            raise UnsafeJSON(f"{_where(path[:max_depth])} is nested deeper than {max_depth} levels")
        if isinstance(item, str):
            reason = unstorable_reason(item)
            if reason:
                raise UnsafeJSON(f"{_where(path)} {reason}")
        elif isinstance(item, dict):
            for key, child in item.items():
                reason = unstorable_reason(key)
                if reason:
                    raise UnsafeJSON(f"a key in {_where(path)} {reason}")
                stack.append((child, [*path, key]))
        elif isinstance(item, list):
            stack.extend((child, [*path, i]) for i, child in enumerate(item))


def loads(raw: bytes | str, *, max_depth: int = 32) -> Any:
    """Parse JSON, refusing non-finite or out-of-range numbers, NUL, lone surrogates and deep nesting."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UnsafeJSON(f"the body is not valid UTF-8 (byte {exc.start})") from None
    try:
        value = json.loads(
            raw, parse_constant=_reject_constant, parse_int=_parse_int, parse_float=_parse_float
        )
    except json.JSONDecodeError as exc:
        raise UnsafeJSON(f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise UnsafeJSON(f"the body is nested deeper than {max_depth} levels") from None
    check_value(value, max_depth=max_depth)
    return value
