"""Fan-out of assessment progress, for SSE streams and the A2A executor, within and across processes.

The engine reports through `on_event`; the service stores what must be stored, then publishes. `ProgressHub`
is the in-process fan-out: each subscriber gets its own bounded queue, and a subscriber that falls too far
behind is cut off (it gets a `lagged` marker and its stream ends) rather than making memory grow or slowing
the assessment down. On PostgreSQL, where a trial may run in another process than the stream that shows it,
`EventRelay` puts every event in the local hub and carries it through PostgreSQL NOTIFY to the other
processes' hubs, so a stream on any API process sees the trials of every worker.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections import OrderedDict, defaultdict
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Annotated, Literal, Protocol

import psycopg
from procrastinate import BaseConnector
from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from api.runtime.queue_connector import NOTIFY_BATCH
from api.settings import Settings, default_of
from green_agent.core.models import TrialStarted, TurnTaken

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


class ProviderWaiting(BaseModel):
    """What the assessment is waiting for among our LLM endpoints, sent when it changes: each entry reads
    "waiting for gpt-4.1 at api.openai.com: rate limited" or "...: down since 14:02:11"; empty once they all
    answer again (green_agent/llm/gate.py)."""

    kind: Literal["waiting"] = "waiting"
    waiting_for: list[str]


class Lagged(BaseModel):
    """This subscriber fell behind and was dropped; reconnect and re-read the assessment."""

    kind: Literal["lagged"] = "lagged"


HubEvent = TrialStarted | TurnTaken | TrialDone | StatusChanged | ProviderWaiting | Lagged
_HUB_EVENT: TypeAdapter[HubEvent] = TypeAdapter(Annotated[HubEvent, Field(discriminator="kind")])


class EventSink(Protocol):
    def publish(self, assessment_id: str, event: HubEvent) -> None: ...


QUEUE_SIZE: int = default_of("stream_queue_events")
"""Events one subscriber may have waiting (GREEN_AGENT_STREAM_QUEUE_EVENTS sets the service's)."""


EventKinds = tuple[type[HubEvent], ...]
STATUS_ONLY: EventKinds = (StatusChanged,)
PROGRESS_ONLY: EventKinds = (StatusChanged, TrialDone, ProviderWaiting)
"""What a progress display shows: status changes, finished trials and what the run waits for (turns and
trial starts do not move it)."""
WAITING_REMEMBERED = 1024
"""Assessments whose latest `ProviderWaiting` a hub remembers (for a REST read of the progress): the oldest
is forgotten past it, and an assessment's entry is dropped when it finishes or waits for nothing."""
PER_TURN: EventKinds = (TurnTaken, TrialStarted)
"""The events published on every turn: they cross processes only for subscriptions that take them."""


class Subscription:
    """One reader's bounded queue. `accept` (event classes; None = all) filters what is queued at all: a
    reader that shows only trial ends does not hold turns, and does not make other processes send them."""

    def __init__(self, queue_size: int = QUEUE_SIZE, accept: EventKinds | None = None) -> None:
        self.queue: asyncio.Queue[HubEvent] = asyncio.Queue(max(1, queue_size))
        self.lagged = False
        self._accept = accept
        self.follows_turns = accept is None or any(issubclass(kind, PER_TURN) for kind in accept)

    def offer(self, event: HubEvent) -> None:
        if self.lagged or (self._accept is not None and not isinstance(event, self._accept)):
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
        # Subscriptions that take per-turn events, by assessment. Listeners are told (assessment id, True)
        # when an assessment gets its first such subscription here, False when its last one leaves: the relay
        # announces it, so other processes send its turns here only while needed.
        self._turn_followers: dict[str, int] = {}
        self.watch_listeners: list[Callable[[str, bool], None]] = []
        self._waiting: OrderedDict[str, list[str]] = OrderedDict()

    def waiting_for(self, assessment_id: str) -> list[str]:
        """What the assessment waits for, as the latest `ProviderWaiting` that reached this hub said (from
        any process, on PostgreSQL); empty when nothing, or nothing known here."""
        return list(self._waiting.get(assessment_id, ()))

    def watched(self) -> list[str]:
        """Assessments whose turns some subscription here follows."""
        return list(self._turn_followers)

    def publish(self, assessment_id: str, event: HubEvent) -> None:
        if isinstance(event, ProviderWaiting):
            self._remember_waiting(assessment_id, event.waiting_for)
        elif isinstance(event, StatusChanged) and event.status not in ("queued", "running"):
            self._waiting.pop(assessment_id, None)
        for subscription in list(self._subscribers.get(assessment_id, ())):
            subscription.offer(event)

    def _remember_waiting(self, assessment_id: str, waiting_for: list[str]) -> None:
        self._waiting.pop(assessment_id, None)
        if waiting_for:
            self._waiting[assessment_id] = list(waiting_for)
            while len(self._waiting) > WAITING_REMEMBERED:
                self._waiting.popitem(last=False)

    @asynccontextmanager
    async def subscribe(
        self,
        assessment_id: str,
        *,
        queue_size: int | None = None,
        accept: EventKinds | None = None,
    ) -> AsyncIterator[Subscription]:
        subscription = Subscription(self.queue_size if queue_size is None else queue_size, accept)
        self._subscribers[assessment_id].add(subscription)
        if subscription.follows_turns:
            self._follow_turns(assessment_id, +1)
        try:
            yield subscription
        finally:
            subscribers = self._subscribers.get(assessment_id)
            if subscribers is not None:
                subscribers.discard(subscription)
                if not subscribers:
                    del self._subscribers[assessment_id]
            if subscription.follows_turns:
                self._follow_turns(assessment_id, -1)

    def _follow_turns(self, assessment_id: str, change: int) -> None:
        count = self._turn_followers.get(assessment_id, 0) + change
        if count > 0:
            self._turn_followers[assessment_id] = count
        else:
            self._turn_followers.pop(assessment_id, None)
        if (change > 0 and count == 1) or count == 0:
            for listener in self.watch_listeners:
                listener(assessment_id, count > 0)


CHANNEL = "green_agent_progress"


@dataclass(frozen=True)
class RelaySettings:
    """The relay's bounds: the operator settings `relay_*` (api/settings.py says what each one bounds)."""

    queue_events: int = default_of("relay_queue_events")
    batch: int = default_of("relay_batch")
    # PostgreSQL refuses NOTIFY payloads of 8000 bytes or more (the relay's 17-byte origin tag included); a
    # turn whose message is longer is relayed with its text cut (the whole transcript is under /trials).
    max_payload_bytes: int = default_of("relay_max_payload_bytes")
    keepalive_s: float = default_of("relay_keepalive_s")
    stop_s: float = default_of("relay_stop_s")
    interest_refresh_s: float = default_of("relay_interest_refresh_s")
    remote_interests: int = default_of("relay_remote_interests")

    @classmethod
    def from_settings(cls, settings: Settings) -> RelaySettings:
        return cls(
            queue_events=settings.relay_queue_events,
            batch=settings.relay_batch,
            max_payload_bytes=settings.relay_max_payload_bytes,
            keepalive_s=settings.relay_keepalive_s,
            stop_s=settings.relay_stop_s,
            interest_refresh_s=settings.relay_interest_refresh_s,
            remote_interests=settings.relay_remote_interests,
        )


def _payload(assessment_id: str, event: HubEvent, max_bytes: int) -> str:
    payload = json.dumps({"a": assessment_id, "e": event.model_dump(mode="json")})
    if len(payload.encode()) < max_bytes or not isinstance(event, TurnTaken):
        return payload
    message = event.message
    room = max(0, len(message.content or "") - (len(payload.encode()) - max_bytes) - 64)
    cut = message.model_copy(
        update={"content": (message.content or "")[:room] + " [cut; see the transcript]", "tool_calls": None}
    )
    return _payload(assessment_id, event.model_copy(update={"message": cut}), max_bytes)


class EventRelay:
    """Publishes into the local hub at once and, for the other processes, into PostgreSQL NOTIFY (batched,
    never blocking the caller); feeds what it hears from the other processes into the local hub. Each relay
    tags its notifications with its own origin and skips them when they come back, so its own events are
    never read back through json and pydantic. A relay that cannot keep up drops events and says so."""

    def __init__(
        self, hub: ProgressHub, connector: BaseConnector, settings: RelaySettings | None = None
    ) -> None:
        self.hub = hub
        self._connector = connector
        self.settings = settings or RelaySettings()
        self._outbox: asyncio.Queue[str] = asyncio.Queue(self.settings.queue_events)
        self.dropped = 0
        self.origin = uuid.uuid4().hex[:16]
        self._prefix = self.origin + " "
        # assessment id -> {origin: expiry (monotonic)}: who elsewhere follows which assessment.
        self._remote: dict[str, dict[str, float]] = {}
        hub.watch_listeners.append(self._announce)

    def _announce(self, assessment_id: str, watched: bool) -> None:
        self._send(f"{self._prefix}{'i' if watched else 'x'} {assessment_id}")

    def _wanted_elsewhere(self, assessment_id: str) -> bool:
        followers = self._remote.get(assessment_id)
        if not followers:
            return False
        now = time.monotonic()
        for origin in [o for o, expiry in followers.items() if expiry < now]:
            del followers[origin]
        if not followers:
            del self._remote[assessment_id]
        return bool(followers)

    def publish(self, assessment_id: str, event: HubEvent) -> None:
        self.hub.publish(assessment_id, event)
        # Per-turn events (most of them) cross processes only while another process follows the assessment;
        # trial and status events always do (few, and what `wait` and progress counts rely on).
        if isinstance(event, PER_TURN) and not self._wanted_elsewhere(assessment_id):
            return
        self._send(self._prefix + "e " + _payload(assessment_id, event, self.settings.max_payload_bytes))

    def _send(self, payload: str) -> None:
        try:
            self._outbox.put_nowait(payload)
        except asyncio.QueueFull:
            self.dropped += 1
            if self.dropped % 1000 == 1:
                logger.warning("progress relay is behind; %d events dropped so far", self.dropped)

    async def run(self) -> None:
        """Listen and send until cancelled (the listener reconnects after a database outage). Stopping it
        takes at most `settings.stop_s`, whatever the database connection does."""
        tasks = {
            asyncio.create_task(self._listen(), name="progress relay: listen"),
            asyncio.create_task(self._send_forever(), name="progress relay: send"),
            asyncio.create_task(self._refresh_forever(), name="progress relay: interests"),
        }
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            _, stuck = await asyncio.wait(tasks, timeout=self.settings.stop_s)
            if stuck:
                logger.warning(
                    "progress relay: %d task(s) did not stop within %.0f s", len(stuck), self.settings.stop_s
                )

    async def _listen(self) -> None:
        while True:
            try:
                await self._listen_once()
            except Exception as exc:
                logger.warning("progress relay lost its listener (%s: %s); retrying", type(exc).__name__, exc)
            await asyncio.sleep(1.0)

    async def _listen_once(self) -> None:
        # Our own LISTEN connection rather than procrastinate's listen_notify: that one wraps each wait in
        # asyncio.wait_for, and a cancelled wait could stay stuck there, so the process never exited after
        # its work was done (issue 18). Cancelling psycopg's own wait ends it at once.
        pool = self._connector.pool  # type: ignore[attr-defined]
        async with await psycopg.AsyncConnection.connect(
            pool.conninfo, **(pool.kwargs or {}), autocommit=True
        ) as connection:
            await connection.execute(f"LISTEN {CHANNEL}")
            self._send(self._prefix + "?")  # listening now: ask the others who follows what
            while True:
                async for notification in connection.notifies(timeout=self.settings.keepalive_s):
                    self._received(notification.payload)
                await connection.execute("SELECT 1")

    async def _refresh_forever(self) -> None:
        while True:
            await asyncio.sleep(self.settings.interest_refresh_s)
            for assessment_id in self.hub.watched():
                self._announce(assessment_id, True)

    def _received(self, payload: str) -> None:
        if payload.startswith(self._prefix):
            return  # our own: the local hub has it already
        origin, _, rest = payload.partition(" ")
        kind, _, body = rest.partition(" ")
        if kind == "i":
            followers = self._remote.get(body)
            if followers is None:
                if len(self._remote) >= self.settings.remote_interests:
                    return
                followers = self._remote[body] = {}
            followers[origin] = time.monotonic() + 3 * self.settings.interest_refresh_s
            return
        if kind == "x":
            self._remote.get(body, {}).pop(origin, None)
            return
        if kind == "?":
            for assessment_id in self.hub.watched():
                self._announce(assessment_id, True)
            return
        if kind != "e":
            logger.warning("ignored a progress notification of unknown kind %r", kind[:20])
            return
        try:
            message = json.loads(body)
            self.hub.publish(message["a"], _HUB_EVENT.validate_python(message["e"]))
        except (ValueError, KeyError, TypeError, IndexError, ValidationError) as exc:
            logger.warning("ignored a malformed progress notification: %s", exc)

    async def _send_forever(self) -> None:
        while True:
            batch = [await self._outbox.get()]
            while len(batch) < self.settings.batch and not self._outbox.empty():
                batch.append(self._outbox.get_nowait())
            while True:
                try:
                    await self._connector.execute_query_async(NOTIFY_BATCH, channel=CHANNEL, payloads=batch)
                    break
                except Exception as exc:  # the database is away: keep the batch and try again
                    logger.warning("progress relay cannot notify (%s: %s)", type(exc).__name__, exc)
                    await asyncio.sleep(1.0)
