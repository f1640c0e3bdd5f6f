"""Field-level differences between two environments' DBs over the same base: what a trajectory changed that
gold did not, or the other way round.

Domains on the copy-on-write store (retail, airline) say which entities a trial copied or added
(`changed_keys`) and give each one (`entity`): only those can differ, so this is cheap. A domain without them
but with a `dump()` of its DB (telecom) is compared whole."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class Difference:
    """``path`` like ``orders/#W123.payment_history[1].amount``; ``"<missing>"`` marks an absent side."""

    path: str
    actual: Any
    expected: Any


@runtime_checkable
class EntityStore(Protocol):
    """An environment over the copy-on-write store (domain_kit/store.py)."""

    def changed_keys(self) -> set[tuple[str, str]]:
        """(table, id) of every entity the environment copied or added."""
        ...

    def entity(self, table: str, key: str) -> Any:
        """One entity as the environment holds it (read-only); None for an id it does not have."""
        ...


@runtime_checkable
class Dumpable(Protocol):
    def dump(self) -> dict[str, Any]:
        """The whole DB as plain data."""
        ...


MISSING = "<missing>"
_ABSENT = object()


def _walk(path: str, actual: Any, expected: Any, out: list[Difference]) -> None:
    if isinstance(actual, dict) and isinstance(expected, dict):
        for key in list(expected) + [k for k in actual if k not in expected]:
            _walk(
                f"{path}.{key}" if path else str(key),
                actual.get(key, _ABSENT),
                expected.get(key, _ABSENT),
                out,
            )
        return
    if isinstance(actual, list) and isinstance(expected, list) and len(actual) == len(expected):
        for index, (left, right) in enumerate(zip(actual, expected, strict=True)):
            _walk(f"{path}[{index}]", left, right, out)
        return
    # Compare with types: upstream's hash tells 0 from 0.0 (json prints them differently).
    if type(actual) is not type(expected) or actual != expected:
        out.append(
            Difference(
                path,
                MISSING if actual is _ABSENT else actual,
                MISSING if expected is _ABSENT else expected,
            )
        )


def _present(value: Any) -> Any:
    return _ABSENT if value is None else value


def db_differences(actual: object, expected: object) -> list[Difference]:
    """Every leaf value that differs between two environments of one domain, in a stable order; empty when
    the domain's environments can tell neither which entities changed nor their whole DB."""
    out: list[Difference] = []
    if isinstance(actual, EntityStore) and isinstance(expected, EntityStore):
        for table, key in sorted(actual.changed_keys() | expected.changed_keys()):
            _walk(
                f"{table}/{key}",
                _present(actual.entity(table, key)),
                _present(expected.entity(table, key)),
                out,
            )
    elif isinstance(actual, Dumpable) and isinstance(expected, Dumpable):
        _walk("", actual.dump(), expected.dump(), out)
    return out


def value_differences(actual: Any, expected: Any) -> list[Difference]:
    """Every leaf value that differs between two plain-data values (dicts, lists, scalars), in a stable
    order: e.g. one side's DB dump at the end of a trial against the same at its start."""
    out: list[Difference] = []
    _walk("", actual, expected, out)
    return out
