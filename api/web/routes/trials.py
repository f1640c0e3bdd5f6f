"""/assessments/{id}/trials: the stored trials, and one trial in full (transcript, signals, verdicts)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Path, Query, status

from api.db.repository import AssessmentRecord
from api.security.auth import Principal, PrincipalDep
from api.web.deps import RepositoryDep, RuntimeDep
from api.web.schemas import MAX_OFFSET, NOT_FOUND, TrialPublic, TrialsPage, TrialSummaryPublic
from api.web.trial_view import diagnosed_trial

router = APIRouter(prefix="/assessments/{assessment_id}/trials", tags=["trials"], responses=NOT_FOUND)


async def _require_assessment(
    repository: RepositoryDep, assessment_id: str, principal: Principal
) -> AssessmentRecord:
    # Another tenant's assessment is "not found", exactly like one that does not exist.
    record = await repository.get(assessment_id, tenant=principal.tenant_filter)
    if record is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no assessment with id {assessment_id}")
    return record


@router.get("", response_model=TrialsPage, summary="Finished trials, in the order they finished")
async def list_trials(
    assessment_id: str,
    repository: RepositoryDep,
    principal: PrincipalDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
) -> TrialsPage:
    await _require_assessment(repository, assessment_id, principal)
    summaries, total = await repository.list_trials(assessment_id, limit=limit, offset=offset)
    return TrialsPage(
        data=[TrialSummaryPublic.from_summary(assessment_id, s) for s in summaries],
        count=total,
        limit=limit,
        offset=offset,
    )


@router.get(
    "/{task_id}/{trial}",
    response_model=TrialPublic,
    summary="One trial: transcript, signals, NL verdicts with reasons, what went wrong (failures), protocol "
    "warnings, judge input",
)
async def get_trial(
    assessment_id: str,
    task_id: str,
    trial: Annotated[int, Path(ge=0, le=MAX_OFFSET)],
    runtime: RuntimeDep,
    repository: RepositoryDep,
    principal: PrincipalDep,
) -> TrialPublic:
    """`failures` is classified from the stored trial when it is read: each DB field that differs from gold
    where no missing, wrong or extra write explains it is one entry (docs/api.md, "Failures"). `domain` is
    the assessment's; `customer_state`, in dual control, the customer's side before and after."""
    record = await _require_assessment(repository, assessment_id, principal)
    result = await repository.get_trial(assessment_id, task_id, trial)
    if result is None:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND,
            f"assessment {assessment_id} has no finished trial {trial} of task {task_id}",
        )
    diagnosed = await diagnosed_trial(runtime, record.domain, result)
    return TrialPublic.of(diagnosed.result, record.domain, diagnosed.customer)
