"""The runtime's bounds that are operator settings (docs/configuration.md), each just past its value: the
progress relay's (`GREEN_AGENT_RELAY_*`, on the local PostgreSQL) and the assessments a process keeps open
(`GREEN_AGENT_OPEN_ASSESSMENTS`, a real run against the oracle)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import psycopg
import pytest
from procrastinate import BaseConnector
from pydantic import ValidationError

from api.runtime.events import CHANNEL, EventRelay, ProgressHub, RelaySettings, StatusChanged
from api.runtime.queue import QueueSettings, TrialQueue, psycopg_conninfo
from api.runtime.runtime import open_runtime
from api.settings import Settings, default_of
from green_agent.config import AssessmentConfig, TaskSelection
from green_agent.core.models import TranscriptMessage, TurnTaken
from tests.api.servers import green_settings


def status(n: int) -> StatusChanged:
    return StatusChanged(assessment_id="a1", status="running", trials_done=n, trials_total=100)


def turn(content: str) -> TurnTaken:
    return TurnTaken(task_id="0", trial=0, message=TranscriptMessage(index=0, role="user", content=content))


@pytest.fixture
async def connector(pg_database: str) -> AsyncIterator[BaseConnector]:
    """The job queue's connector on a fresh PostgreSQL database: what a relay is given in a real process."""
    queue = TrialQueue(pg_database, QueueSettings())
    await queue.open()
    try:
        yield queue.connector
    finally:
        await queue.close()


class Recording:
    """The real connector, recording the payloads of each NOTIFY round trip; `stuck` makes it a database
    driver that does not give up when cancelled (it waits for `release`)."""

    def __init__(self, inner: BaseConnector, *, stuck: bool = False) -> None:
        self._inner = inner
        self.stuck = stuck
        self.batches: list[int] = []
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def execute_query_async(self, query: str, **arguments: Any) -> None:
        self.entered.set()
        if self.stuck:  # deaf to cancellation until released
            while not self.release.is_set():
                with contextlib.suppress(asyncio.CancelledError):
                    await self.release.wait()
            raise asyncio.CancelledError
        self.batches.append(len(arguments["payloads"]))
        await self._inner.execute_query_async(query, **arguments)


def test_the_relay_takes_its_defaults_from_the_settings() -> None:
    assert RelaySettings() == RelaySettings.from_settings(Settings())
    assert RelaySettings().max_payload_bytes == default_of("relay_max_payload_bytes") == 7_480
    # PostgreSQL refuses a NOTIFY payload of 8000 bytes: the bound cannot be raised towards it.
    with pytest.raises(ValidationError, match="relay_max_payload_bytes"):
        Settings(relay_max_payload_bytes=7_481)


async def test_past_relay_queue_events_new_events_are_dropped_and_counted(connector: BaseConnector) -> None:
    relay = EventRelay(ProgressHub(), connector, RelaySettings(queue_events=3))  # not running: nothing drains
    for n in range(3):
        relay.publish("a1", status(n))
    assert relay.dropped == 0
    relay.publish("a1", status(3))
    assert relay.dropped == 1


async def test_no_notify_round_trip_carries_more_than_relay_batch(
    connector: BaseConnector, pg_database: str
) -> None:
    recording = Recording(connector)
    relay = EventRelay(ProgressHub(), cast(BaseConnector, recording), RelaySettings(batch=2))
    for n in range(5):  # queued before the sender starts: it could take all five at once
        relay.publish("a1", status(n))
    seen: list[str] = []
    async with await psycopg.AsyncConnection.connect(psycopg_conninfo(pg_database), autocommit=True) as spy:
        await spy.execute(f"LISTEN {CHANNEL}")
        running = asyncio.create_task(relay.run())
        try:
            async for note in spy.notifies(timeout=5, stop_after=5):
                seen.append(note.payload)
        finally:
            running.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await running
    assert len([p for p in seen if " e " in p]) == 5
    assert max(recording.batches) == 2 and sum(recording.batches) >= 5


async def test_a_turn_reaching_relay_max_payload_bytes_is_relayed_cut(connector: BaseConnector) -> None:
    limit = 1_024
    relay = EventRelay(ProgressHub(), connector, RelaySettings(max_payload_bytes=limit))
    relay._received("peer i a1")  # another process follows a1: its turns cross
    outbox = relay._outbox

    def relayed(content: str) -> str:
        relay.publish("a1", turn(content))
        return outbox.get_nowait().removeprefix(relay._prefix + "e ")

    empty = len(relayed("").encode())
    just_under = relayed("x" * (limit - 1 - empty))
    assert len(just_under.encode()) == limit - 1 and "[cut" not in just_under
    at_limit = relayed("x" * (limit - empty))
    assert len(at_limit.encode()) < limit and "[cut; see the transcript]" in at_limit


