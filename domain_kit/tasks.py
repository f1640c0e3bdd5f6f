"""A tau2 task as every domain's tasks.json holds it: the user scenario, the initial state and the evaluation
criteria (gold actions, env assertions, NL assertions, facts to communicate, the reward basis), and splits."""

from __future__ import annotations

import copy
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .calls import Requestor, ToolCall

# Upstream's default when a task has no reward_basis (the v0 tasks.json); every v1 task states its own.
DEFAULT_REWARD_BASIS: tuple[str, ...] = ("DB", "COMMUNICATE")


@dataclass(frozen=True)
class StructuredInstructions:
    """The situation the simulated user is in; mirrors upstream's StructuredUserInstructions."""

    domain: str
    reason_for_call: str
    known_info: str | None
    unknown_info: str | None
    task_instructions: str

    def render(self) -> str:
        # Same layout as upstream's __str__: a header line per section, its value indented by one tab
        # (textwrap.indent, so whitespace-only lines stay bare), None sections left out.
        tab = "\t"
        lines = [f"Domain: {self.domain}", f"Reason for call:\n{textwrap.indent(self.reason_for_call, tab)}"]
        if self.known_info is not None:
            lines.append(f"Known info:\n{textwrap.indent(self.known_info, tab)}")
        if self.unknown_info is not None:
            lines.append(f"Unknown info:\n{textwrap.indent(self.unknown_info, tab)}")
        lines.append(f"Task instructions:\n{textwrap.indent(self.task_instructions, tab)}")
        return "\n".join(lines)


@dataclass(frozen=True)
class UserScenario:
    """Everything the user simulator is given: an optional persona and the instructions."""

    persona: str | None
    instructions: StructuredInstructions | str

    def render(self) -> str:
        """Exactly upstream's ``str(task.user_scenario)``."""
        lines: list[str] = []
        if self.persona is not None:
            lines.append("Persona:")
            lines.append(textwrap.indent(self.persona, "\t"))
        lines.append("Instructions:")
        body = self.instructions if isinstance(self.instructions, str) else self.instructions.render()
        lines.append(textwrap.indent(body, "\t"))
        return "\n".join(lines)


@dataclass(frozen=True)
class GoldAction:
    """One call of the task's reference trajectory."""

    action_id: str
    name: str
    arguments: dict[str, Any]
    compare_args: tuple[str, ...] | None = None
    requestor: Requestor = "assistant"

    def to_tool_call(self) -> ToolCall:
        return ToolCall(self.name, copy.deepcopy(self.arguments), self.requestor)


@dataclass(frozen=True)
class EnvAssertion:
    """One check of the end state, run by a domain's assertion function on one side (``env_type`` "assistant":
    the agent's DB; "user": the customer's); it holds when the function returns ``assert_value``."""

    env_type: str
    func_name: str
    arguments: dict[str, Any]
    assert_value: bool = True
    message: str | None = None


@dataclass(frozen=True)
class SetupCall:
    """One initialization action: a function of one side's toolkit (a tool or a hidden setup function)."""

    env_type: str
    func_name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class InitialState:
    """The state a task starts from, as upstream applies it: data merged into the DBs, then setup calls, then
    a message history (kept as the file holds it; the domain replays it)."""

    initialization_data: Mapping[str, Any] | None
    initialization_actions: tuple[SetupCall, ...]
    message_history: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True)
class Task:
    """One task. ``description`` (purpose/policies/notes) is never shown to the user or the agent;
    ``user_tools`` None means every customer tool the domain has."""

    id: str
    user_scenario: UserScenario
    gold_actions: tuple[GoldAction, ...]
    nl_assertions: tuple[str, ...]
    communicate_info: tuple[str, ...]
    reward_basis: tuple[str, ...]
    description: Mapping[str, str | None] | None = None
    env_assertions: tuple[EnvAssertion, ...] = ()
    initial_state: InitialState | None = None
    user_tools: tuple[str, ...] | None = None

    def scenario_text(self) -> str:
        """The scenario as upstream renders it for the user simulator (``str(task.user_scenario)``)."""
        return self.user_scenario.render()

    @property
    def judged(self) -> bool:
        """Whether the NL judge has anything to grade for this task's reward."""
        return "NL_ASSERTION" in self.reward_basis and bool(self.nl_assertions)


