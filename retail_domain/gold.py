"""Gold replay: the expected end state of a task, computed as upstream does.

Every reference action runs in order on a fresh environment, reads included; a gold call that fails is
recorded and skipped (15 tasks contain such calls on purpose or by staleness), exactly like upstream's
evaluator.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from .environment import RetailEnvironment, ToolCall
from .store import BaseDb, DbFingerprint
from .tasks import Task


@dataclass(frozen=True)
class GoldOutcome:
    """``db``: the expected end state (its hash, and what tells a DB equal to it without hashing);
    ``actions``: the reference calls, ready for an oracle agent to make; ``failed_calls``: (index in actions,
    tool name, error content) of the gold calls that failed."""

    db: DbFingerprint
    reference_calls: tuple[ToolCall, ...] = field(repr=False)
    failed_calls: tuple[tuple[int, str, str], ...]

    @property
    def db_hash(self) -> str:
        return self.db.db_hash

    @property
    def actions(self) -> tuple[ToolCall, ...]:
        """The reference calls, deep-copied on every access: the outcome is cached and shared per process."""
        return tuple(ToolCall(call.name, copy.deepcopy(call.arguments)) for call in self.reference_calls)


def replay_gold(base: BaseDb, task: Task) -> GoldOutcome:
    env = RetailEnvironment(base)
    failed: list[tuple[int, str, str]] = []
    actions = tuple(action.to_tool_call() for action in task.gold_actions)
    for index, call in enumerate(actions):
        result = env.call(call.name, call.arguments)
        if result.error:
            failed.append((index, call.name, result.content))
    return GoldOutcome(db=env.db_fingerprint(), reference_calls=actions, failed_calls=tuple(failed))
