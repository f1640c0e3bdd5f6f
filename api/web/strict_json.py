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

from api.settings import default_of
from green_agent.config import unstorable_reason

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
PREVIEW_CHARS = 120


class UnsafeJSON(ValueError):
    """The body is not acceptable JSON; the message says why and where."""


def preview(value: Any, limit: int = PREVIEW_CHARS) -> str:
    """`repr(value)` cut to `limit` characters, saying how long the whole was."""
    if isinstance(value, str | bytes) and len(value) > limit:
        return f"{repr(value[:limit])[:limit]}... ({len(value)} characters)"  # never repr a huge value whole
    if isinstance(value, list | tuple | dict) and len(value) > 10:
        items = list(value.items() if isinstance(value, dict) else value)[:10]
        return preview(items, limit).removesuffix("]") + f", ...] ({len(value)} items)"
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} characters)"


def _reject_constant(name: str) -> Any:
    raise UnsafeJSON(f"{name} is not a JSON number; send a finite number")


def _parse_float(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise UnsafeJSON(f"number {preview(literal, 40)} is out of range (finite 64-bit floats only)")
    return value


def _where(crumb: Crumb) -> str:
    path: list[str | int] = []
    while crumb is not None:
        key, crumb = crumb
        path.append(key)
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in reversed(path))
    return where.lstrip(".") or "the body"


# Where an item sits, as (key, parent's crumb): built per item in O(1), turned into a path only for a message.
Crumb = tuple[str | int, "Crumb"] | None


def check_value(value: Any, *, max_depth: int) -> None:
    """Walk a parsed JSON value once: depth within `max_depth`, every string (keys too) storable."""
    stack: list[tuple[Any, int, Crumb]] = [(value, 0, None)]
    while stack:
        item, depth, crumb = stack.pop()
        if depth > max_depth:
            raise UnsafeJSON(f"{_where(crumb)} is nested deeper than {max_depth} levels")
        if isinstance(item, str):
            reason = unstorable_reason(item)
            if reason:
                raise UnsafeJSON(f"{_where(crumb)} {reason}")
        elif type(item) is int and not INT64_MIN <= item <= INT64_MAX:
            raise UnsafeJSON(f"{_where(crumb)}: integer {preview(item, 40)} is out of range (64-bit only)")
        elif isinstance(item, dict):
            for key, child in item.items():
                reason = unstorable_reason(key)
                if reason:
                    raise UnsafeJSON(f"a key in {_where(crumb)} {reason}")
                stack.append((child, depth + 1, (key, crumb)))
        elif isinstance(item, list):
            stack.extend((child, depth + 1, (i, crumb)) for i, child in enumerate(item))


def loads(raw: bytes | str, *, max_depth: int = default_of("max_request_json_depth")) -> Any:
    """Parse JSON, refusing non-finite or out-of-range numbers, NUL, lone surrogates and deep nesting."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UnsafeJSON(f"the body is not valid UTF-8 (byte {exc.start})") from None
    try:
        value = json.loads(raw, parse_constant=_reject_constant, parse_float=_parse_float)
    except UnsafeJSON:
        raise
    except json.JSONDecodeError as exc:
        raise UnsafeJSON(f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except ValueError:  # an integer literal beyond Python's digit limit (4,300)
        raise UnsafeJSON("an integer in the body is out of range (64-bit integers only)") from None
    except RecursionError:
        raise UnsafeJSON(f"the body is nested deeper than {max_depth} levels") from None
    check_value(value, max_depth=max_depth)
    return value
