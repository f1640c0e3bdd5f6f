"""In-process fan-out of assessment progress, for SSE streams and the A2A executor.

The engine reports through `on_event`; the service stores what must be stored, then publishes here. Each
subscriber gets its own bounded queue: a subscriber that falls too far behind is cut off (it gets a `lagged`
marker and its stream ends) rather than making memory grow or slowing the assessment down.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Literal

from pydantic import BaseModel

from green_agent.models import TrialStarted, TurnTaken


class StatusChanged(BaseModel):
    """The assessment's status or progress count changed."""

    kind: Literal["status"] = "status"
    assessment_id: str
    status: str
    trials_done: int
    trials_total: int
    error: str | None = None


class TrialDone(BaseModel):
    """A trial finished and is committed (a compact view; the full result is under /trials)."""

    kind: Literal["trial_finished"] = "trial_finished"
    task_id: str
    trial: int
    termination_reason: str
    reward: float | None
    is_successful: bool | None
    trials_done: int
    trials_total: int


class Lagged(BaseModel):
    """This subscriber fell behind and was dropped; reconnect and re-read the assessment."""

    kind: Literal["lagged"] = "lagged"


HubEvent = TrialStarted | TurnTaken | TrialDone | StatusChanged | Lagged

QUEUE_SIZE = 10_000


class Subscription:
    def __init__(self) -> None:
        self.queue: asyncio.Queue[HubEvent] = asyncio.Queue(QUEUE_SIZE)
        self.lagged = False

    def offer(self, event: HubEvent) -> None:
        if self.lagged:
            return
        try:
            self.queue.put_nowait(event)
        except asyncio.QueueFull:
            self.lagged = True
            # Make room for the marker so the reader learns why its stream ends.
            self.queue.get_nowait()
            self.queue.put_nowait(Lagged())

    async def __aiter__(self) -> AsyncIterator[HubEvent]:
        while True:
            event = await self.queue.get()
            yield event
            if isinstance(event, Lagged):
                return


class ProgressHub:
    """Publish/subscribe by assessment id; publishing never blocks."""

    def __init__(self) -> None:
        self._subscribers: dict[str, set[Subscription]] = defaultdict(set)

    def publish(self, assessment_id: str, event: HubEvent) -> None:
        for subscription in list(self._subscribers.get(assessment_id, ())):
            subscription.offer(event)

    @asynccontextmanager
    async def subscribe(self, assessment_id: str) -> AsyncIterator[Subscription]:
        subscription = Subscription()
        self._subscribers[assessment_id].add(subscription)
        try:
            yield subscription
        finally:
            subscribers = self._subscribers.get(assessment_id)
            if subscribers is not None:
                subscribers.discard(subscription)
                if not subscribers:
                    del self._subscribers[assessment_id]
