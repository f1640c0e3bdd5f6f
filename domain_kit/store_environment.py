"""One trial's environment in a domain whose trials share one copy-on-write DB (retail, airline): the DB
overlay, the domain's tools over it, and the single way in, `call`, which never raises.

Whatever goes wrong becomes the ``Error: ...`` tool result upstream would have produced, and a mutation made
before the failure stays (upstream does not roll back). A domain subclass names its tools (`make_tools`,
`tool_names`, `write_tools`), the optional id normalizers, and how an exception's text reads.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from .calls import Requestor, ToolCall, ToolResult
from .store import BaseDb, DbFingerprint, OverlayDb

Normalizers = Mapping[str, Callable[[Any], Any]]

_ENCODER = json.JSONEncoder(default=str)


def render(value: Any) -> str:
    """A tool's return value as the caller sees it: strings as they are, models and lists of them as
    upstream's json.dumps(model_dump(), default=str) with default separators (one shared encoder)."""
    if isinstance(value, str):
        return value
    return _ENCODER.encode(value)


def normalized(arguments: Mapping[str, Any], normalizers: Normalizers) -> dict[str, Any]:
    """Canonical spelling of the id arguments of a call; other keys and non-string values are left alone."""
    return {key: normalizers[key](value) if key in normalizers else value for key, value in arguments.items()}


class StoreEnvironment:
    """The DB and tools of one trial. Cheap to create: nothing is copied until a tool writes."""

    __slots__ = ("_db", "_hash", "_normalize_ids", "_tools")

    tool_names: ClassVar[frozenset[str]]
    write_tools: ClassVar[frozenset[str]]
    normalizers: ClassVar[Normalizers] = {}
    """Optional lookup normalization (off by default, as upstream has none): agents fed by speech
    recognition spell ids inconsistently. Only identifiers, never free text."""

    def __init__(self, base: BaseDb, normalize_ids: bool = False) -> None:
        self._db = OverlayDb(base)
        self._tools = self.make_tools(self._db)
        self._normalize_ids = normalize_ids
        self._hash: str | None = base.initial_hash

    def make_tools(self, db: OverlayDb) -> object:
        """The domain's tools over this trial's DB: one method per tool, upstream's names and parameters."""
        raise NotImplementedError

    @staticmethod
    def error_text(exc: Exception) -> str:
        """An exception's text as upstream's tool result says it (after ``Error: ``)."""
        return str(exc)

    @property
    def normalize_ids(self) -> bool:
        return self._normalize_ids

    def call(
        self, name: str, arguments: Mapping[str, Any] | None = None, requestor: Requestor = "assistant"
    ) -> ToolResult:
        """Run one tool call; never raises. The customer has no tools in these domains: every name it calls
        is unknown to it."""
        try:
            if name not in self.tool_names or requestor != "assistant":
                raise ValueError(f"Tool '{name}' not found.")
            if arguments is None:
                arguments = {}
            if not isinstance(arguments, Mapping):
                raise TypeError(f"tool arguments must be a JSON object, not {type(arguments).__name__}")
            if self._normalize_ids:
                arguments = normalized(arguments, self.normalizers)
            if name in self.write_tools:
                self._hash = None
            return ToolResult(render(getattr(self._tools, name)(**arguments)), False)
        except Exception as exc:
            return ToolResult(f"Error: {self.error_text(exc)}", True)

    def call_tool(self, call: ToolCall) -> ToolResult:
        return self.call(call.name, call.arguments, call.requestor)

    def db_hash(self, known: object | None = None) -> str:
        """Upstream's hash of the whole DB (sha256 of the sorted-key JSON of its model_dump()). Given the
        fingerprint of a DB hashed before (the task's gold end state), a DB equal to that one takes its hash
        instead of hashing the whole DB again."""
        if self._hash is None:
            self._hash = self._db.db_hash(known if isinstance(known, DbFingerprint) else None)
        return self._hash

    def user_db_hash(self) -> str | None:
        """The customer has no DB in these domains."""
        return None

    def assertion(self, func_name: str, arguments: Mapping[str, Any], env_type: str) -> bool:
        """These domains have no env assertion functions (none of their tasks names one)."""
        raise ValueError(f"Function '{func_name}' not found.")

    def db_fingerprint(self) -> DbFingerprint:
        return self._db.fingerprint()

    def changed_entities(self) -> int:
        """How many entities this trial has copied or added (a measure of its memory cost)."""
        return self._db.changed_count()

    def changed_keys(self) -> set[tuple[str, str]]:
        """(table, id) of every entity this trial has copied (possibly without changing it) or added."""
        return set(self._db.changed()) | set(self._db.added())

    def entity(self, table: str, key: str) -> Any:
        """The current state of one entity (read-only: do not mutate); None for an id this trial does not
        have (a reservation another trial booked)."""
        return self._db.get(table, key) if self._db.has(table, key) else None

    def dump(self) -> dict[str, Any]:
        """The whole DB as upstream's model_dump() (a deep copy; slow, for debugging)."""
        return self._db.dump()
