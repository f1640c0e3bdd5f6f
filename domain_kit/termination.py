"""How a conversation ended, and the v1 gate: only a clean exit can score above 0."""

from __future__ import annotations

from enum import StrEnum


class TerminationReason(StrEnum):
    USER_STOP = "user_stop"
    AGENT_STOP = "agent_stop"
    MAX_STEPS = "max_steps"
    TOO_MANY_ERRORS = "too_many_errors"
    AGENT_ERROR = "agent_error"
    USER_ERROR = "user_error"
    INFRASTRUCTURE_ERROR = "infrastructure_error"
    INTERNAL_ERROR = "internal_error"
    """Not upstream's: a bug of ours met while handling the agent's input; scores 0, never excluded."""


CLEAN_EXITS = frozenset({TerminationReason.USER_STOP, TerminationReason.AGENT_STOP})


def is_clean_exit(reason: TerminationReason | str) -> bool:
    """The v1 termination gate: only a user or agent stop can score above 0."""
    return str(reason) in CLEAN_EXITS
