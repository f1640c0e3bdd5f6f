"""Re-score one simulation of a tau2 results file (v0.x or v1.0.x shape), in any domain the registry serves,
and compare with its stored verdict.

As upstream's evaluator does: the termination gate first (v1 rule: only user_stop / agent_stop are scored);
then the trajectory's calls are replayed in order, each by the party that made it, on a fresh environment of
the task, and the end state is compared with the gold end state (the task's reference actions replayed,
failures ignored) and with the task's env assertions; ACTION and COMMUNICATE are recomputed; NL assertions
come from outside (a judge), or stay unknown. The agent's read-only calls are not replayed: they change
nothing. The task definition is the one the file carries, so a v0 file is scored against v0 tasks; where it
equals the installed task, the domain's own environment check (and its cached gold) is used.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from domain_kit import (
    ActionCheck,
    AssertionCheck,
    CommunicateCheck,
    DomainData,
    DomainEnvironment,
    EnvironmentCheck,
    Task,
    ToolCall,
    check_actions,
    check_communicate,
    is_clean_exit,
    score_trial,
)
from green_agent.core.history import leading_history


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
    """Replayed calls (the agent's writes, the customer's calls) whose output differs from the file's."""
    env_assertions_met: Comparison = Comparison(None, None)
    """Per env assertion of the task, whether it held (lists, in the task's order)."""
    nl_pending: tuple[str, ...] = ()
    """Assertions that gate the reward but were not judged here (the reward is then unknown)."""
    note: str | None = None
    db_hash: str | None = None
    gold_hash: str | None = None
    action_checks: tuple[ActionCheck, ...] = ()
    communicate_checks: tuple[CommunicateCheck, ...] = ()
    assertion_checks: tuple[AssertionCheck, ...] = ()


