"""/assessments/{id}/events: progress as server-sent events.

The stream opens with a `status` event (the current state) and, when the run waits for one of our LLM
endpoints, a `waiting` event; then it relays `trial_started`, `turn_taken`, `trial_finished`, `waiting`
(`{"waiting_for": ["waiting for M at H: down since HH:MM:SS"]}`, an empty list once they answer) and `status`
events as they happen, and ends after the status turns terminal. Subscribing
happens before the state is read, so nothing that happens in between is lost.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from fastapi import APIRouter
from sse_starlette import EventSourceResponse, ServerSentEvent

from api.db.repository import TERMINAL
from api.runtime.events import Lagged, ProviderWaiting, StatusChanged
from api.security.auth import PrincipalDep
from api.web.deps import ServiceDep
from api.web.schemas import NOT_FOUND

router = APIRouter(prefix="/assessments/{assessment_id}/events", tags=["events"], responses=NOT_FOUND)


@router.get(
    "",
    summary="Progress as server-sent events",
    response_class=EventSourceResponse,
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def assessment_events(
    assessment_id: str, service: ServiceDep, principal: PrincipalDep
) -> EventSourceResponse:
    # Unknown ids, and other tenants' assessments, are 404 before the stream starts.
    await service.get(assessment_id, tenant=principal.tenant_filter)

    async def stream() -> AsyncIterator[ServerSentEvent]:
        async with service.subscribe(assessment_id) as subscription:
            record = await service.get(assessment_id)
            current = StatusChanged(
                assessment_id=record.id,
                status=record.status,
                trials_done=record.trials_done,
                trials_total=record.trials_total,
                error=record.error,
            )
            yield ServerSentEvent(data=current.model_dump_json(), event=current.kind)
            if record.finished:
                return
            if waiting := service.waiting_for(assessment_id):  # what it waits for already, if anything
                now = ProviderWaiting(waiting_for=waiting)
                yield ServerSentEvent(data=now.model_dump_json(), event=now.kind)
            async for event in subscription:
                yield ServerSentEvent(data=event.model_dump_json(), event=event.kind)
                if isinstance(event, Lagged) or (
                    isinstance(event, StatusChanged) and event.status in TERMINAL
                ):
                    return

    return EventSourceResponse(stream(), ping=15)
