"""Fan-out of assessment progress, for SSE streams and the A2A executor, within and across processes.

The engine reports through `on_event`; the service stores what must be stored, then publishes. `ProgressHub`
is the in-process fan-out: each subscriber gets its own bounded queue, and a subscriber that falls too far
behind is cut off (it gets a `lagged` marker and its stream ends) rather than making memory grow or slowing
the assessment down. On PostgreSQL, where a trial may run in another process than the stream that shows it,
`EventRelay` carries every event through PostgreSQL NOTIFY to every process's hub (the publisher's own
included), so a stream on any API process sees the trials of every worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Literal, Protocol

from procrastinate import BaseConnector
from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from green_agent.models import TrialStarted, TurnTaken

logger = logging.getLogger(__name__)


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
_HUB_EVENT: TypeAdapter[HubEvent] = TypeAdapter(Annotated[HubEvent, Field(discriminator="kind")])


class EventSink(Protocol):
    def publish(self, assessment_id: str, event: HubEvent) -> None: ...


QUEUE_SIZE = 10_000
"""Events one subscriber may have waiting (GREEN_AGENT_STREAM_QUEUE_EVENTS sets the service's)."""


class Subscription:
    """One reader's bounded queue. `accept` filters what is queued at all (a reader that shows only trial
    ends does not hold turns)."""

    def __init__(
        self, queue_size: int = QUEUE_SIZE, accept: Callable[[HubEvent], bool] | None = None
    ) -> None:
        self.queue: asyncio.Queue[HubEvent] = asyncio.Queue(max(1, queue_size))
        self.lagged = False
        self._accept = accept

    def offer(self, event: HubEvent) -> None:
        if self.lagged or (self._accept is not None and not self._accept(event)):
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

    def __init__(self, queue_size: int = QUEUE_SIZE) -> None:
        self.queue_size = queue_size
        self._subscribers: dict[str, set[Subscription]] = defaultdict(set)

    def publish(self, assessment_id: str, event: HubEvent) -> None:
        for subscription in list(self._subscribers.get(assessment_id, ())):
            subscription.offer(event)

    @asynccontextmanager
    async def subscribe(
        self,
        assessment_id: str,
        *,
        queue_size: int | None = None,
        accept: Callable[[HubEvent], bool] | None = None,
    ) -> AsyncIterator[Subscription]:
        subscription = Subscription(self.queue_size if queue_size is None else queue_size, accept)
        self._subscribers[assessment_id].add(subscription)
        try:
            yield subscription
        finally:
            subscribers = self._subscribers.get(assessment_id)
            if subscribers is not None:
                subscribers.discard(subscription)
                if not subscribers:
                    del self._subscribers[assessment_id]


CHANNEL = "green_agent_progress"
# PostgreSQL refuses NOTIFY payloads of 8000 bytes or more; a turn whose message is longer is relayed with its
# text cut (the whole transcript is under /trials once the trial is stored).
MAX_PAYLOAD_BYTES = 7_500
RELAY_QUEUE_SIZE = 10_000
RELAY_BATCH = 200


def _payload(assessment_id: str, event: HubEvent) -> str:
    payload = json.dumps({"a": assessment_id, "e": event.model_dump(mode="json")})
    if len(payload.encode()) < MAX_PAYLOAD_BYTES or not isinstance(event, TurnTaken):
        return payload
    message = event.message
    room = max(0, len(message.content or "") - (len(payload.encode()) - MAX_PAYLOAD_BYTES) - 64)
    cut = message.model_copy(
        update={"content": (message.content or "")[:room] + " [cut; see the transcript]", "tool_calls": None}
    )
    return _payload(assessment_id, event.model_copy(update={"message": cut}))


class EventRelay:
    """Publishes into PostgreSQL NOTIFY (batched, never blocking the caller) and feeds what it hears on the
    channel into the local hub. A relay that cannot keep up drops events and says so in the log."""

    def __init__(self, hub: ProgressHub, connector: BaseConnector) -> None:
        self.hub = hub
        self._connector = connector
        self._outbox: asyncio.Queue[str] = asyncio.Queue(RELAY_QUEUE_SIZE)
        self.dropped = 0

    def publish(self, assessment_id: str, event: HubEvent) -> None:
        try:
            self._outbox.put_nowait(_payload(assessment_id, event))
        except asyncio.QueueFull:
            self.dropped += 1
            if self.dropped % 1000 == 1:
                logger.warning("progress relay is behind; %d events dropped so far", self.dropped)

    async def run(self) -> None:
        """Listen and send until cancelled (the connector reconnects its listener after a database outage)."""
        listening = asyncio.create_task(self._listen(), name="progress relay: listen")
        try:
            await self._send_forever()
        finally:
            listening.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await listening

    async def _listen(self) -> None:
        while True:
            try:
                await self._connector.listen_notify(self._received, [CHANNEL])
            except Exception as exc:
                logger.warning("progress relay lost its listener (%s: %s); retrying", type(exc).__name__, exc)
            await asyncio.sleep(1.0)

    async def _received(self, *, channel: str, payload: str) -> None:
        try:
            message = json.loads(payload)
            self.hub.publish(message["a"], _HUB_EVENT.validate_python(message["e"]))
        except (ValueError, KeyError, TypeError, ValidationError) as exc:
            logger.warning("ignored a malformed progress notification: %s", exc)

    async def _send_forever(self) -> None:
        while True:
            batch = [await self._outbox.get()]
            while len(batch) < RELAY_BATCH and not self._outbox.empty():
                batch.append(self._outbox.get_nowait())
            while True:
                try:
                    await self._connector.execute_query_async(
                        "SELECT pg_notify(%(channel)s, payload) FROM unnest(%(payloads)s::text[]) AS payload",
                        channel=CHANNEL,
                        payloads=batch,
                    )
                    break
                except Exception as exc:  # the database is away: keep the batch and try again
                    logger.warning("progress relay cannot notify (%s: %s)", type(exc).__name__, exc)
                    await asyncio.sleep(1.0)
