"""/assessments: create (idempotent), list, read, cancel, retry, rerun what failed, compare, downloads.

The actions (create, cancel, retry, rerun-failed) are api/web/actions.py's, shared with the web UI's forms."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Header, HTTPException, Query, Response, status
from fastapi.responses import JSONResponse

from api.db.repository import AssessmentRecord
from api.runtime.service import AssessmentService, NotComparable
from api.runtime.tau2_interop import NotExportable, export_document
from api.security.auth import PrincipalDep
from api.web import actions
from api.web.a2a.result import result_data
from api.web.deps import RepositoryDep, RuntimeDep, ServiceDep
from api.web.schemas import (
    MAX_OFFSET,
    NOT_FOUND,
    AssessmentPublic,
    AssessmentsPage,
    LeaderboardResult,
    RerunOverrides,
)
from api.web.trials_csv import csv_response, trials_csv
from green_agent.config import AssessmentConfig, OneLine
from green_agent.domains import UnknownDomainError, check_domain
from green_agent.scoring.uncertainty import Comparison

router = APIRouter(prefix="/assessments", tags=["assessments"])

StatusFilter = Literal["queued", "running", "completed", "failed", "cancelled"]
IdempotencyKey = Annotated[
    OneLine | None,
    Header(
        alias="Idempotency-Key",
        min_length=1,
        max_length=255,
        description="Makes a retried POST return the assessment the first one created.",
    ),
]


@router.post(
    "",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=AssessmentPublic,
    summary="Start an assessment",
    responses={
        422: {"description": "The request cannot run; each message says what to change."},
        429: {
            "description": "A quota of the tenant or the service is full; retry after Retry-After seconds."
        },
    },
)
async def create_assessment(
    config: AssessmentConfig,
    service: ServiceDep,
    principal: PrincipalDep,
    response: Response,
    idempotency_key: IdempotencyKey = None,
) -> AssessmentPublic:
    try:
        record, created = await actions.start(
            service, principal, config, door="rest", idempotency_key=idempotency_key
        )
    except actions.Refused as refused:
        raise refused.http_exception() from None
    response.headers["Location"] = f"/assessments/{record.id}"
    if not created:
        response.headers["Idempotent-Replayed"] = "true"
    return AssessmentPublic.from_record(record)


@router.get("", response_model=AssessmentsPage, summary="List assessments, newest first")
async def list_assessments(
    repository: RepositoryDep,
    principal: PrincipalDep,
    status_: Annotated[StatusFilter | None, Query(alias="status")] = None,
    agent_url: Annotated[
        str | None, Query(max_length=2048, description="Only assessments of this white agent.")
    ] = None,
    domain: Annotated[
        str | None, Query(max_length=64, description="Only assessments of this domain (retail, airline...).")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
) -> AssessmentsPage:
    """The caller's tenant's assessments (an admin key: every tenant's)."""
    if domain is not None:
        try:
            check_domain(domain)
        except UnknownDomainError as exc:
            refused = actions.Refused(422, str(exc), location=["query", "domain"])
            raise refused.http_exception() from None
    records, total = await repository.page(
        tenant=principal.tenant_filter,
        status=status_,
        agent_url=agent_url,
        domain=domain,
        limit=limit,
        offset=offset,
    )
    return AssessmentsPage(
        data=[AssessmentPublic.from_record(r) for r in records], count=total, limit=limit, offset=offset
    )


@router.get(
    "/{assessment_id}", response_model=AssessmentPublic, summary="One assessment", responses=NOT_FOUND
)
async def get_assessment(
    assessment_id: str, service: ServiceDep, principal: PrincipalDep
) -> AssessmentPublic:
    """With what the run waits for (`progress.waiting_for`) and the history of its attempts."""
    record = await service.get(assessment_id, tenant=principal.tenant_filter)
    return await _public(service, record)


async def _public(service: AssessmentService, record: AssessmentRecord) -> AssessmentPublic:
    """The single-assessment view: the record, what it waits for, its attempts."""
    return AssessmentPublic.from_record(
        record,
        waiting_for=service.waiting_for(record.id) if not record.finished else [],
        attempts=await service.repository.attempts(record.id),
    )


@router.post(
    "/{assessment_id}/retry",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=AssessmentPublic,
    summary="Retry the assessment in place: run what was excluded or never ran, judge what was not",
    responses={
        **NOT_FOUND,
        409: {"description": "The assessment is running, or has nothing left to do (the reason says which)."},
        422: {
            "description": "The caller may not run it now: its agent URL is refused by the caller's egress "
            "rule, or it is larger than the caller's quota allows."
        },
        429: {"description": "A quota is full; retry after Retry-After seconds."},
    },
)
async def retry_assessment(
    assessment_id: str, service: ServiceDep, principal: PrincipalDep, response: Response
) -> AssessmentPublic:
    """In the same assessment: every trial excluded as an infrastructure error or never run (cancelled,
    failed midway, its process killed) runs again, and every stored trial excluded for want of a verdict is
    judged again without running its conversation (when a judge is configured now). Scored trials are kept
    and never run twice; the report is computed again at the end; `attempts` keeps the history. The retry
    runs under the caller's key as it is now (its egress rule, its tenant's quotas), not the creator's."""
    try:
        record = await actions.retry(service, principal, assessment_id, door="rest")
    except actions.Refused as refused:
        raise refused.http_exception() from None
    response.headers["Location"] = f"/assessments/{record.id}"
    return await _public(service, record)


@router.post(
    "/{assessment_id}/cancel",
    response_model=AssessmentPublic,
    summary="Cancel a queued or running assessment",
    responses={**NOT_FOUND, 409: {"description": "The assessment had already finished."}},
)
async def cancel_assessment(
    assessment_id: str, service: ServiceDep, principal: PrincipalDep
) -> AssessmentPublic:
    try:
        record = await actions.cancel(service, principal, assessment_id, door="rest")
    except actions.Refused as refused:
        raise refused.http_exception() from None
    return AssessmentPublic.from_record(record)


@router.get(
    "/{assessment_id}/leaderboard",
    response_model=LeaderboardResult,
    summary="The assessment as an AgentBeats leaderboard results file",
    responses={**NOT_FOUND, 409: {"description": "The assessment has no report yet."}},
)
async def leaderboard_result(
    assessment_id: str, service: ServiceDep, principal: PrincipalDep
) -> LeaderboardResult:
    """`{"participants": {"agent": ...}, "results": [<the Result DataPart>]}`: the shape AgentBeats
    leaderboard repositories keep under results/ and query with DuckDB. The participant is the white agent's
    URL; a leaderboard pipeline replaces it with its own agent id."""
    record = await service.get(assessment_id, tenant=principal.tenant_filter)
    if record.report is None:
        raise HTTPException(
            status.HTTP_409_CONFLICT,
            f"assessment {assessment_id} is {record.status} and has no report yet; "
            "retry when it has completed (or been cancelled)",
        )
    return LeaderboardResult(
        participants={"agent": record.agent_url}, results=[result_data(record, record.report)]
    )


@router.get(
    "/{assessment_id}/export",
    summary="The assessment as a tau2-bench v1.0.x results file",
    response_class=JSONResponse,
    responses={
        200: {"description": "A tau2 `Results` document (info, tasks, simulations), as a JSON attachment."},
        409: {"description": "The assessment has no report yet."},
        **NOT_FOUND,
    },
)
async def export_assessment(
    assessment_id: str,
    runtime: RuntimeDep,
    principal: PrincipalDep,
    format_: Annotated[Literal["tau2"], Query(alias="format", description="The file format.")] = "tau2",
) -> JSONResponse:
    """Readable by `tau2 view`; `green-agent rescore` re-scores it. Fields this service has no data for (per
    message cost, raw LLM output) are left out."""
    record = await runtime.service.get(assessment_id, tenant=principal.tenant_filter)  # others' not found
    try:
        document = await export_document(runtime, assessment_id)
    except NotExportable as exc:
        raise HTTPException(status.HTTP_409_CONFLICT, str(exc)) from None
    filename = f"{assessment_id}_{record.domain}_tau2.json"
    return JSONResponse(document, headers={"Content-Disposition": f'attachment; filename="{filename}"'})


@router.get(
    "/{assessment_id}/trials.csv",
    summary="The trials as CSV, one row per trial: reward, termination, signals, failure kinds and reasons",
    response_class=Response,
    responses={200: {"content": {"text/csv": {}}}, **NOT_FOUND},
)
async def trials_csv_download(assessment_id: str, runtime: RuntimeDep, principal: PrincipalDep) -> Response:
    """Cells a spreadsheet would run as a formula are prefixed with an apostrophe (docs/api.md)."""
    await runtime.service.get(assessment_id, tenant=principal.tenant_filter)  # others' are not found
    summaries = await runtime.repository.trial_summaries(assessment_id)
    return csv_response(trials_csv(summaries, f"/assessments/{assessment_id}/trials"), assessment_id)


@router.get(
    "/{assessment_id}/compare/{other_id}",
    response_model=Comparison,
    summary="Compare two assessments, paired by task, with the uncertainty of the difference",
    responses={
        **NOT_FOUND,
        409: {"description": "The two assessments are of different domains, or share no scored task."},
    },
)
async def compare_assessments(
    assessment_id: str, other_id: str, service: ServiceDep, principal: PrincipalDep
) -> Comparison:
    """A = `assessment_id`, B = `other_id`, over the tasks both scored: the per-task difference of mean
    reward with its standard error, 95% interval and p-value, the tasks each is better on, the tasks that
    flipped, the same per pass^k, and one sentence that calls a difference inside the noise what it is
    (docs/scoring.md, "Error bars")."""
    try:
        return await service.compare(assessment_id, other_id, tenant=principal.tenant_filter)
    except NotComparable as exc:
        raise HTTPException(status.HTTP_409_CONFLICT, str(exc)) from None


@router.post(
    "/{assessment_id}/rerun-failed",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=AssessmentPublic,
    summary="Start a new assessment over the tasks this one did not solve in every trial",
    responses={
        **NOT_FOUND,
        409: {"description": "The assessment is still running, or solved every task in every trial."},
        422: {"description": "The overrides cannot run; each message says what to change."},
        429: {"description": "A quota is full; retry after Retry-After seconds."},
    },
)
async def rerun_failed(
    assessment_id: str,
    service: ServiceDep,
    principal: PrincipalDep,
    response: Response,
    overrides: RerunOverrides | None = None,
) -> AssessmentPublic:
    """The tasks that failed, were flaky (solved in some trials only), were excluded or never ran, with the
    source's config except what the body overrides. Then `GET /assessments/{new}/compare/{assessment_id}`
    says whether the fix made a difference."""
    try:
        record = await actions.rerun_failed(
            service,
            principal,
            assessment_id,
            overrides.overrides() if overrides is not None else None,
            door="rest",
        )
    except actions.Refused as refused:
        raise refused.http_exception() from None
    response.headers["Location"] = f"/assessments/{record.id}"
    return AssessmentPublic.from_record(record)
