"""Why did a trial fail its DB check? Replays the trial's stored tool calls (both parties', in order) on a
fresh environment of its domain and diffs the result against the task's gold outcome (domain_kit.replay: the
same computation as `retail-replay`, on a stored trial).

The replay is deterministic: the tools depend only on the DB and the arguments, so replaying the calls in
transcript order rebuilds the trial's final DB. `reproduced` says whether it did (the replayed hash equals the
hash stored when the trial ran); a mismatch would mean the stored transcript is not the whole story.
"""

from __future__ import annotations

from dataclasses import dataclass

from domain_kit import DomainData
from domain_kit.diff import Difference
from domain_kit.replay import ParsedCall, replay_calls
from green_agent.core.limits import AgentLimits
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


def trial_calls(result: TrialResult) -> list[ParsedCall]:
    """The tool calls of the trial in the order it executed them: the white agent's, and in dual control the
    customer's (each with who made it)."""
    return [
        ParsedCall(call.name, call.arguments, requestor=call.requestor)
        for call in trajectory_calls(result.transcript)
    ]


def replay_trial(data: DomainData, result: TrialResult, *, normalize_ids: bool = False) -> TrialReplay:
    """Replay a stored trial's calls on a fresh environment of its task and compare with gold (CPU only, about
    a millisecond per call; callers on an event loop run it in a thread)."""
    calls = trial_calls(result)
    report = replay_calls(data, result.task_id, calls, normalize_ids=normalize_ids)
    return TrialReplay(
        task_id=result.task_id,
        calls=len(calls),
        matched=bool(report["matched"]),
        replayed_hash=report["db_hash"],
        stored_hash=result.db_actual_hash,
        gold_hash=report["gold_db_hash"],
        differences=[Difference(**d) for d in report["differences"]],
    )


@dataclass(frozen=True)
class Diagnosis:
    """A stored trial as a page or the REST API shows it: its failures classified afresh, each DB field that
    differs from gold among them, and the replay they come from (None when the DB matched gold, or the task
    is not in the data)."""

    failures: list[Failure] | None
    replay: TrialReplay | None


def diagnose(
    data: DomainData, result: TrialResult, *, normalize_ids: bool = False, limits: AgentLimits | None = None
) -> Diagnosis:
    """Replay a failed trial's calls when its DB differs from gold, and classify what went wrong on the
    trial's domain (`data`; CPU only: callers on an event loop run it in a thread). A task no longer in the
    data keeps its stored failures."""
    task = data.tasks.get(result.task_id)
    if task is None:
        return Diagnosis(result.failures, None)
    replay = None
    if result.db_expected_hash != result.db_actual_hash:
        replay = replay_trial(data, result, normalize_ids=normalize_ids)
    if not is_failed(result):
        return Diagnosis([], replay)
    gold_failed = {index for index, _, _ in data.gold(task.id).failed_calls}
    failures = classify_trial(
        task,
        result,
        write_tools=data.write_tools,
        gold_failed=gold_failed,
        limits=limits,
        differences=replay.differences if replay is not None else None,
    )
    return Diagnosis(failures, replay)
