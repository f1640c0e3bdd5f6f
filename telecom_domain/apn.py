"""Validating the one tool argument upstream validates: ``set_apn_settings``'s settings object.

Upstream builds its APN settings model from the object the customer sends; a bad object fails the call with
pydantic's validation report, which the customer then reads. This reproduces that report (same lax
conversions, same wording, same order: the fields in declaration order, then unknown keys) for the fields
an APN has, so the customer sees what upstream's customer would.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from .phone import APNNames, APNSettings

# Upstream's reports name the pydantic it ran with (2.12.4); the URL is part of the message.
_DOCS = "https://errors.pydantic.dev/2.12/v/"
_TRUE = {"1", "on", "t", "true", "y", "yes"}
_FALSE = {"0", "off", "f", "false", "n", "no"}


class _Invalid(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def _apn_name(value: Any) -> APNNames:
    if isinstance(value, str):
        for member in APNNames:
            if value == member.value:
                return member
    raise _Invalid("enum", "Input should be 'internet' or 'broken'")


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        if value in (0, 1):
            return bool(value)
        raise _Invalid("bool_parsing", "Input should be a valid boolean, unable to interpret input")
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise _Invalid("bool_parsing", "Input should be a valid boolean, unable to interpret input")
    raise _Invalid("bool_type", "Input should be a valid boolean")


def _optional_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise _Invalid("string_type", "Input should be a valid string")


def _optional_integer(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _Invalid("finite_number", "Input should be a finite number")
        if not value.is_integer():
            raise _Invalid(
                "int_from_float", "Input should be a valid integer, got a number with a fractional part"
            )
        if abs(value) > 2**63:
            raise _Invalid(
                "int_parsing_size", "Unable to parse input string as an integer, exceeded maximum size"
            )
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        if text.lstrip("+-").isdigit() and text.isascii():
            return int(text)
        raise _Invalid("int_parsing", "Input should be a valid integer, unable to parse string as an integer")
    raise _Invalid("int_type", "Input should be a valid integer")


_FIELDS = {
    "apn_name": _apn_name,
    "reset_at_reboot": _boolean,
    "mms_apn": _optional_text,
    "mmsc_url": _optional_text,
    "mms_proxy": _optional_text,
    "mms_port": _optional_integer,
}


def _shown(value: Any) -> str:
    # pydantic's input_value: the repr, cut in the middle when longer than 50 characters.
    text = repr(value)
    return text if len(text) <= 50 else f"{text[:25]}...{text[-24:]}"


def validate_apn_settings(raw: Mapping[str, Any]) -> APNSettings:
    """APN settings from a JSON object, or ValueError with pydantic's report (as upstream's tool error)."""
    values: dict[str, Any] = {}
    problems: list[tuple[str, Any, _Invalid]] = []
    for name, convert in _FIELDS.items():
        if name in raw:
            try:
                values[name] = convert(raw[name])
            except _Invalid as failure:
                problems.append((name, raw[name], failure))
    for key, value in raw.items():
        if key not in _FIELDS:
            problems.append((str(key), value, _Invalid("extra_forbidden", "Extra inputs are not permitted")))
    if problems:
        count = f"{len(problems)} validation error{'s' if len(problems) > 1 else ''} for APNSettings"
        lines = [count]
        for name, value, problem in problems:
            lines.append(name)
            lines.append(
                f"  {problem.message} [type={problem.kind}, input_value={_shown(value)}, "
                f"input_type={type(value).__name__}]"
            )
            lines.append(f"    For further information visit {_DOCS}{problem.kind}")
        raise ValueError("\n".join(lines))
    return APNSettings(**values)