async def test_past_relay_keepalive_s_the_listener_checks_its_connection(
    connector: BaseConnector, pg_database: str
) -> None:
    relay = EventRelay(ProgressHub(), connector, RelaySettings(keepalive_s=0.5))
    running = asyncio.create_task(relay.run())
    listen = f"LISTEN {CHANNEL}"
    seen: list[str] = []
    try:
        async with await psycopg.AsyncConnection.connect(
            psycopg_conninfo(pg_database), autocommit=True
        ) as db:
            pid = None
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline and "SELECT 1" not in seen:
                if pid is None:
                    cursor = await db.execute(
                        "SELECT pid, query FROM pg_stat_activity WHERE datname = current_database() "
                        "AND query = %s",
                        [listen],
                    )
                    row = await cursor.fetchone()
                    if row is not None:
                        pid, query = row
                        seen.append(query)
                else:
                    cursor = await db.execute("SELECT query FROM pg_stat_activity WHERE pid = %s", [pid])
                    row = await cursor.fetchone()
                    if row is not None and row[0] != seen[-1]:
                        seen.append(row[0])
                await asyncio.sleep(0.05)
    finally:
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running
    # Quiet channel: the listener's last statement was LISTEN, then past the keepalive it sent a check.
    assert seen[:2] == [listen, "SELECT 1"]


async def test_stopping_the_relay_takes_at_most_relay_stop_s(
    connector: BaseConnector, caplog: pytest.LogCaptureFixture
) -> None:
    stuck = Recording(connector, stuck=True)
    relay = EventRelay(ProgressHub(), cast(BaseConnector, stuck), RelaySettings(stop_s=0.5))
    relay.publish("a1", status(0))
    running = asyncio.create_task(relay.run())
    await asyncio.wait_for(stuck.entered.wait(), 10)  # the sender is inside a NOTIFY that does not end
    started = time.monotonic()
    running.cancel()
    try:
        with caplog.at_level(logging.WARNING, logger="api.runtime.events"):
            await asyncio.wait({running}, timeout=0.5 + 3.0)
        took = time.monotonic() - started
        # It waited the bound for the stuck sender, then gave up on it and said so.
        assert running.done() and 0.5 <= took < 3.5
        assert any("did not stop within" in record.getMessage() for record in caplog.records)
    finally:
        stuck.release.set()
        with contextlib.suppress(asyncio.CancelledError):
            await running


async def test_an_interest_not_renewed_within_three_relay_interest_refresh_s_is_forgotten(
    connector: BaseConnector,
) -> None:
    refresh = 0.2
    relay = EventRelay(ProgressHub(), connector, RelaySettings(interest_refresh_s=refresh))
    relay._received("peer i a1")
    relay.publish("a1", turn("followed elsewhere"))
    assert relay._outbox.qsize() == 1  # the turn goes to the process that follows a1
    await asyncio.sleep(3 * refresh + 0.1)  # no renewal from the peer
    relay.publish("a1", turn("nobody follows any more"))
    assert relay._outbox.qsize() == 1  # not sent


async def test_a_running_relay_renews_its_interests_every_relay_interest_refresh_s(
    connector: BaseConnector, pg_database: str
) -> None:
    relay = EventRelay(ProgressHub(), connector, RelaySettings(interest_refresh_s=0.2))
    announcements: list[str] = []
    async with await psycopg.AsyncConnection.connect(psycopg_conninfo(pg_database), autocommit=True) as spy:
        await spy.execute(f"LISTEN {CHANNEL}")
        running = asyncio.create_task(relay.run())
        try:
            async with relay.hub.subscribe("a1"):  # takes turns: the relay announces that it follows a1
                async for note in spy.notifies(timeout=1.5):
                    if note.payload.endswith(" i a1"):
                        announcements.append(note.payload)
        finally:
            running.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await running
    assert len(announcements) >= 3  # the first announcement, then renewals every 0.2 s


async def test_past_relay_remote_interests_new_ones_are_ignored(connector: BaseConnector) -> None:
    relay = EventRelay(ProgressHub(), connector, RelaySettings(remote_interests=2))
    for assessment_id in ("a1", "a2", "a3"):
        relay._received(f"peer i {assessment_id}")
    sent = []
    for assessment_id in ("a1", "a2", "a3"):
        before = relay._outbox.qsize()
        relay.publish(assessment_id, turn("hi"))
        sent.append(relay._outbox.qsize() > before)
    assert sent == [True, True, False]  # a3's turns stay in the process that runs it


async def test_past_open_assessments_the_least_recently_used_is_closed(
    tmp_path: Path, oracle_url: str
) -> None:
    """A finished assessment is closed at once; this is about unfinished ones, opened on this process by their
    trial jobs: past `open_assessments` the least recently used is closed, and opened again when needed."""
    settings = green_settings(f"sqlite+aiosqlite:///{tmp_path / 'g.db'}", open_assessments=2)
    async with open_runtime(settings, worker=False) as runtime:
        service = runtime.service
        assert service.open_assessments == 2
        config = AssessmentConfig(agent_url=oracle_url, tasks=TaskSelection(task_ids=["0"]))
        records = [(await service.create(config, source="cli", start=False))[0] for _ in range(3)]
        first, second, third = records
        openings = [service._open(record) for record in records]
        assert list(service._opened) == [second.id, third.id]  # two open; the oldest went first
        again = service._open(first)
        assert again is not openings[0]  # opened anew
        assert list(service._opened) == [third.id, first.id]
        await asyncio.gather(*openings, again)
