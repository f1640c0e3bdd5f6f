"""Per-trial checks as pure functions over a finished trajectory (tau2 v1.0.1 evaluation semantics).

* DB: the trial's final DB hash equals the task's gold hash (the only DB-state check upstream makes).
* ENV_ASSERTION: every env assertion of the task holds on the end state (the domain runs them).
* ACTION: every gold action is matched by some call of the trajectory, whoever made it.
* COMMUNICATE: every required fact occurs in some assistant text.
* NL_ASSERTION: the judge's verdicts come in from outside (the judge is the engine's);
  this module only combines them.
* Reward: the product over the task's ``reward_basis``, zeroed unless the trial ended cleanly. A check that is
  not in the basis is a diagnostic.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .calls import ToolCall
from .tasks import GoldAction, Task
from .termination import TerminationReason, is_clean_exit


@dataclass(frozen=True)
class DbCheck:
    matched: bool
    expected_hash: str
    actual_hash: str


@dataclass(frozen=True)
class ActionCheck:
    """Whether some call of the trajectory matches one gold action (upstream's ACTION semantics)."""

    action_id: str
    name: str
    matched: bool
    write: bool


@dataclass(frozen=True)
class CommunicateCheck:
    info: str
    met: bool


@dataclass(frozen=True)
class Reward:
    """``reward`` is None when a component of the basis is unknown (e.g. assertions not judged).
    ``gated`` is True when the termination gate forced the reward to 0.0."""

    reward: float | None
    components: dict[str, float | None]
    gated: bool


def check_db(actual_hash: str, gold_hash: str) -> DbCheck:
    return DbCheck(matched=actual_hash == gold_hash, expected_hash=gold_hash, actual_hash=actual_hash)


def _call_parts(call: ToolCall | Any) -> tuple[str, dict[str, Any]]:
    if isinstance(call, ToolCall):
        return call.name, call.arguments
    if isinstance(
        call, dict
    ):  # {"name", "arguments"} or OpenAI {"function": {"name", "arguments": "<json>"}}
        function = call.get("function", call)
        arguments = function.get("arguments") or {}
        if isinstance(arguments, str):
            arguments = json.loads(arguments)
        return str(function["name"]), arguments
    return str(call.name), dict(call.arguments)


def action_matches(action: GoldAction, name: str, arguments: dict[str, Any]) -> bool:
    """Upstream's Action.compare_with_tool_call: with compare_args None the keys of the *call* are
    compared (so a call omitting a gold argument can match); an empty compare_args compares names
    only; values use ==."""
    if action.name != name:
        return False
    keys: Iterable[str] = arguments.keys() if action.compare_args is None else action.compare_args
    wanted = set(keys)  # a set: the agent controls how many keys its call has, so membership must be O(1)
    if not wanted:
        return True
    called = {k: v for k, v in arguments.items() if k in wanted}
    expected = {k: v for k, v in action.arguments.items() if k in wanted}
    return called == expected


def check_actions(
    gold_actions: Sequence[GoldAction], calls: Sequence[ToolCall | Any], write_tools: Collection[str]
) -> list[ActionCheck]:
    """One entry per gold action: matched if any call of the trajectory matches it, whoever made it (upstream
    ignores the requestor and whether the call succeeded). ``write`` marks the domain's write tools."""
    parts = [_call_parts(call) for call in calls]
    return [
        ActionCheck(
            action_id=action.action_id,
            name=action.name,
            matched=any(action_matches(action, name, arguments) for name, arguments in parts),
            write=action.name in write_tools,
        )
        for action in gold_actions
    ]


def check_communicate(
    required: Sequence[str], assistant_texts: Sequence[str | None]
) -> list[CommunicateCheck]:
    """Upstream's COMMUNICATE check: each string must occur, case-insensitively, in some non-blank assistant
    text with every comma removed from the text (not from the string). Diagnostic only in v1."""
    texts = [text.lower().replace(",", "") for text in assistant_texts if text is not None and text.strip()]
    return [CommunicateCheck(info=info, met=any(info.lower() in text for text in texts)) for info in required]


def nl_component(task: Task, nl_verdicts: Sequence[bool] | None) -> float | None:
    """1.0 without a judge when the task has no assertions; None when it has some and none were judged;
    otherwise 1.0 only for exactly one True verdict per assertion (a missing verdict is a failure)."""
    if not task.nl_assertions:
        return 1.0
    if nl_verdicts is None:
        return None
    verdicts = list(nl_verdicts)
    ok = len(verdicts) == len(task.nl_assertions) and all(v is True for v in verdicts)
    return 1.0 if ok else 0.0


def score_trial(
    task: Task,
    reason: TerminationReason | str,
    db_matched: bool | None = None,
    nl_verdicts: Sequence[bool] | None = None,
    communicate_met: bool | None = None,
    *,
    env_assertions_met: bool | None = None,
    actions_met: bool | None = None,
) -> Reward:
    """Reward = product over ``task.reward_basis`` (DB, ENV_ASSERTION, ACTION, COMMUNICATE, NL_ASSERTION),
    forced to 0.0 when the trial did not end with user_stop/agent_stop. A check not given (None) is unknown.
    An infrastructure error has no reward at all (None): such trials are excluded from the metrics. A
    component not known (None: assertions not judged) leaves the reward unknown, unless another component
    is already 0: then the product is 0 whatever the unknown one is."""
    given: dict[str, bool | None] = {
        "DB": db_matched,
        "ENV_ASSERTION": env_assertions_met,
        "ACTION": actions_met,
        "COMMUNICATE": communicate_met,
    }
    components: dict[str, float | None] = {}
    for kind in task.reward_basis:
        if kind == "NL_ASSERTION":
            components[kind] = nl_component(task, nl_verdicts)
        else:
            met = given.get(kind)
            components[kind] = None if met is None else (1.0 if met else 0.0)
    if str(reason) == TerminationReason.INFRASTRUCTURE_ERROR:
        return Reward(reward=None, components=components, gated=True)
    if not is_clean_exit(reason):
        return Reward(reward=0.0, components=components, gated=True)
    if 0.0 in components.values():  # the product is 0 whatever the unknown components would be
        return Reward(reward=0.0, components=components, gated=False)
    if any(value is None for value in components.values()):
        return Reward(reward=None, components=components, gated=False)
    reward = 1.0
    for value in components.values():
        reward *= value or 0.0
    return Reward(reward=reward, components=components, gated=False)
