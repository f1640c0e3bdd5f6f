"""Why did a trial fail its DB check? Replays the trial's stored tool calls (both parties', in order) on a
fresh environment of its domain and diffs the result against the task's gold outcome (domain_kit.replay: the
same computation as `retail-replay`, on a stored trial). In dual control (telecom, mock) the same replay gives
the customer's side at the trial's end (its phone, its inbox), shown beside the task's initial state.

The replay is deterministic: the tools depend only on the DB and the arguments, so replaying the calls in
transcript order rebuilds the trial's final DB. `reproduced` says whether it did (the replayed hash equals the
hash stored when the trial ran); a mismatch would mean the stored transcript is not the whole story.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from domain_kit import DomainData, DomainEnvironment
from domain_kit.diff import Difference, Dumpable, value_differences
from domain_kit.replay import ParsedCall, compared_with_gold, replayed_environment
from green_agent.core.history import history_length
from green_agent.core.limits import AgentLimits, compact_json, utf8_size
from green_agent.core.models import Failure, TrialResult
from green_agent.core.trial import trajectory_calls
from green_agent.scoring.failures import classify_trial, is_failed


@dataclass(frozen=True)
class TrialReplay:
    task_id: str
    calls: int
    matched: bool
    replayed_hash: str
    stored_hash: str | None
    gold_hash: str
    differences: list[Difference]  # path like ``orders/#W123.status``: this trial's value vs gold's

    @property
    def reproduced(self) -> bool:
        return self.stored_hash is None or self.stored_hash == self.replayed_hash


def trial_calls(result: TrialResult, start: int = 0) -> list[ParsedCall]:
    """The tool calls of the trial in the order it executed them: the white agent's, and in dual control the
    customer's (each with who made it); from message `start` (after the task's message history, whose
    writes the task's initial state holds)."""
    return [
        ParsedCall(call.name, call.arguments, requestor=call.requestor)
        for call in trajectory_calls(result.transcript, start)
    ]


def replay_trial(data: DomainData, result: TrialResult, *, normalize_ids: bool = False) -> TrialReplay:
    """Replay a stored trial's calls on a fresh environment of its task and compare with gold (CPU only, about
    a millisecond per call; callers on an event loop run it in a thread)."""
    return _replayed(data, result, normalize_ids)[0]


def _replayed(
    data: DomainData, result: TrialResult, normalize_ids: bool
) -> tuple[TrialReplay, DomainEnvironment]:
    calls = trial_calls(result, history_length(data.tasks.get(result.task_id), result.transcript))
    env, results = replayed_environment(data, result.task_id, calls, normalize_ids=normalize_ids)
    report = compared_with_gold(data, result.task_id, env, results)
    replay = TrialReplay(
        task_id=result.task_id,
        calls=len(calls),
        matched=bool(report["matched"]),
        replayed_hash=report["db_hash"],
        stored_hash=result.db_actual_hash,
        gold_hash=report["gold_db_hash"],
        differences=[Difference(**d) for d in report["differences"]],
    )
    return replay, env


@dataclass(frozen=True)
class StateChange:
    """One field of the customer's side that the trial changed: ``path`` like ``device.airplane_mode``."""

    path: str
    before: Any
    after: Any


@dataclass(frozen=True)
class CustomerState:
    """The customer's side of a dual-control trial (telecom: the phone and its surroundings; mock: the
    notification inbox), i.e. the customer's DB as upstream dumps it: at the task's initial state
    (``before``) and at the trial's end (``after``: the stored calls of both parties replayed, as upstream's
    evaluator rebuilds the end state), and the fields that differ (``changes``). Bounded by
    `AgentLimits.max_customer_state_bytes`: past it the two states are left out and only the changes that
    fit are listed, ``omitted`` saying what was left out."""

    before: Any | None
    after: Any | None
    changes: list[StateChange]
    omitted: str | None = None


def customer_state(
    data: DomainData,
    result: TrialResult,
    *,
    ended: DomainEnvironment | None = None,
    normalize_ids: bool = False,
    limits: AgentLimits | None = None,
) -> CustomerState | None:
    """The customer's side before and after the trial (`ended`: the trial's calls already replayed, else
    they are replayed here); None where the customer has no DB (retail, airline) or the task is not in the
    data. CPU only: callers on an event loop run it in a thread."""
    if result.task_id not in data.tasks:
        return None
    start = data.new_environment(result.task_id, normalize_ids=normalize_ids)
    if start.user_db_hash() is None or not isinstance(start, Dumpable):
        return None
    if ended is None:
        ended = _replayed(data, result, normalize_ids)[1]
    if not isinstance(ended, Dumpable):
        return None
    before, after = _plain(start.dump().get("user")), _plain(ended.dump().get("user"))
    bound = (limits or AgentLimits()).max_customer_state_bytes
    changes = [StateChange(d.path, d.expected, d.actual) for d in value_differences(after, before)]
    omitted = []
    whole = utf8_size(compact_json(before)) + utf8_size(compact_json(after))
    if whole > bound:
        omitted.append(
            f"the customer's DB at the start and at the end hold {whole} bytes of JSON, over "
            f"max_customer_state_bytes={bound}: only the fields that changed are shown"
        )
        before = after = None
    kept, used = [], 0
    for change in changes:
        used += utf8_size(compact_json([change.path, change.before, change.after]))
        if used > bound:
            break
        kept.append(change)
    if len(kept) < len(changes):
        more = len(changes) - len(kept)
        omitted.append(f"{more} more changed fields are not listed (max_customer_state_bytes)")
    return CustomerState(before, after, kept, "; ".join(omitted) or None)


def _plain(value: Any) -> Any:
    """A DB dump as plain JSON data (dates as ISO text, enumerations as their values)."""
    return json.loads(json.dumps(value, default=str))


@dataclass(frozen=True)
class Diagnosis:
    """A stored trial as a page or the REST API shows it: its failures classified afresh, each DB field that
    differs from gold among them, and the replay they come from (None when the DB matched gold, or the task
    is not in the data); in dual control, the customer's side before and after."""

    failures: list[Failure] | None
    replay: TrialReplay | None
    customer: CustomerState | None = None


def diagnose(
    data: DomainData, result: TrialResult, *, normalize_ids: bool = False, limits: AgentLimits | None = None
) -> Diagnosis:
    """Replay a failed trial's calls when its DB differs from gold, and classify what went wrong on the
    trial's domain (`data`; CPU only: callers on an event loop run it in a thread). A task no longer in the
    data keeps its stored failures. Where the customer has a DB of its own, its state before and after."""
    task = data.tasks.get(result.task_id)
    if task is None:
        return Diagnosis(result.failures, None)
    replay = ended = None
    if result.db_expected_hash != result.db_actual_hash:
        replay, ended = _replayed(data, result, normalize_ids)
    customer = customer_state(data, result, ended=ended, normalize_ids=normalize_ids, limits=limits)
    if not is_failed(result):
        return Diagnosis([], replay, customer)
    gold_failed = {index for index, _, _ in data.gold(task.id).failed_calls}
    failures = classify_trial(
        task,
        result,
        write_tools=data.write_tools,
        gold_failed=gold_failed,
        limits=limits,
        differences=replay.differences if replay is not None else None,
    )
    return Diagnosis(failures, replay, customer)
