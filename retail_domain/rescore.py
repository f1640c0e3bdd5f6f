"""Re-score one simulation of a tau2 results file (v0.x or v1.0.x shape) and compare with its stored verdict.

As upstream's evaluator does: the termination gate first (v1 rule: only user_stop / agent_stop are scored);
then the agent's mutating tool calls are replayed in order on a fresh environment and the end state's hash
is compared with the gold hash (the task's reference actions replayed, failures ignored); ACTION and
COMMUNICATE are recomputed; NL assertions come from outside (a judge), or stay unknown. The task definition
is the one the file carries, so a v0 file is scored against v0 tasks.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from domain_kit.calls import ToolCall
from domain_kit.checks import (
    ActionCheck,
    CommunicateCheck,
    check_actions,
    check_communicate,
    score_trial,
)
from domain_kit.tasks import Task
from domain_kit.termination import is_clean_exit

from .gold import replay_gold
from .loader import RetailData
from .schemas import WRITE_TOOLS


@dataclass(frozen=True)
class Comparison:
    """One component: the stored value, the recomputed one (None = not computed)."""

    stored: Any
    recomputed: Any

    @property
    def agrees(self) -> bool | None:
        if self.stored is None or self.recomputed is None:
            return None
        return bool(self.stored == self.recomputed)


@dataclass(frozen=True)
class SimulationRescore:
    simulation_id: str
    task_id: str
    trial: int | None
    termination_reason: str
    reward: Comparison
    db_match: Comparison
    action_matches: Comparison
    """Per gold action, whether some call matched it (lists, in the task's action order)."""
    communicate_met: Comparison
    replay_mismatches: int
    """Replayed write calls whose output differs from the output recorded in the file."""
    nl_pending: tuple[str, ...] = ()
    """Assertions that gate the reward but were not judged here (the reward is then unknown)."""
    note: str | None = None
    db_hash: str | None = None
    gold_hash: str | None = None
    action_checks: tuple[ActionCheck, ...] = ()
    communicate_checks: tuple[CommunicateCheck, ...] = ()


def iter_messages(simulation: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """The simulation's messages, tool messages of a multi-tool message flattened in order."""
    for message in simulation.get("messages") or ():
        if message.get("role") == "tool" and isinstance(message.get("tool_messages"), list):
            yield from message["tool_messages"]
        else:
            yield message


def tool_calls(simulation: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every tool call of the trajectory, agent's and user's, in order."""
    return [
        call
        for message in iter_messages(simulation)
        if message.get("role") in ("assistant", "user")
        for call in message.get("tool_calls") or ()
    ]


def assistant_texts(simulation: Mapping[str, Any]) -> list[str | None]:
    """What the agent said to the customer: its messages without tool calls (text attached to a tool call
    never reaches the customer, so COMMUNICATE does not count it; docs/scoring.md)."""
    return [
        m.get("content")
        for m in iter_messages(simulation)
        if m.get("role") == "assistant" and not m.get("tool_calls")
    ]


class Rescorer:
    """Scores the simulations of one file; gold hashes are computed once per task definition."""

    def __init__(self, data: RetailData, file_tasks: Sequence[Task]) -> None:
        self.data = data
        self.tasks = {task.id: task for task in file_tasks}
        self._gold: dict[str, str] = {}

    def task(self, task_id: str) -> Task | None:
        return self.tasks.get(task_id) or self.data.tasks.get(task_id)

    def gold_hash(self, task: Task) -> str:
        if task.id not in self._gold:
            self._gold[task.id] = replay_gold(self.data.base, task).db_hash
        return self._gold[task.id]

    def rescore(
        self, simulation: Mapping[str, Any], nl_verdicts: Sequence[bool] | None = None
    ) -> SimulationRescore | None:
        """None when the simulation has no stored verdict (an excluded infrastructure error)."""
        stored = simulation.get("reward_info")
        if stored is None:
            return None
        task_id = str(simulation.get("task_id"))
        reason = str(simulation.get("termination_reason"))
        stored_db = (stored.get("db_check") or {}).get("db_match")
        stored_actions = [bool(c.get("action_match")) for c in stored.get("action_checks") or ()] or None
        stored_said = [bool(c.get("met")) for c in stored.get("communicate_checks") or ()] or None
        base: dict[str, Any] = {
            "simulation_id": str(simulation.get("id")),
            "task_id": task_id,
            "trial": simulation.get("trial"),
            "termination_reason": reason,
        }
        task = self.task(task_id)
        if task is None:
            return SimulationRescore(
                **base,
                reward=Comparison(stored.get("reward"), None),
                db_match=Comparison(stored_db, None),
                action_matches=Comparison(stored_actions, None),
                communicate_met=Comparison(stored_said, None),
                replay_mismatches=0,
                note=f"task {task_id!r} is neither in the file nor in the installed data",
            )

        mismatches, db_hash = self._replay(simulation)
        gold_hash = self.gold_hash(task)
        db_match = db_hash == gold_hash
        calls = [ToolCall(str(c.get("name")), dict(c.get("arguments") or {})) for c in tool_calls(simulation)]
        action_checks = tuple(check_actions(task.gold_actions, calls, WRITE_TOOLS))
        communicate_checks = tuple(check_communicate(task.communicate_info, assistant_texts(simulation)))
        actions = [a.matched for a in action_checks]
        said = [c.met for c in communicate_checks]
        pending: tuple[str, ...] = ()
        if "NL_ASSERTION" in task.reward_basis and task.nl_assertions and nl_verdicts is None:
            pending = task.nl_assertions
        result = score_trial(task, reason, db_match, nl_verdicts, communicate_met=all(said))
        clean = is_clean_exit(reason)
        return SimulationRescore(
            **base,
            reward=Comparison(stored.get("reward"), result.reward),
            # After a premature end tau2 runs no check; so neither is compared here.
            db_match=Comparison(stored_db, db_match if clean else None),
            action_matches=Comparison(stored_actions, (actions or None) if clean else None),
            communicate_met=Comparison(stored_said, (said or None) if clean else None),
            replay_mismatches=mismatches,
            nl_pending=pending if result.reward is None else (),  # only while the judge can matter
            note=None if task_id in self.tasks else "task definition taken from the installed data",
            db_hash=db_hash,
            gold_hash=gold_hash,
            action_checks=action_checks,
            communicate_checks=communicate_checks,
        )

    def _replay(self, simulation: Mapping[str, Any]) -> tuple[int, str]:
        """Replay the mutating calls; count those whose output differs from the recorded tool message."""
        recorded = {
            str(m.get("id")): m.get("content") for m in iter_messages(simulation) if m.get("role") == "tool"
        }
        env = self.data.new_environment()
        mismatches = 0
        for call in tool_calls(simulation):
            name = str(call.get("name"))
            if name not in WRITE_TOOLS:
                continue
            arguments = call.get("arguments")
            result = env.call(name, arguments if isinstance(arguments, dict) else {})
            call_id = str(call.get("id"))
            if call_id in recorded and recorded[call_id] != result.content:
                mismatches += 1
        return mismatches, env.db_hash()
