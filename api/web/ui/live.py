"""Live progress for the web UI: one server-sent-events stream that follows several assessments at once.

A browser keeps only ~6 HTTP/1.1 connections per host, so the list page cannot open one stream per running
assessment; it opens this one, for every unfinished assessment on the page. Each event is `progress`
(`{assessment_id, status, trials_done, trials_total, waiting_for}`); the stream starts with the current state
of each, sends a new event per finished trial, status change or change of what the run waits for among our
LLM endpoints, and ends once all of them are finished (or when the
reader falls behind: its bounded queue ends with `lagged`, the stream ends, and the browser reconnects and
starts from the current state again; a reader that stops reading altogether is dropped by
`api.runtime.streams`).

Asked `with_trials` (the assessment page), it also sends a `trial` event per finished trial (first one for
each trial already stored, then as each finishes), with the grid cell that trial now has (`{assessment_id,
task_id, trial, outcome, title, href, kinds}`), read back from storage: `kinds` are the trial's failure
kinds, so a page filtered by kind dims the square as it would have rendered it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from urllib.parse import quote

from pydantic import BaseModel
from sse_starlette import ServerSentEvent

from api.db.repository import TERMINAL, AssessmentRepository, TrialSummary
from api.runtime.events import (
    PROGRESS_ONLY,
    HubEvent,
    Lagged,
    ProviderWaiting,
    StatusChanged,
    Subscription,
    TrialDone,
)
from api.runtime.service import AssessmentService
from api.settings import default_of
from api.web.ui import views

QUEUE_EVENTS: int = default_of("ui_live_queue_events")
"""Finished trials and status changes one assessment's subscription may hold for a live stream
(GREEN_AGENT_UI_LIVE_QUEUE_EVENTS)."""


class Progress(BaseModel):
    assessment_id: str
    status: str
    trials_done: int
    trials_total: int
    waiting_for: list[str] = []
    """What the run waits for among our LLM endpoints ("waiting for M at H: down since HH:MM:SS")."""


def _event(progress: Progress) -> ServerSentEvent:
    return ServerSentEvent(data=progress.model_dump_json(), event="progress")


async def _forward(
    assessment_id: str, subscription: Subscription, merged: asyncio.Queue[tuple[str, HubEvent]]
) -> None:
    async for event in subscription:
        await merged.put((assessment_id, event))


class TrialCell(BaseModel):
    assessment_id: str
    task_id: str
    trial: int
    outcome: str
    title: str
    href: str
    kinds: list[str]
    """The trial's failure kinds (`views.trial_kinds`): names from the fixed `FAILURE_KINDS`, at most one
    each, so bounded and nothing the page would not show anyway (its squares' colours and the filter)."""


async def _trial_cell(
    repository: AssessmentRepository, assessment_id: str, done: TrialDone
) -> TrialCell | None:
    summary = await repository.get_trial_summary(assessment_id, done.task_id, done.trial)
    return None if summary is None else _cell_event(assessment_id, summary)


def _cell_event(assessment_id: str, summary: TrialSummary) -> TrialCell:
    cell = views.cell(summary)
    href = f"/ui/assessments/{assessment_id}/trials/{quote(cell.task_id, safe='')}/{cell.trial}"
    return TrialCell(
        assessment_id=assessment_id,
        task_id=cell.task_id,
        trial=cell.trial,
        outcome=cell.outcome,
        title=cell.title,
        href=href,
        kinds=list(cell.kinds),
    )


async def progress_stream(
    service: AssessmentService,
    ids: Sequence[str],
    *,
    with_trials: bool = False,
    queue_events: int = QUEUE_EVENTS,
) -> AsyncIterator[ServerSentEvent]:
    """Memory per stream is bounded: each assessment's subscription queues at most `queue_events` finished
    trials and status changes (turns are not queued at all), and the forwarders hand them on one at a time
    (a forwarder waits while the stream is behind, so its subscription fills and ends with `lagged`)."""
    async with contextlib.AsyncExitStack() as stack:
        subscriptions = {
            i: await stack.enter_async_context(
                service.subscribe(i, queue_size=queue_events, accept=PROGRESS_ONLY)
            )
            for i in ids
        }
        # Subscribed before reading the state: nothing that happens in between is lost.
        open_ids = set()
        last: dict[str, Progress] = {}
        for assessment_id in ids:
            record = await service.get(assessment_id)
            last[assessment_id] = Progress(
                assessment_id=record.id,
                status=record.status,
                trials_done=record.trials_done,
                trials_total=record.trials_total,
                waiting_for=[] if record.finished else service.waiting_for(record.id),
            )
            yield _event(last[assessment_id])
            if not record.finished:
                open_ids.add(assessment_id)
                if with_trials:
                    # The page was drawn before this stream subscribed: a trial that finished in between
                    # would stay pending on it until a reload. One event per stored trial (as many as the
                    # page drew squares; the page replaces a square with the same one).
                    for summary in await service.repository.trial_summaries(assessment_id):
                        stored = _cell_event(assessment_id, summary)
                        yield ServerSentEvent(data=stored.model_dump_json(), event="trial")
        if not open_ids:
            return
        merged: asyncio.Queue[tuple[str, HubEvent]] = asyncio.Queue(1)
        forwarders = [
            asyncio.create_task(_forward(i, subscriptions[i], merged), name=f"ui-live-{i}") for i in open_ids
        ]
        try:
            while open_ids:
                assessment_id, event = await merged.get()
                if isinstance(event, Lagged):  # the browser reconnects and starts from the stored state
                    yield ServerSentEvent(data=event.model_dump_json(), event=event.kind)
                    return
                shown = last[assessment_id]
                if isinstance(event, StatusChanged):
                    update: dict[str, object] = {"status": event.status}
                    if event.status in TERMINAL:
                        open_ids.discard(assessment_id)
                        update["waiting_for"] = []
                elif isinstance(event, ProviderWaiting):
                    update = {"waiting_for": event.waiting_for}
                elif not isinstance(event, TrialDone):
                    continue  # turns and trial starts do not move a progress bar
                else:
                    update = {"trials_done": event.trials_done, "trials_total": event.trials_total}
                    if with_trials and (cell := await _trial_cell(service.repository, assessment_id, event)):
                        yield ServerSentEvent(data=cell.model_dump_json(), event="trial")
                last[assessment_id] = shown.model_copy(update=update)
                yield _event(last[assessment_id])
        finally:
            for task in forwarders:
                task.cancel()
            await asyncio.gather(*forwarders, return_exceptions=True)
