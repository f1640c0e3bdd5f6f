"""One stored trial as the REST API and the UI show it: its failures classified afresh (with each DB field
that differs from gold) and, in dual control, the customer's side before and after, by
`green_agent.scoring.diagnosis.diagnose` over the assessment's domain, in a thread (it replays the trial's
calls)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from api.runtime.runtime import Runtime
from green_agent.core.models import TrialResult
from green_agent.scoring.diagnosis import CustomerState, TrialReplay, diagnose


@dataclass(frozen=True)
class DiagnosedTrial:
    result: TrialResult
    """The stored trial, `failures` classified again from it (the stored copy is what lists count)."""
    replay: TrialReplay | None
    customer: CustomerState | None
    """Dual control: the customer's side at the task's start and at the trial's end (None elsewhere)."""


async def diagnosed_trial(runtime: Runtime, domain: str, result: TrialResult) -> DiagnosedTrial:
    """`result`, a trial of an assessment of `domain`, diagnosed on that domain's data."""
    data = await runtime.engine.load_domain(domain)
    diagnosis = await asyncio.to_thread(
        diagnose,
        data,
        result,
        normalize_ids=runtime.settings.normalize_ids,
        limits=runtime.engine.settings.limits,
    )
    return DiagnosedTrial(
        result.model_copy(update={"failures": diagnosis.failures}), diagnosis.replay, diagnosis.customer
    )
