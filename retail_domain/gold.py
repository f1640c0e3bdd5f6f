"""Gold replay: the expected end state of a task, computed as upstream does.

Every reference action runs in order on a fresh environment, reads included; a gold call that fails is
recorded and skipped (15 tasks contain such calls on purpose or by staleness), exactly like upstream's
evaluator.
"""

from __future__ import annotations

from domain_kit.outcomes import GoldOutcome
from domain_kit.store import BaseDb
from domain_kit.tasks import Task

from .environment import RetailEnvironment


def replay_gold(base: BaseDb, task: Task) -> GoldOutcome:
    env = RetailEnvironment(base)
    failed: list[tuple[int, str, str]] = []
    actions = tuple(action.to_tool_call() for action in task.gold_actions)
    for index, call in enumerate(actions):
        result = env.call(call.name, call.arguments)
        if result.error:
            failed.append((index, call.name, result.content))
    fingerprint = env.db_fingerprint()
    return GoldOutcome(
        db_hash=fingerprint.db_hash,
        reference_calls=actions,
        failed_calls=tuple(failed),
        fingerprint=fingerprint,
    )
