"""One airline trial's environment: domain_kit's copy-on-write environment with the 14 tools
(domain_kit/store_environment.py: `call` never raises; errors are upstream's tool results) and the optional
normalization of the ids an agent spells.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from domain_kit.calls import ToolCall, ToolResult
from domain_kit.store import OverlayDb
from domain_kit.store_environment import StoreEnvironment, normalized

from .models import upstream_message
from .schemas import TOOL_NAMES, WRITE_TOOLS
from .tools import AirlineTools

__all__ = ["AirlineEnvironment", "ToolCall", "ToolResult", "normalize_arguments"]


def _upper_id(value: Any) -> Any:
    return value.strip().upper() if isinstance(value, str) else value


def _lower_id(value: Any) -> Any:
    return value.strip().lower() if isinstance(value, str) else value


# Optional lookup normalization (off by default, as upstream has none): agents fed by speech recognition
# spell ids inconsistently. Only top-level identifiers are touched; names, dates and amounts never are.
_NORMALIZERS = {
    "reservation_id": _upper_id,
    "flight_number": _upper_id,
    "origin": _upper_id,
    "destination": _upper_id,
    "user_id": _lower_id,
    "payment_id": _lower_id,
}


def normalize_arguments(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Canonical spelling of the id arguments of a call; other keys and non-string values are left alone."""
    return normalized(arguments, _NORMALIZERS)


class AirlineEnvironment(StoreEnvironment):
    """The DB and the 14 tools of one trial. Cheap to create: nothing is copied until a tool writes."""

    __slots__ = ()
    tool_names = frozenset(TOOL_NAMES)
    write_tools = WRITE_TOOLS
    normalizers = _NORMALIZERS
    error_text = staticmethod(upstream_message)

    def make_tools(self, db: OverlayDb) -> AirlineTools:
        return AirlineTools(db)
