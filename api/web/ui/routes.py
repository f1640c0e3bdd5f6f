"""The web UI's pages under /ui: server-rendered Jinja2 templates over the repository and the service.

Everything the white agent or a requester wrote (messages, tool arguments, errors, agent URLs) is hostile:
templates autoescape it, no page has inline script or style, and every page carries a Content-Security-Policy
that allows only this service's own scripts and styles, so injected markup stays inert text.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlencode

import jinja2
from fastapi import APIRouter, HTTPException, Query, Request, status
from fastapi import Path as PathParam
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from sse_starlette import EventSourceResponse

from api.db.keys import KeyRepository
from api.db.repository import STATUSES, AssessmentLabel, AssessmentRecord, RetryPlan, trial_summary
from api.runtime.runtime import Runtime
from api.runtime.service import AssessmentNotFound, NothingToRetry, domain_mismatch, retry_would_help
from api.runtime.tau2_interop import NotExportable, export_document
from api.security.auth import UI_LOGIN_PATH, UI_PREFIX, UI_SESSION_COOKIE, Principal, principal_for_key
from api.security.quotas import QuotaPolicy
from api.web import actions
from api.web.a2a.result import result_data
from api.web.deps import RuntimeDep
from api.web.schemas import MAX_OFFSET, AssessmentPublic, TrialPublic
from api.web.trial_view import diagnosed_trial
from api.web.trials_csv import csv_response, trials_csv
from api.web.ui import views
from api.web.ui.access import (
    csrf_token,
    keep_csrf_cookie,
    own_page_refusal,
    read_form,
    request_principal,
    same_origin_form,
    submitted_key,
    visible_assessment,
)
from api.web.ui.forms import NewAssessmentForm
from api.web.ui.live import progress_stream
from domain_kit import DataError, DomainData
from green_agent.config import SCRIPTED_USER, AssessmentConfig, ConfigError
from green_agent.core.history import history_length
from green_agent.domains import DEFAULT_DOMAIN, UnknownDomainError, domain_names
from green_agent.scoring.metrics import tasks_not_fully_solved
from green_agent.scoring.uncertainty import format_p

UI_DIR = Path(__file__).parent
STATIC_DIR = UI_DIR / "static"

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "connect-src 'self'",
        "form-action 'self'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    ]
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


def _pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False, default=str)


def _number(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "n/a"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min {rest:02d} s"


_environment = jinja2.Environment(
    loader=jinja2.FileSystemLoader(UI_DIR / "templates"),
    autoescape=True,  # every page: hostile text becomes text
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
_environment.filters.update(
    pretty_json=_pretty_json,
    number=_number,
    duration=_duration,
    short_id=views.short_id,
    agent_label=views.agent_label,
    end_reason=views.end_reason,
    tool_result=views.tool_result_view,
    estimate=views.estimate_text,
    interval=views.interval_text,
    p_value=format_p,
    trial_outcome=views.outcome,
    partial_coverage=views.partial_coverage,
)
_environment.tests.update(ended_badly=views.ended_badly)
_environment.globals.update(OUTCOMES=views.OUTCOMES, FAILURE_NAMES=views.FAILURE_NAMES, STATUSES=STATUSES)
templates = Jinja2Templates(env=_environment)

router = APIRouter(prefix="/ui", include_in_schema=False)

# Bounded like the REST twin's (GET /assessments/{id}/trials/{task}/{trial}): past a 32-bit integer the
# database cannot even compare it (SQLite overflows at 2^63, PostgreSQL's column at 2^31); a 422, not a 500.
TrialNumber = Annotated[int, PathParam(ge=0, le=MAX_OFFSET)]


def _page(
    request: Request,
    name: str,
    context: dict[str, Any],
    status_code: int = 200,
    headers: dict[str, str] | None = None,
) -> HTMLResponse:
    token = csrf_token(request)  # every form that changes something carries it (access.own_page_refusal)
    response = templates.TemplateResponse(
        request,
        name,
        {**context, "csrf_token": token},
        status_code=status_code,
        headers={**SECURITY_HEADERS, **(headers or {})},
    )
    if request.method == "GET":  # a page the browser opened; a form's answer never sets a cookie
        keep_csrf_cookie(request, response, token)
    return response


async def _domain_data(runtime: Runtime, name: str) -> DomainData | None:
    """The named domain's data (loaded on first use, in a thread); None when this service no longer runs it
    or its data cannot be loaded: the page then shows what is stored."""
    try:
        return await runtime.engine.load_domain(name)
    except (UnknownDomainError, DataError):
        return None


async def _task_ids(runtime: Runtime, record: AssessmentRecord) -> list[str]:
    """The tasks the assessment selected (empty if today's settings can no longer resolve them)."""
    if await _domain_data(runtime, record.domain) is None:
        return []
    try:
        return runtime.engine.validate(AssessmentConfig.model_validate(record.config))
    except (ValueError, ConfigError):
        return []


def _domain_choices(stored: list[str]) -> list[str]:
    """The domains to offer in a filter: those this service runs, in its order, then any other one stored
    assessments have (a domain run here before)."""
    served = list(domain_names())
    return served + [d for d in stored if d not in served]


# -- pages --------------------------------------------------------------------------------------------------


@router.get("")
async def assessments_page(
    request: Request,
    runtime: RuntimeDep,
    status_: Annotated[str | None, Query(alias="status")] = None,
    agent: str | None = None,
    domain: str | None = None,
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
) -> HTMLResponse:
    viewer = request_principal(request)
    status_filter = status_ if status_ in STATUSES else None
    agent_filter = agent or None
    domains = _domain_choices(await runtime.repository.domains(tenant=viewer.tenant_filter))
    domain_filter = domain if domain in domains else None
    size = runtime.settings.ui_page_size
    records, total = await runtime.repository.page(
        tenant=viewer.tenant_filter,
        status=status_filter,
        agent_url=agent_filter,
        domain=domain_filter,
        limit=size,
        offset=(page - 1) * size,
    )
    pages = max(1, -(-total // size))

    def page_link(number: int) -> str:
        query = {"status": status_filter, "agent": agent_filter, "domain": domain_filter, "page": number}
        return "/ui?" + urlencode({k: v for k, v in query.items() if v is not None})

    return _page(
        request,
        "assessments.html",
        {
            "viewer": viewer,
            "records": records,
            "total": total,
            "page": page,
            "pages": pages,
            "previous": page_link(page - 1) if page > 1 else None,
            "next": page_link(page + 1) if page < pages else None,
            "status_filter": status_filter,
            "agent_filter": agent_filter,
            "domain_filter": domain_filter,
            "domains": domains,
            "agents": await runtime.repository.agents(tenant=viewer.tenant_filter),
            "live_ids": [r.id for r in records if not r.finished],
            "complete": {r.id: r.report.complete for r in records if r.report is not None},
        },
    )


def _kind(kind: str | None) -> str | None:
    """A failure-kind filter from the query: one of the kinds, else none."""
    return kind if kind in views.FAILURE_NAMES else None


@router.get("/assessments/new")
async def new_assessment_page(request: Request, runtime: RuntimeDep) -> HTMLResponse:
    return await _new_assessment_form(request, runtime, request_principal(request), NewAssessmentForm())


@router.post("/assessments/new")
async def start_assessment(request: Request, runtime: RuntimeDep) -> Response:
    """The form's POST: the path of `POST /assessments` (actions.start), then the new assessment's page."""
    viewer = request_principal(request)
    form = await read_form(request)
    refusal = own_page_refusal(request, form)
    if refusal is not None:
        return _refused_page(request, viewer, refusal)
    submitted = NewAssessmentForm.submitted(form)
    config = submitted.config(runtime.engine.settings.default_user_model)
    if config is None:
        invalid = status.HTTP_422_UNPROCESSABLE_CONTENT
        return await _new_assessment_form(request, runtime, viewer, submitted, invalid)
    try:
        record, _ = await actions.start(
            runtime.service, viewer, config, door="ui", idempotency_key=submitted.idempotency_key
        )
    except actions.Refused as refused:
        submitted.refused(refused.field, refused.reason)
        return await _new_assessment_form(
            request, runtime, viewer, submitted, refused.status, _retry_after(refused)
        )
    return RedirectResponse(f"/ui/assessments/{record.id}", status_code=status.HTTP_303_SEE_OTHER)


def _retry_after(refused: actions.Refused | None) -> dict[str, str] | None:
    """A 429's Retry-After header, as the REST route sends it."""
    if refused is None or refused.retry_after_s is None:
        return None
    return {"Retry-After": str(refused.retry_after_s)}


async def _split_choices(runtime: Runtime) -> dict[str, str]:
    """Each split any domain of this service has, labelled with the domains that have it where not all do
    ("base", "train (retail, airline)"), short enough for a phone (sizes of all four domains' splits made the
    form wider than one); the server checks that the chosen domain has the chosen split."""
    holders: dict[str, list[str]] = {}
    for name in domain_names():
        data = await runtime.engine.load_domain(name)  # loaded once per process
        for split in data.splits:
            holders.setdefault(split, []).append(name)
    every = len(domain_names())
    return {
        split: split if len(names) == every else f"{split} ({', '.join(names)})"
        for split, names in holders.items()
    }


async def _new_assessment_form(
    request: Request,
    runtime: Runtime,
    viewer: Principal,
    form: NewAssessmentForm,
    status_code: int = 200,
    headers: dict[str, str] | None = None,
) -> HTMLResponse:
    settings = runtime.engine.settings
    quota = QuotaPolicy.from_settings(runtime.settings).for_tenant(viewer.tenant)
    return _page(
        request,
        "new.html",
        {
            "viewer": viewer,
            "form": form,
            "domains": domain_names(),
            "splits": await _split_choices(runtime),
            "user_models": [SCRIPTED_USER, *settings.user_models],
            "default_user_model": settings.default_user_model,
            "judge": _judge_model(runtime),
            "quota": quota,
        },
        status_code=status_code,
        headers=headers,
    )


def _judge_model(runtime: Runtime, record: AssessmentRecord | None = None) -> str | None:
    """The NL-assertion judge a new assessment gets, or (`record`) the one this assessment's retry would use:
    its own `judge_model`, else the service's. None: no judge (NL assertions are not judged)."""
    try:
        name = AssessmentConfig.model_validate(record.config).judge_model if record is not None else None
        endpoint = runtime.engine.settings.judge_endpoint(name)
    except (ValueError, ConfigError):  # a stored config today's settings no longer accept
        return None
    return endpoint.model if endpoint is not None else None


@router.get("/assessments/{assessment_id}")
async def assessment_page(
    request: Request, assessment_id: str, runtime: RuntimeDep, kind: str | None = None
) -> HTMLResponse:
    viewer = request_principal(request)
    return await _assessment_view(request, runtime, viewer, assessment_id, kind=kind)


async def _retry_plan(runtime: Runtime, record: AssessmentRecord) -> RetryPlan | None:
    """What Retry would run and judge again, for a finished assessment that has something left to do."""
    judged = _judge_model(runtime, record) is not None
    if not record.finished or not retry_would_help(record, judge_configured=judged):
        return None
    try:
        return await runtime.service.plan_retry(record, source="ui")
    except NothingToRetry:
        return None


async def _assessment_view(
    request: Request,
    runtime: Runtime,
    viewer: Principal,
    assessment_id: str,
    *,
    kind: str | None = None,
    refused: actions.Refused | None = None,
) -> HTMLResponse:
    """The assessment's page; after a refused action, with its reason, the REST status and Retry-After."""
    record = await visible_assessment(runtime, viewer, assessment_id)
    summaries = await runtime.repository.trial_summaries(assessment_id)
    task_ids = await _task_ids(runtime, record)
    trials = int(record.config.get("trials", 1))
    rows = views.grid(task_ids, trials, summaries)
    kind = _kind(kind)
    report = record.report
    tenant = viewer.tenant_filter
    source = await runtime.repository.get(record.rerun_of, tenant=tenant) if record.rerun_of else None
    size = runtime.settings.ui_page_size
    choices: list[AssessmentLabel] = []
    previous = None
    if report is not None:  # something to compare: the viewer's newest, and this agent's previous one
        # Of this assessment's domain only: assessments of two domains are not compared.
        before = await runtime.repository.labels(tenant=tenant, before=record, limit=1)
        previous = before[0] if before else None
        newest = await runtime.repository.labels(tenant=tenant, domain=record.domain, limit=size)
        choices = [c for c in newest if c.id != record.id]
        if previous is not None and previous.id not in {c.id for c in choices}:
            choices.append(previous)
    return _page(
        request,
        "assessment.html",
        {
            "viewer": viewer,
            "record": record,
            "report": report,
            "complete": report.complete if report is not None else None,
            # One bar alone says nothing the average does not: the chart needs two k or more.
            "chart": views.pass_hat_k_chart(report)
            if report is not None and len(report.pass_hat_k) > 1
            else None,
            "error_bars": views.error_bars_note(report) if report is not None else None,
            "grid": rows,
            "outcome_counts": views.outcome_counts(rows),
            "failures": views.common_failures(summaries, kind=kind),
            "kind": kind,
            "kind_counts": views.kind_counts(summaries),
            "failing_tasks": views.failing_tasks(summaries, kind=kind),
            "config_json": _pretty_json(record.config),
            "live": not record.finished,
            "waiting": [] if record.finished else runtime.service.waiting_for(record.id),
            "attempts": await runtime.repository.attempts(record.id),
            "action_error": refused.reason if refused is not None else None,
            "retry_plan": await _retry_plan(runtime, record),
            "judge": _judge_model(runtime, record),
            "rerun_tasks": tasks_not_fully_solved(task_ids, summaries, trials) if record.finished else [],
            "rerun_source": source,
            "reruns": await runtime.repository.labels(tenant=tenant, rerun_of=record.id, limit=size),
            "compare_choices": choices,
            "previous": previous,
        },
        status_code=refused.status if refused is not None else status.HTTP_200_OK,
        headers=_retry_after(refused),
    )


@router.get("/assessments/{assessment_id}/trials/{task_id}/{trial}")
async def trial_page(
    request: Request,
    assessment_id: str,
    task_id: str,
    trial: TrialNumber,
    runtime: RuntimeDep,
    kind: str | None = None,
) -> HTMLResponse:
    viewer = request_principal(request)
    record = await visible_assessment(runtime, viewer, assessment_id)
    result = await runtime.repository.get_trial(assessment_id, task_id, trial)
    if result is None:
        return _page(
            request,
            "error.html",
            {
                "viewer": viewer,
                "title": "Trial not found",
                "message": f"Assessment {assessment_id} has no finished trial {trial} of task {task_id}.",
            },
            status_code=404,
        )
    diagnosed = await diagnosed_trial(runtime, record.domain, result)
    data = await _domain_data(runtime, record.domain)
    started = result.transcript[0].timestamp if result.transcript else result.started_at
    previous = started
    timings = []  # (seconds since the first message, seconds since the previous one)
    for message in result.transcript:
        timings.append(
            ((message.timestamp - started).total_seconds(), (message.timestamp - previous).total_seconds())
        )
        previous = message.timestamp
    summary = trial_summary(result)
    kind = _kind(kind)
    previous_failed, next_failed = views.failed_neighbours(
        await runtime.repository.trial_summaries(assessment_id, failed_only=True), task_id, trial, kind=kind
    )
    history = await runtime.repository.task_history(
        record.agent_url,
        task_id,
        domain=record.domain,
        tenant=viewer.tenant_filter,
        limit=runtime.settings.ui_page_size,
    )
    return _page(
        request,
        "trial.html",
        {
            "viewer": viewer,
            "record": record,
            "result": result,
            "outcome": views.outcome(summary),
            "reasons": views.failure_reasons(summary),
            "failures": diagnosed.result.failures or [],
            "replay": diagnosed.replay,
            "customer": diagnosed.customer,
            "history_messages": history_length(
                data.tasks.get(task_id) if data is not None else None, result.transcript
            ),
            "task": data.tasks.get(task_id) if data is not None else None,
            "kind": kind,
            "previous_failed": previous_failed,
            "next_failed": next_failed,
            "history": history,
            "signals": views.signal_views(result),
            "show_usage": views.has_usage(result.usage),
            "messages": list(zip(result.transcript, timings, strict=True)),
        },
    )


@router.get("/compare")
async def compare_page(
    request: Request, runtime: RuntimeDep, id: Annotated[list[str] | None, Query()] = None
) -> HTMLResponse:
    viewer = request_principal(request)
    ids = [i for i in (id or []) if i]
    recent, _ = await runtime.repository.page(
        tenant=viewer.tenant_filter, limit=runtime.settings.ui_page_size
    )
    context: dict[str, Any] = {
        "viewer": viewer,
        "ids": ids,
        "error": None,
        "a": None,
        "b": None,
        "choices": recent,  # the newest assessments, to pick from
    }
    if len(ids) != 2:
        if ids:
            context["error"] = f"pick exactly two assessments to compare ({len(ids)} given)"
        return _page(request, "compare.html", context)  # the form again, saying what to change
    a = await visible_assessment(runtime, viewer, ids[0])
    b = await visible_assessment(runtime, viewer, ids[1])
    listed = {record.id for record in recent}
    context["choices"] = [*recent, *(record for record in (a, b) if record.id not in listed)]
    mismatch = domain_mismatch(a, b)
    if mismatch is not None:
        context["error"] = mismatch  # the form again, both picks kept, saying why
        return _page(request, "compare.html", context)
    summaries_a = await runtime.repository.trial_summaries(a.id)
    summaries_b = await runtime.repository.trial_summaries(b.id)
    deltas = views.compare_tasks(summaries_a, summaries_b)
    ks = sorted(set(a.report.pass_hat_k if a.report else {}) | set(b.report.pass_hat_k if b.report else {}))
    context.update(
        a=a,
        b=b,
        ks=ks,
        deltas=sorted(deltas, key=views.delta_order),
        verdict=views.compare_view(summaries_a, summaries_b),
        changes={c: sum(1 for d in deltas if d.change == c) for c in ("better", "worse", "same")},
    )
    return _page(request, "compare.html", context)


@router.get("/leaderboard")
async def leaderboard_page(
    request: Request,
    runtime: RuntimeDep,
    sort: str = "avg_reward",
    order: str = "desc",
    partial: bool = False,
    domain: str | None = None,
) -> HTMLResponse:
    """One domain's leaderboard at a time (scores of different domains are not comparable); the tabs switch
    domains. Without one named: the first domain, in the service's order, that has assessments."""
    viewer = request_principal(request)
    stored = await runtime.repository.domains(tenant=viewer.tenant_filter)
    domains = _domain_choices(stored)
    if domain not in domains:
        domain = next((d for d in domains if d in stored), DEFAULT_DOMAIN)
    assert domain is not None
    chosen = views.latest_per_agent(
        await runtime.repository.completed_scores(tenant=viewer.tenant_filter, domain=domain),
        include_partial=partial,
    )
    reports = await runtime.repository.reports([b.id for b in [*chosen.complete, *chosen.partial]])
    ranked = views.leaderboard_rows(chosen.complete, reports)
    partial_rows = views.leaderboard_rows(chosen.partial, reports)
    max_k = max((max(r.report.pass_hat_k, default=0) for r in [*ranked, *partial_rows]), default=0)
    columns = [*views.LEADERBOARD_COLUMNS, *(f"pass{k}" for k in range(1, max_k + 1))]
    if sort not in columns:
        sort = "avg_reward"
    descending = order != "asc"
    groups = [
        views.LeaderboardGroup(group.coverage, views.sort_leaderboard(group.rows, sort, descending))
        for group in views.group_by_coverage(ranked)
    ]

    def link(**changes: str | None) -> str:
        query: dict[str, str | None] = {"domain": domain, "partial": "true" if partial else None, **changes}
        return "/ui/leaderboard?" + urlencode({k: v for k, v in query.items() if v is not None})

    def sort_link(column: str) -> str:
        flip = "asc" if column == sort and descending else "desc"
        return link(sort=column, order=flip)

    data = await _domain_data(runtime, domain)

    return _page(
        request,
        "leaderboard.html",
        {
            "viewer": viewer,
            "groups": groups,
            "partial_rows": views.sort_leaderboard(partial_rows, sort, descending),
            "hidden": chosen.partial_hidden,
            "partial": partial,
            "all_tasks": len(data.tasks) if data is not None else 0,
            "domain": domain,
            "domain_links": {d: link(domain=d, partial=None) for d in domains},
            "ks": list(range(1, max_k + 1)),
            "sort": sort,
            "descending": descending,
            "sort_links": {c: sort_link(c) for c in columns},
            "toggle_partial": link(partial=None if partial else "true"),
        },
    )


# -- actions: cancel, retry, rerun what failed ----------------------------------------------------------
# Each is a POST from this service's own pages (access.own_page_refusal), done by api/web/actions.py exactly
# as its REST route does it: the same tenancy (another tenant's assessment is "not found", 404), the same
# refusals (their status and one-line reason, shown on the assessment's page) and the same log line.


def _refused_page(request: Request, viewer: Principal, reason: str) -> HTMLResponse:
    context = {"viewer": viewer, "title": "Refused", "message": reason}
    return _page(request, "error.html", context, status_code=status.HTTP_403_FORBIDDEN)


async def _act(
    request: Request,
    runtime: Runtime,
    assessment_id: str,
    action: Callable[[Principal], Awaitable[AssessmentRecord]],
) -> Response:
    viewer = request_principal(request)
    refusal = own_page_refusal(request, await read_form(request))
    if refusal is not None:
        return _refused_page(request, viewer, refusal)
    try:
        record = await action(viewer)
    except actions.Refused as refused:
        return await _assessment_view(request, runtime, viewer, assessment_id, refused=refused)
    return RedirectResponse(f"/ui/assessments/{record.id}", status_code=status.HTTP_303_SEE_OTHER)


@router.post("/assessments/{assessment_id}/cancel")
async def cancel_assessment(request: Request, assessment_id: str, runtime: RuntimeDep) -> Response:
    async def cancel(viewer: Principal) -> AssessmentRecord:
        return await actions.cancel(runtime.service, viewer, assessment_id, door="ui")

    return await _act(request, runtime, assessment_id, cancel)


@router.post("/assessments/{assessment_id}/retry")
async def retry_assessment(request: Request, assessment_id: str, runtime: RuntimeDep) -> Response:
    async def retry(viewer: Principal) -> AssessmentRecord:
        return await actions.retry(runtime.service, viewer, assessment_id, door="ui")

    return await _act(request, runtime, assessment_id, retry)


@router.post("/assessments/{assessment_id}/rerun-failed")
async def rerun_failed(request: Request, assessment_id: str, runtime: RuntimeDep) -> Response:
    """A new assessment of the failed tasks, with the source's config; its page opens."""

    async def rerun(viewer: Principal) -> AssessmentRecord:
        return await actions.rerun_failed(runtime.service, viewer, assessment_id, door="ui")

    return await _act(request, runtime, assessment_id, rerun)


# -- downloads and live progress --------------------------------------------------------------------------


def _download(body: Any, filename: str) -> JSONResponse:
    return JSONResponse(
        body,
        headers={
            "Content-Disposition": f'attachment; filename="{filename}"',
            "X-Content-Type-Options": "nosniff",
        },
    )


@router.get("/assessments/{assessment_id}/report.json")
async def report_download(request: Request, assessment_id: str, runtime: RuntimeDep) -> JSONResponse:
    record = await visible_assessment(runtime, request_principal(request), assessment_id)
    body = AssessmentPublic.from_record(record).model_dump(mode="json")
    return _download(body, f"assessment-{record.id}.json")


@router.get("/assessments/{assessment_id}/leaderboard.json")
async def leaderboard_download(request: Request, assessment_id: str, runtime: RuntimeDep) -> JSONResponse:
    record = await visible_assessment(runtime, request_principal(request), assessment_id)
    if record.report is None:
        raise HTTPException(status.HTTP_409_CONFLICT, f"assessment {assessment_id} has no report yet")
    body = {"participants": {"agent": record.agent_url}, "results": [result_data(record, record.report)]}
    return _download(body, f"leaderboard-{record.id}.json")


def _file_part(text: str) -> str:
    """`text` as part of a download's file name (the header quotes it): letters, digits, - and _ only."""
    return "".join(c if c.isascii() and (c.isalnum() or c in "-_") else "_" for c in text)[:64]


@router.get("/assessments/{assessment_id}/trials.csv")
async def trials_csv_download(request: Request, assessment_id: str, runtime: RuntimeDep) -> Response:
    record = await visible_assessment(runtime, request_principal(request), assessment_id)
    summaries = await runtime.repository.trial_summaries(record.id)
    return csv_response(trials_csv(summaries, f"/ui/assessments/{record.id}/trials"), record.id)


@router.get("/assessments/{assessment_id}/tau2.json")
async def tau2_download(request: Request, assessment_id: str, runtime: RuntimeDep) -> JSONResponse:
    record = await visible_assessment(runtime, request_principal(request), assessment_id)
    try:
        document = await export_document(runtime, record.id)
    except NotExportable as exc:
        raise HTTPException(status.HTTP_409_CONFLICT, str(exc)) from None
    return _download(document, f"{record.id}_{record.domain}_tau2.json")


@router.get("/assessments/{assessment_id}/trials/{task_id}/{trial}/trial.json")
async def trial_download(
    request: Request, assessment_id: str, task_id: str, trial: TrialNumber, runtime: RuntimeDep
) -> JSONResponse:
    """The trial as the REST API returns it (failures included)."""
    record = await visible_assessment(runtime, request_principal(request), assessment_id)
    result = await runtime.repository.get_trial(record.id, task_id, trial)
    if result is None:
        missing = f"assessment {assessment_id} has no finished trial {trial} of task {task_id}"
        raise HTTPException(status.HTTP_404_NOT_FOUND, missing)
    diagnosed = await diagnosed_trial(runtime, record.domain, result)
    body = TrialPublic.of(diagnosed.result, record.domain, diagnosed.customer).model_dump(mode="json")
    return _download(body, f"trial-{record.id}-{_file_part(task_id)}-{trial}.json")


@router.get("/live")
async def live_progress(
    request: Request,
    runtime: RuntimeDep,
    id: Annotated[list[str], Query(min_length=1)],
    trials: bool = False,
) -> EventSourceResponse:
    viewer = request_principal(request)
    ids = list(dict.fromkeys(id))
    if len(ids) > runtime.settings.ui_page_size:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT,
            f"at most {runtime.settings.ui_page_size} assessments per stream (GREEN_AGENT_UI_PAGE_SIZE)",
        )
    for assessment_id in ids:
        await visible_assessment(runtime, viewer, assessment_id)
    stream = progress_stream(
        runtime.service, ids, with_trials=trials, queue_events=runtime.settings.ui_live_queue_events
    )
    return EventSourceResponse(stream, ping=15)


# -- signing in ---------------------------------------------------------------------------------------------


def _safe_next(target: str | None) -> str:
    """Only paths of this UI: never an absolute URL or a scheme-relative one (an open redirect)."""
    if target and target.startswith("/ui") and not target.startswith("//"):
        return target
    return "/ui"


async def _keys_required(runtime: Runtime) -> bool:
    """Whether the service checks API keys (once any key was created; open mode before)."""
    return await KeyRepository(runtime.database).any_exist()


async def _login_form(
    request: Request, runtime: Runtime, next: str | None, error: str | None = None, status_code: int = 200
) -> HTMLResponse:
    context = {
        "viewer": None,
        "next": _safe_next(next),
        "error": error,
        "keys_required": await _keys_required(runtime),
    }
    return _page(request, "login.html", context, status_code=status_code)


@router.get("/login")
async def login_page(request: Request, runtime: RuntimeDep, next: str | None = None) -> HTMLResponse:
    return await _login_form(request, runtime, next)


@router.post("/login")
async def login(request: Request, runtime: RuntimeDep, next: str | None = None) -> Response:
    if not same_origin_form(request):
        # Login CSRF: another site posting its own key would sign this browser in as someone else.
        return await _login_form(request, runtime, next, "Sign in from this service's own page.", 403)
    key = await submitted_key(request)  # None: empty, or larger than any key
    if key is not None and not await _keys_required(runtime):
        return RedirectResponse(_safe_next(next), status_code=status.HTTP_303_SEE_OTHER)  # open mode
    if key is None or await principal_for_key(KeyRepository(runtime.database), key) is None:
        return await _login_form(request, runtime, next, "That key is not valid.", 401)
    response = RedirectResponse(_safe_next(next), status_code=status.HTTP_303_SEE_OTHER)
    response.set_cookie(
        UI_SESSION_COOKIE,
        key,
        path=UI_PREFIX,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


@router.post("/logout")
async def logout(request: Request) -> Response:
    if not same_origin_form(request):
        raise HTTPException(status.HTTP_403_FORBIDDEN, "sign out from this service's own page")
    response = RedirectResponse(UI_LOGIN_PATH, status_code=status.HTTP_303_SEE_OTHER)
    response.delete_cookie(UI_SESSION_COOKIE, path=UI_PREFIX, httponly=True, samesite="strict")
    return response


def not_found_page(request: Request, exc: AssessmentNotFound) -> HTMLResponse:
    return _page(
        request, "error.html", {"viewer": None, "title": "Not found", "message": str(exc)}, status_code=404
    )
