"""Field-level differences between two environments' DBs: what a trajectory changed that gold did not, or
the other way round. Only entities either side copied can differ, so this is cheap."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .environment import RetailEnvironment


@dataclass(frozen=True)
class Difference:
    """``path`` like ``orders/#W123/payment_history[1].amount``; ``missing`` marks an absent side."""

    path: str
    actual: Any
    expected: Any


_MISSING = object()


def _walk(path: str, actual: Any, expected: Any, out: list[Difference]) -> None:
    if isinstance(actual, dict) and isinstance(expected, dict):
        for key in list(expected) + [k for k in actual if k not in expected]:
            _walk(f"{path}.{key}", actual.get(key, _MISSING), expected.get(key, _MISSING), out)
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
                "<missing>" if actual is _MISSING else actual,
                "<missing>" if expected is _MISSING else expected,
            )
        )


def db_differences(actual: RetailEnvironment, expected: RetailEnvironment) -> list[Difference]:
    """Every leaf value that differs between two environments over the same base, in a stable order."""
    out: list[Difference] = []
    for table, key in sorted(actual.changed_keys() | expected.changed_keys()):
        _walk(f"{table}/{key}", actual.entity(table, key), expected.entity(table, key), out)
    return out
