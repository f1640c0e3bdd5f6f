"""What a domain tells the engine about a task's expected end state and a trial's actual one."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from .calls import ToolCall


@dataclass(frozen=True)
class GoldOutcome:
    """A task's gold replay: ``db_hash`` of the expected end state (``fingerprint``: what lets the domain
    tell a DB equal to it without hashing it whole; pass it back to ``db_hash(known=...)``); the reference
    calls, ready for an oracle to make; ``failed_calls``: (index in the calls, tool name, error content) of
    the gold calls that failed (upstream skips them); ``user_db_hash`` where the customer has a DB."""

    db_hash: str
    reference_calls: tuple[ToolCall, ...] = field(repr=False)
    failed_calls: tuple[tuple[int, str, str], ...]
    fingerprint: object | None = field(default=None, repr=False)
    user_db_hash: str | None = None

    @property
    def actions(self) -> tuple[ToolCall, ...]:
        """The reference calls, deep-copied on every access: the outcome is cached and shared per process."""
        return tuple(
            ToolCall(call.name, copy.deepcopy(call.arguments), call.requestor)
            for call in self.reference_calls
        )


@dataclass(frozen=True)
class AssertionCheck:
    """One env assertion run on a trial's end state: ``expected`` is its assert_value, ``actual`` what the
    function returned (None: it raised, ``error`` says how); ``found``, where the domain can say, what the end
    state held where the function looked ("service status is no_service"), for a reader of a failure."""

    func_name: str
    env_type: str
    arguments: dict[str, Any]
    expected: bool
    actual: bool | None
    message: str | None = None
    error: str | None = None
    found: str | None = None

    @property
    def met(self) -> bool:
        return self.actual is not None and self.actual == self.expected


@dataclass(frozen=True)
class EnvironmentCheck:
    """What upstream's environment evaluator finds for one trajectory: the agent DB against gold
    (``db_matched``) and every env assertion of the task (``assertions``, empty where the task has none)."""

    db_matched: bool
    db_expected_hash: str
    db_actual_hash: str
    assertions: tuple[AssertionCheck, ...] = ()
    user_db_hash: str | None = None

    @property
    def assertions_met(self) -> bool:
        return all(check.met for check in self.assertions)
