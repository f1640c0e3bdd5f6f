"""What a requester does to assessments (start, cancel, retry, rerun what failed): one function per action,
shared by the REST routes (api/web/routes/assessments.py) and the web UI's forms (api/web/ui/routes.py).

Each function applies the caller's tenancy exactly as every read does (`principal.tenant_filter`: a tenant
acts on its own assessments, an admin on every tenant's, open mode's single user on all; another tenant's
assessment raises AssessmentNotFound, a 404 worded like an unknown id), calls `AssessmentService`, logs what
was done (or refused), by whom and through which door, and turns the service's refusals into one `Refused`:
the HTTP status the REST API answers with and the one-line reason both doors show.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

from fastapi import HTTPException, status

from api.db.repository import AssessmentRecord, IdempotencyConflict
from api.runtime.service import AssessmentNotFound, AssessmentService, NothingToRerun, NothingToRetry
from api.security.auth import Principal
from api.security.quotas import QuotaExceeded
from green_agent.config import AssessmentConfig, ConfigError

logger = logging.getLogger(__name__)

Door = Literal["rest", "ui"]
"""How the request came in: the REST API or the web UI's forms (stored as the assessment's or attempt's
source)."""


class Refused(Exception):
    """The action cannot be done: `status` is the REST API's answer (409, 422, 429), `reason` one line saying
    what to change, `field` the config field at fault when there is one (the UI shows the reason next to
    it), `location` where a 422 points in the REST request, `retry_after_s` when to try again (429)."""

    def __init__(
        self,
        status_code: int,
        reason: str,
        *,
        field: str | None = None,
        location: list[str] | None = None,
        retry_after_s: int | None = None,
    ) -> None:
        super().__init__(reason)
        self.status = status_code
        self.reason = reason
        self.field = field
        self.location = location or ["body"]
        self.retry_after_s = retry_after_s

    def http_exception(self) -> HTTPException:
        """The REST API's answer: a 422 shaped like FastAPI's validation errors, a 429 with Retry-After."""
        if self.status == status.HTTP_422_UNPROCESSABLE_CONTENT:
            detail: Any = [{"loc": self.location, "msg": self.reason, "type": "value_error"}]
            return HTTPException(self.status, detail=detail)
        headers = {"Retry-After": str(self.retry_after_s)} if self.retry_after_s is not None else None
        return HTTPException(self.status, self.reason, headers=headers)


def _too_many(exc: QuotaExceeded) -> Refused:
    return Refused(status.HTTP_429_TOO_MANY_REQUESTS, str(exc), retry_after_s=exc.retry_after_s)


def _invalid(exc: ConfigError) -> Refused:
    return Refused(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc), field=exc.field)


def _who(principal: Principal, door: Door) -> str:
    key = f"key {principal.key_id}" if principal.key_id else "open mode"
    return f"tenant {principal.tenant!r} ({key}{', admin' if principal.admin else ''}) via {door}"


def _refused(action: str, target: str, principal: Principal, door: Door, reason: object) -> None:
    logger.info("%s of %s refused for %s: %s", action, target, _who(principal, door), reason)


async def start(
    service: AssessmentService,
    principal: Principal,
    config: AssessmentConfig,
    *,
    door: Door,
    idempotency_key: str | None = None,
) -> tuple[AssessmentRecord, bool]:
    """A new assessment of the caller's tenant (`POST /assessments`, the UI's form): the service's checks
    (engine, egress for the caller's key, quotas) apply. Returns it and whether it is new (False: the
    tenant's idempotency key found the one an earlier request made)."""
    try:
        record, created = await service.create(
            config,
            source=door,
            tenant=principal.tenant,
            allow_private_agents=principal.allow_private_agents,
            idempotency_key=idempotency_key,
        )
    except ConfigError as exc:
        _refused("start", config.agent_url, principal, door, exc)
        raise _invalid(exc) from None
    except IdempotencyConflict as exc:
        _refused("start", config.agent_url, principal, door, exc)
        raise Refused(
            status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc), location=["header", "Idempotency-Key"]
        ) from None
    except QuotaExceeded as exc:
        _refused("start", config.agent_url, principal, door, exc)
        raise _too_many(exc) from None
    if created:
        logger.info(
            "assessment %s started for %s: %s, %d trials",
            record.id,
            _who(principal, door),
            record.agent_url,
            record.trials_total,
        )
    return record, created


async def cancel(
    service: AssessmentService, principal: Principal, assessment_id: str, *, door: Door
) -> AssessmentRecord:
    """Cancel a queued or running assessment; a finished one is refused (409)."""
    try:
        before = await service.get(assessment_id, tenant=principal.tenant_filter)
    except AssessmentNotFound as exc:
        _refused("cancel", assessment_id, principal, door, exc)
        raise
    if before.finished:
        reason = (
            f"assessment {assessment_id} is already {before.status}; only queued or running "
            "assessments can be cancelled"
        )
        _refused("cancel", assessment_id, principal, door, reason)
        raise Refused(status.HTTP_409_CONFLICT, reason)
    record = await service.cancel(before.id)
    logger.info("assessment %s cancelled by %s", record.id, _who(principal, door))
    return record


async def retry(
    service: AssessmentService, principal: Principal, assessment_id: str, *, door: Door
) -> AssessmentRecord:
    """Retry a finished assessment in place (AssessmentService.retry), under the caller's rights as they are
    now (egress rule, quotas): 409 when it is running or has nothing left to do, 422 when the caller may not
    run it (the agent URL refused by the caller's egress rule, or larger than the caller's tenant may run),
    429 when a quota has no room for it now."""
    try:
        record = await service.retry(assessment_id, source=door, caller=principal)
    except AssessmentNotFound as exc:
        _refused("retry", assessment_id, principal, door, exc)
        raise
    except NothingToRetry as exc:
        _refused("retry", assessment_id, principal, door, exc)
        raise Refused(status.HTTP_409_CONFLICT, str(exc)) from None
    except ConfigError as exc:
        _refused("retry", assessment_id, principal, door, exc)
        raise _invalid(exc) from None
    except QuotaExceeded as exc:
        _refused("retry", assessment_id, principal, door, exc)
        raise _too_many(exc) from None
    logger.info("assessment %s: attempt %d started by %s", record.id, record.attempt, _who(principal, door))
    return record


async def rerun_failed(
    service: AssessmentService,
    principal: Principal,
    assessment_id: str,
    overrides: dict[str, Any] | None = None,
    *,
    door: Door,
) -> AssessmentRecord:
    """A new assessment of the caller's tenant over the tasks this one did not solve in every trial
    (AssessmentService.rerun_failed): 409 when it is running or solved everything, 422 when the overrides
    cannot run, 429 when a quota is full."""
    try:
        record, tasks = await service.rerun_failed(
            assessment_id,
            overrides,
            source=door,
            caller=principal,
        )
    except AssessmentNotFound as exc:
        _refused("rerun-failed", assessment_id, principal, door, exc)
        raise
    except NothingToRerun as exc:
        _refused("rerun-failed", assessment_id, principal, door, exc)
        raise Refused(status.HTTP_409_CONFLICT, str(exc)) from None
    except ConfigError as exc:
        _refused("rerun-failed", assessment_id, principal, door, exc)
        raise _invalid(exc) from None
    except QuotaExceeded as exc:
        _refused("rerun-failed", assessment_id, principal, door, exc)
        raise _too_many(exc) from None
    logger.info(
        "assessment %s started for %s: rerun of the %d failed task(s) of %s",
        record.id,
        _who(principal, door),
        len(tasks),
        assessment_id,
    )
    return record
