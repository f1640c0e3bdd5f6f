"""What upstream's environment evaluator finds for a telecom trajectory (semantics doc, section 10.2).

* The predicted end state: a fresh environment in the task's initial state, then every call of the trajectory
  that can change something (both parties' writes, in order, each with the sync), then a last sync. Reads,
  the transfer and names neither side has are skipped, as upstream's replay skips them.
* The gold end state (diagnostic only: DB is never in a telecom basis): a fresh environment in the initial
  state, then the gold actions *without* the sync, their errors ignored, as upstream's evaluator does. It
  therefore misses every effect of the agent's calls on the phone, and upstream reports no DB match for 71
  of the 114 base tasks even when a trajectory makes exactly the gold calls; this keeps that.
* The env assertions run on the predicted end state, in order, each followed by the sync.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from domain_kit import EnvironmentCheck, GoldOutcome, ToolCall
from domain_kit.assertions import run_assertions
from domain_kit.tasks import Task

from .environment import TelecomEnvironment
from .findings import finding
from .schemas import MUTATING_TOOLS

NewEnvironment = Callable[[Task], TelecomEnvironment]
"""A fresh environment in the task's initial state."""


def replay_gold(task: Task, fresh: NewEnvironment) -> GoldOutcome:
    env = fresh(task)
    calls = tuple(action.to_tool_call() for action in task.gold_actions)
    failed: list[tuple[int, str, str]] = []
    for index, call in enumerate(calls):
        try:
            env.make_tool_call(call.name, call.arguments, call.requestor)
        except Exception as exc:
            failed.append((index, call.name, f"Error: {exc}"))
    return GoldOutcome(
        db_hash=env.db_hash(),
        reference_calls=calls,
        failed_calls=tuple(failed),
        user_db_hash=env.user_db_hash(),
    )


def replay_trajectory(task: Task, fresh: NewEnvironment, calls: Sequence[ToolCall]) -> TelecomEnvironment:
    """The predicted end state of a trajectory whose calls (both parties, in order) are ``calls``."""
    env = fresh(task)
    for call in calls:
        if call.name in MUTATING_TOOLS:
            env.replay(call.name, call.arguments, call.requestor)
    env.sync()
    return env


def check_trajectory(
    task: Task, gold: GoldOutcome, fresh: NewEnvironment, calls: Sequence[ToolCall]
) -> EnvironmentCheck:
    predicted = replay_trajectory(task, fresh, calls)
    agent_hash, user_hash = predicted.db_hash(), predicted.user_db_hash()
    assertions = run_assertions(task.env_assertions, predicted, finding)
    return EnvironmentCheck(
        db_matched=agent_hash == gold.db_hash and user_hash == gold.user_db_hash,
        db_expected_hash=gold.db_hash,
        db_actual_hash=agent_hash,
        assertions=assertions,
        user_db_hash=user_hash,
    )