def _instructions(raw: Any) -> StructuredInstructions | str:
    if isinstance(raw, str):
        return raw
    return StructuredInstructions(
        domain=raw["domain"],
        reason_for_call=raw["reason_for_call"],
        known_info=raw.get("known_info"),
        unknown_info=raw.get("unknown_info"),
        task_instructions=raw["task_instructions"],
    )


def _env_assertion(raw: Mapping[str, Any]) -> EnvAssertion:
    return EnvAssertion(
        env_type=raw["env_type"],
        func_name=raw["func_name"],
        arguments=copy.deepcopy(raw.get("arguments") or {}),
        assert_value=bool(raw.get("assert_value", True)),
        message=raw.get("message"),
    )


def _initial_state(raw: Mapping[str, Any] | None) -> InitialState | None:
    if not raw:
        return None
    return InitialState(
        initialization_data=copy.deepcopy(raw.get("initialization_data")),
        initialization_actions=tuple(
            SetupCall(a["env_type"], a["func_name"], copy.deepcopy(a.get("arguments") or {}))
            for a in raw.get("initialization_actions") or ()
        ),
        message_history=tuple(copy.deepcopy(m) for m in raw.get("message_history") or ()),
    )


def parse_task(raw: Mapping[str, Any], default_reward_basis: tuple[str, ...] = DEFAULT_REWARD_BASIS) -> Task:
    scenario = raw["user_scenario"]
    criteria = raw.get("evaluation_criteria") or {}
    actions = criteria.get("actions") or []
    basis = criteria.get("reward_basis")
    user_tools = raw.get("user_tools")
    return Task(
        id=str(raw["id"]),
        user_scenario=UserScenario(
            persona=scenario.get("persona"), instructions=_instructions(scenario["instructions"])
        ),
        gold_actions=tuple(
            GoldAction(
                action_id=action["action_id"],
                name=action["name"],
                arguments=copy.deepcopy(action.get("arguments") or {}),
                compare_args=None if action.get("compare_args") is None else tuple(action["compare_args"]),
                requestor="user" if action.get("requestor") == "user" else "assistant",
            )
            for action in actions
        ),
        nl_assertions=tuple(criteria.get("nl_assertions") or ()),
        communicate_info=tuple(criteria.get("communicate_info") or ()),
        reward_basis=default_reward_basis if basis is None else tuple(basis),
        description=copy.deepcopy(raw.get("description")),
        env_assertions=tuple(_env_assertion(a) for a in criteria.get("env_assertions") or ()),
        initial_state=_initial_state(raw.get("initial_state")),
        user_tools=None if user_tools is None else tuple(user_tools),
    )


def parse_tasks(
    raw: Sequence[Mapping[str, Any]], default_reward_basis: tuple[str, ...] = DEFAULT_REWARD_BASIS
) -> dict[str, Task]:
    """Tasks by id, in tasks.json order."""
    tasks: dict[str, Task] = {}
    for item in raw:
        task = parse_task(item, default_reward_basis)
        if task.id in tasks:
            raise ValueError(f"duplicate task id {task.id!r} in tasks.json")
        tasks[task.id] = task
    return tasks


def parse_splits(raw: Mapping[str, list[Any]], tasks: Mapping[str, Task]) -> dict[str, tuple[str, ...]]:
    splits = {name: tuple(str(task_id) for task_id in ids) for name, ids in raw.items()}
    for name, ids in splits.items():
        unknown = [task_id for task_id in ids if task_id not in tasks]
        if unknown:
            raise ValueError(f"split {name!r} names unknown tasks {unknown[:5]}")
    splits.setdefault("base", tuple(tasks))
    return splits
