"""One retail trial's environment: domain_kit's copy-on-write environment with the 16 tools
(domain_kit/store_environment.py: `call` never raises; errors are upstream's tool results) and the optional
normalization of the ids an agent spells.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from domain_kit.calls import ToolCall, ToolResult
from domain_kit.store import OverlayDb
from domain_kit.store_environment import StoreEnvironment, normalized

from .schemas import TOOL_NAMES, WRITE_TOOLS
from .tools import RetailTools

__all__ = ["RetailEnvironment", "ToolCall", "ToolResult", "normalize_arguments"]


def _canonical_order_id(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    text = value.strip().upper()
    return text if text.startswith("#") else "#" + text


def _lower_id(value: Any) -> Any:
    return value.strip().lower() if isinstance(value, str) else value


def _stripped(value: Any) -> Any:
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, list):
        return [item.strip() if isinstance(item, str) else item for item in value]
    return value


# Optional lookup normalization (off by default, see the semantics doc section 10): agents fed by speech
# recognition spell ids inconsistently. Only the identifiers are touched; free text (addresses, reasons)
# never is.
_NORMALIZERS = {
    "order_id": _canonical_order_id,
    "user_id": _lower_id,
    "email": _lower_id,
    "payment_method_id": _lower_id,
    "product_id": _stripped,
    "item_id": _stripped,
    "item_ids": _stripped,
    "new_item_ids": _stripped,
}


def normalize_arguments(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Canonical spelling of the id arguments of a call; other keys and non-string values are left alone."""
    return normalized(arguments, _NORMALIZERS)


class RetailEnvironment(StoreEnvironment):
    """The DB and the 16 tools of one trial. Cheap to create: nothing is copied until a tool writes."""

    __slots__ = ()
    tool_names = frozenset(TOOL_NAMES)
    write_tools = WRITE_TOOLS
    normalizers = _NORMALIZERS

    def make_tools(self, db: OverlayDb) -> RetailTools:
        return RetailTools(db)