def iter_messages(simulation: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """The simulation's messages, tool messages of a multi-tool message flattened in order."""
    for message in simulation.get("messages") or ():
        if message.get("role") == "tool" and isinstance(message.get("tool_messages"), list):
            yield from message["tool_messages"]
        else:
            yield message


def tool_calls(simulation: Mapping[str, Any], start: int = 0) -> list[dict[str, Any]]:
    """Every tool call of the trajectory, agent's and user's, in order; each with its `requestor` (as the file
    says, else the role of the message that made it). `start`: the first message to read."""
    return [
        {**call, "requestor": _requestor(call, message)}
        for message in list(iter_messages(simulation))[start:]
        if message.get("role") in ("assistant", "user")
        for call in message.get("tool_calls") or ()
    ]


def history_prefix(task: Task, simulation: Mapping[str, Any]) -> int:
    """How many leading messages of the simulation are the task's message history (upstream's trajectories
    open with it, as ours do): its writes are in the task's initial state, so replays start after it."""
    messages = [
        (m.get("role"), m.get("content"), [str(c.get("name")) for c in m.get("tool_calls") or ()])
        for m in iter_messages(simulation)
    ]
    return leading_history(task, messages)  # type: ignore[arg-type]


def _requestor(call: Mapping[str, Any], message: Mapping[str, Any]) -> str:
    said = call.get("requestor")
    if said in ("assistant", "user"):
        return str(said)
    return "user" if message.get("role") == "user" else "assistant"


def assistant_texts(simulation: Mapping[str, Any]) -> list[str | None]:
    """What the agent said to the customer: its messages without tool calls (text attached to a tool call
    never reaches the customer, so COMMUNICATE does not count it; docs/scoring.md)."""
    return [
        m.get("content")
        for m in iter_messages(simulation)
        if m.get("role") == "assistant" and not m.get("tool_calls")
    ]


@dataclass(frozen=True)
class _EndState:
    db_match: bool
    db_hash: str
    gold_hash: str
    assertions: tuple[AssertionCheck, ...]


class Rescorer:
    """Scores the simulations of one file in one domain; gold end states are computed once per task
    definition."""

    def __init__(self, data: DomainData, file_tasks: Sequence[Task]) -> None:
        self.data = data
        self.tasks = {task.id: task for task in file_tasks}
        self._gold: dict[str, tuple[str, str | None]] = {}

    def task(self, task_id: str) -> Task | None:
        return self.tasks.get(task_id) or self.data.tasks.get(task_id)

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
        stored_assertions = [bool(c.get("met")) for c in stored.get("env_assertions") or ()] or None
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
                env_assertions_met=Comparison(stored_assertions, None),
                replay_mismatches=0,
                note=f"task {task_id!r} is neither in the file nor in the installed {self.data.name} data",
            )

        start = history_prefix(task, simulation)
        calls, made_here = (
            [ToolCall(str(c.get("name")), dict(c.get("arguments") or {}), c["requestor"]) for c in found]
            for found in (tool_calls(simulation), tool_calls(simulation, start))
        )
        mismatches, live = self._replay(task, simulation, start)
        end = self._end_state(task, live, made_here)  # the history's writes are in the initial state
        action_checks = tuple(check_actions(task.gold_actions, calls, self.data.write_tools))
        communicate_checks = tuple(check_communicate(task.communicate_info, assistant_texts(simulation)))
        actions = [a.matched for a in action_checks]
        said = [c.met for c in communicate_checks]
        held = [a.met for a in end.assertions]
        pending: tuple[str, ...] = ()
        if "NL_ASSERTION" in task.reward_basis and task.nl_assertions and nl_verdicts is None:
            pending = task.nl_assertions
        result = score_trial(
            task,
            reason,
            end.db_match,
            nl_verdicts,
            communicate_met=all(said),
            env_assertions_met=all(held),
            actions_met=all(actions),
        )
        clean = is_clean_exit(reason)
        return SimulationRescore(
            **base,
            reward=Comparison(stored.get("reward"), result.reward),
            # After a premature end tau2 runs no check; so neither is compared here.
            db_match=Comparison(stored_db, end.db_match if clean else None),
            action_matches=Comparison(stored_actions, (actions or None) if clean else None),
            communicate_met=Comparison(stored_said, (said or None) if clean else None),
            env_assertions_met=Comparison(stored_assertions, (held or None) if clean else None),
            replay_mismatches=mismatches,
            nl_pending=pending if result.reward is None else (),  # only while the judge can matter
            note=None
            if task_id in self.tasks
            else f"task definition taken from the installed {self.data.name} data",
            db_hash=end.db_hash,
            gold_hash=end.gold_hash,
            action_checks=action_checks,
            communicate_checks=communicate_checks,
            assertion_checks=end.assertions,
        )

    def _environment(self, task: Task) -> DomainEnvironment:
        """A fresh environment of the task: with its initial state where the installed data knows the task."""
        return self.data.new_environment(task.id if task.id in self.data.tasks else None)

    def _replay(
        self, task: Task, simulation: Mapping[str, Any], start: int = 0
    ) -> tuple[int, DomainEnvironment]:
        """Replay the calls that can change state (the agent's non-read calls, every customer call) on a fresh
        environment, from message `start` (after the task's message history); count those whose output
        differs from the recorded tool message."""
        recorded = {
            str(m.get("id")): m.get("content") for m in iter_messages(simulation) if m.get("role") == "tool"
        }
        env = self._environment(task)
        mismatches = 0
        for call in tool_calls(simulation, start):
            name, requestor = str(call.get("name")), call["requestor"]
            if requestor == "assistant" and name not in self.data.write_tools:
                continue
            arguments = call.get("arguments")
            result = env.call(name, arguments if isinstance(arguments, dict) else {}, requestor)
            call_id = str(call.get("id"))
            if call_id in recorded and recorded[call_id] != result.content:
                mismatches += 1
        return mismatches, env

    def _end_state(self, task: Task, live: DomainEnvironment, calls: Sequence[ToolCall]) -> _EndState:
        """The DB against gold and the env assertions: the domain's own check for an installed task, else
        the file's gold actions replayed and its assertions run here."""
        if self.data.tasks.get(task.id) == task:
            found: EnvironmentCheck = self.data.check_environment(task.id, live, calls)
            return _EndState(
                found.db_matched, found.db_actual_hash, found.db_expected_hash, tuple(found.assertions)
            )
        gold_hash, gold_user_hash = self._gold_of(task)
        actual = live.db_hash()
        matched = actual == gold_hash and live.user_db_hash() == gold_user_hash
        assertions = tuple(_run_assertion(live, a) for a in task.env_assertions)
        return _EndState(matched, actual, gold_hash, assertions)

    def _gold_of(self, task: Task) -> tuple[str, str | None]:
        """The end state of the task's gold actions (each by its requestor; failures ignored): the agent's and
        the customer's DB hashes."""
        if task.id not in self._gold:
            env = self._environment(task)
            for call in (action.to_tool_call() for action in task.gold_actions):
                env.call(call.name, call.arguments, call.requestor)
            self._gold[task.id] = (env.db_hash(), env.user_db_hash())
        return self._gold[task.id]


def _run_assertion(env: DomainEnvironment, assertion: Any) -> AssertionCheck:
    arguments = dict(assertion.arguments)
    try:
        actual: bool | None = bool(env.assertion(assertion.func_name, arguments, assertion.env_type))
        error = None
    except Exception as exc:  # an assertion that raises did not hold (upstream: the check fails)
        actual, error = None, f"{type(exc).__name__}: {exc}"
    return AssertionCheck(
        func_name=assertion.func_name,
        env_type=assertion.env_type,
        arguments=arguments,
        expected=bool(assertion.assert_value),
        actual=actual,
        message=assertion.message,
        error=error,
    )
