"""One trial's environment: a copy-on-write DB over the shared base plus the 14 tools.

``call`` is the only way in, and it never raises: whatever goes wrong becomes the ``Error: ...`` tool result
upstream would have produced, and a mutation made before the failure stays (upstream does not roll back).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from domain_kit.calls import Requestor, ToolCall, ToolResult
from domain_kit.store import BaseDb, DbFingerprint, OverlayDb

from .models import upstream_message
from .schemas import TOOL_NAMES, WRITE_TOOLS
from .tools import AirlineTools

__all__ = ["AirlineEnvironment", "ToolCall", "ToolResult", "normalize_arguments"]


_ENCODER = json.JSONEncoder(default=str)


def _render(value: Any) -> str:
    # Upstream: strings go out as-is, models and lists of them as json.dumps(model_dump(), default=str) with
    # default separators; one shared encoder with those options.
    if isinstance(value, str):
        return value
    return _ENCODER.encode(value)


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
    return {key: _NORMALIZERS.get(key, _keep)(value) for key, value in arguments.items()}


def _keep(value: Any) -> Any:
    return value


class AirlineEnvironment:
    """The DB and tools of one trial. Cheap to create: nothing is copied until a tool writes."""

    __slots__ = ("_db", "_hash", "_normalize_ids", "_tools")

    def __init__(self, base: BaseDb, normalize_ids: bool = False) -> None:
        self._db = OverlayDb(base)
        self._tools = AirlineTools(self._db)
        self._normalize_ids = normalize_ids
        self._hash: str | None = base.initial_hash

    @property
    def normalize_ids(self) -> bool:
        return self._normalize_ids

    def call(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        requestor: Requestor = "assistant",
    ) -> ToolResult:
        """Run one tool call; never raises. The customer has no airline tools: any name is unknown to it."""
        try:
            if name not in TOOL_NAMES or requestor != "assistant":
                raise ValueError(f"Tool '{name}' not found.")
            if arguments is None:
                arguments = {}
            if not isinstance(arguments, Mapping):
                raise TypeError(f"tool arguments must be a JSON object, not {type(arguments).__name__}")
            if self._normalize_ids:
                arguments = normalize_arguments(arguments)
            if name in WRITE_TOOLS:
                self._hash = None
            return ToolResult(_render(getattr(self._tools, name)(**arguments)), False)
        except Exception as exc:
            return ToolResult(f"Error: {upstream_message(exc)}", True)

    def call_tool(self, call: ToolCall) -> ToolResult:
        return self.call(call.name, call.arguments, call.requestor)

    def db_hash(self, known: object | None = None) -> str:
        """Upstream's hash of the whole DB (sha256 of the sorted-key JSON of its model_dump()). Given the
        fingerprint of a DB hashed before (the task's gold end state), a DB equal to that one takes its hash
        instead of hashing 3.4 MB again."""
        if self._hash is None:
            self._hash = self._db.db_hash(known if isinstance(known, DbFingerprint) else None)
        return self._hash

    def user_db_hash(self) -> str | None:
        """The customer has no DB in airline."""
        return None

    def assertion(self, func_name: str, arguments: Mapping[str, Any], env_type: str) -> bool:
        """Airline has no env assertion functions (no airline task names one)."""
        raise ValueError(f"Function '{func_name}' not found.")

    def db_fingerprint(self) -> DbFingerprint:
        return self._db.fingerprint()

    def changed_entities(self) -> int:
        """How many flights, reservations and users this trial has copied or added (its memory cost)."""
        return self._db.changed_count()

    def changed_keys(self) -> set[tuple[str, str]]:
        """(table, id) of every entity this trial has copied (possibly without changing it) or added."""
        return set(self._db.changed()) | set(self._db.added())

    def entity(self, table: str, key: str) -> Any:
        """The current state of one flight, reservation or user (read-only: do not mutate); None for an id
        this trial does not have (a reservation another trial booked)."""
        return self._db.get(table, key) if self._db.has(table, key) else None

    def dump(self) -> dict[str, Any]:
        """The whole DB as upstream's model_dump() (a deep copy; slow, for debugging)."""
        return self._db.dump()
