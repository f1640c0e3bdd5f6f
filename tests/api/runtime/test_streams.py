"""Event streams are bounded (api/runtime/streams.py, api/web/ui/live.py): open streams per tenant and in
total (429 with Retry-After past either), a reader that stops reading is dropped with its buffers, and a crowd
of readers keeps memory flat. Real server on loopback, real sockets; events are published into the running
service's hub (the same call the engine's progress reaches), as many as a long assessment makes."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import socket
import tracemalloc
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from api.db.engine import create_engine
from api.db.keys import KeyRepository
from api.runtime.events import StatusChanged, TrialDone
from api.runtime.streams import StreamLimits
from green_agent.core.models import TranscriptMessage, TurnTaken
from tests.api.servers import serve_green_app
from tests.api.web.test_a2a import a2a_client, agentbeats, request

QUEUED_ONLY = {"worker_enabled": False, "resume_on_start": False}
MIB = 1024 * 1024


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def create_queued(client: httpx.AsyncClient, headers: dict[str, str] | None = None) -> str:
    """An assessment that stays queued (no worker runs here): its streams stay open until told otherwise."""
    response = await client.post(
        "/assessments",
        json={"agent_url": "http://127.0.0.1:9/", "tasks": {"task_ids": ["0"]}},
        headers=headers or {},
    )
    assert response.status_code == 202, response.text
    return str(response.json()["id"])


@contextlib.asynccontextmanager
async def open_stream(
    client: httpx.AsyncClient, path: str, headers: dict[str, str] | None = None
) -> AsyncIterator[httpx.Response]:
    async with client.stream("GET", path, headers={"Accept": "text/event-stream", **(headers or {})}) as r:
        yield r


def streams(app: FastAPI) -> StreamLimits:
    limits = app.state.streams
    assert isinstance(limits, StreamLimits)
    return limits


async def test_open_streams_are_bounded_per_tenant_and_in_total(database_url: str) -> None:
    async with (
        serve_green_app(database_url, max_streams_per_tenant=2, max_streams_total=3, **QUEUED_ONLY) as (
            url,
            app,
        ),
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        database = create_engine(database_url)
        try:
            keys = KeyRepository(database)
            a = bearer((await keys.create("a", admin=False, allow_private_agents=True))[1])
            b = bearer((await keys.create("b", admin=False, allow_private_agents=True))[1])
        finally:
            await database.dispose()
        mine, theirs = await create_queued(client, a), await create_queued(client, b)
        async with contextlib.AsyncExitStack() as held:
            first = await held.enter_async_context(open_stream(client, f"/assessments/{mine}/events", a))
            second = await held.enter_async_context(open_stream(client, f"/ui/live?id={mine}", a))
            assert first.status_code == second.status_code == 200
            assert streams(app).open_by_tenant == {"a": 2}

            async with open_stream(client, f"/assessments/{mine}/events", a) as third:
                assert third.status_code == 429
                assert third.headers["retry-after"] == "30"
                assert "GREEN_AGENT_MAX_STREAMS_PER_TENANT" in (await third.aread()).decode()
            other = await held.enter_async_context(open_stream(client, f"/assessments/{theirs}/events", b))
            assert other.status_code == 200  # another tenant still gets one: the per-tenant cap left room
            async with open_stream(client, f"/ui/live?id={theirs}", b) as past_total:
                assert past_total.status_code == 429
                assert "GREEN_AGENT_MAX_STREAMS_TOTAL" in (await past_total.aread()).decode()
            assert streams(app).open == 3
            # Ordinary requests are not streams: never counted, never refused.
            assert (await client.get(f"/assessments/{mine}", headers=a)).status_code == 200
        # Closing streams frees their places (and keeps no entry per tenant).
        await poll_until(lambda: streams(app).open == 0)
        assert streams(app).open_by_tenant == {}
        async with open_stream(client, f"/assessments/{mine}/events", a) as again:
            assert again.status_code == 200


async def poll_until(condition: Any, timeout_s: float = 20.0) -> None:
    for _ in range(int(timeout_s / 0.05)):
        if condition():
            return
        await asyncio.sleep(0.05)
    raise TimeoutError(f"not reached within {timeout_s} s")


def turn(n: int) -> TurnTaken:
    text = f"turn {n}: " + "words of a long white-agent answer " * 20
    return TurnTaken(
        task_id="0", trial=0, message=TranscriptMessage(index=n % 200, role="assistant", content=text)
    )


def trial_done(n: int) -> TrialDone:
    return TrialDone(
        task_id=str(n % 114),
        trial=n,
        termination_reason="user_stop",
        reward=1.0,
        is_successful=True,
        trials_done=n,
        trials_total=10**6,
    )


async def publish(app: FastAPI, assessment_id: str, turns: int, trials: int, pause_every: int = 500) -> None:
    hub = app.state.runtime.service.hub
    for n in range(max(turns, trials)):
        if n < turns:
            hub.publish(assessment_id, turn(n))
        if n < trials:
            hub.publish(assessment_id, trial_done(n))
        if n % pause_every == 0:
            await asyncio.sleep(0)  # the readers and the server get their turn, as in a real assessment


def traced() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


@contextlib.asynccontextmanager
async def stalled_reader(url: str, path: str) -> AsyncIterator[socket.socket]:
    """A client that sends its request and never reads a byte of the answer."""
    host, port = url.removeprefix("http://").rstrip("/").split(":")
    reader = socket.socket()
    reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # fills up soon
    reader.setblocking(False)
    try:
        loop = asyncio.get_running_loop()
        await loop.sock_connect(reader, (host, int(port)))
        request = f"GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\n\r\n"
        await loop.sock_sendall(reader, request.encode())
        yield reader
    finally:
        reader.close()


async def test_a_stalled_live_reader_holds_bounded_buffers(database_url: str) -> None:
    """The issue's case: 200,000 turn events to a /ui/live stream whose reader stopped reading kept 227 MiB
    (1,192 B each; the 60,000 here kept 70 MiB before the fix). Turns are not queued for that stream at all,
    finished trials only up to its bound, past which the stream ends with `lagged` and lets go of it all."""
    settings = {"stream_send_timeout_s": 600.0, "ui_live_queue_events": 32, **QUEUED_ONLY}
    async with (
        serve_green_app(database_url, **settings) as (url, app),
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        assessment_id = await create_queued(client)
        hub = app.state.runtime.service.hub
        async with stalled_reader(url, f"/ui/live?id={assessment_id}"):
            await poll_until(lambda: streams(app).open == 1)
            tracemalloc.start()
            try:
                before = traced()
                # Finished trials first: enough progress events to fill the socket buffers, so the stream
                # blocks on its reader; then the turns of a long assessment.
                await publish(app, assessment_id, turns=0, trials=30_000)
                await publish(app, assessment_id, turns=60_000, trials=0)
                during = traced()
            finally:
                tracemalloc.stop()
            assert during - before < 4 * MIB, f"{(during - before) / MIB:.1f} MiB kept for a stalled reader"
            # Far behind, its stream ended with `lagged` (the browser reconnects and starts from the stored
            # state), while the reader's socket is still open.
            await poll_until(lambda: streams(app).open == 0)
            assert assessment_id not in hub._subscribers
    assert during - before < 4 * MIB, f"{(during - before) / MIB:.1f} MiB kept for a stalled reader"


async def test_a_reader_that_stops_reading_is_dropped(database_url: str) -> None:
    settings = {"stream_send_timeout_s": 1.0, **QUEUED_ONLY}
    async with (
        serve_green_app(database_url, **settings) as (url, app),
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        assessment_id = await create_queued(client)
        async with stalled_reader(url, f"/assessments/{assessment_id}/events"):
            await poll_until(lambda: streams(app).open == 1)
            await publish(app, assessment_id, turns=20_000, trials=0)
            await poll_until(lambda: streams(app).open == 0)  # its socket is still open: dropped by us
            assert assessment_id not in app.state.runtime.service.hub._subscribers


async def test_a_crowd_of_readers_keeps_memory_flat(database_url: str) -> None:
    """A tenant's whole allowance of streams (16), half REST and half /ui/live, all reading, while a long
    assessment's worth of events goes by: memory stays flat, the 17th stream is refused, and every stream ends
    with the assessment."""
    settings = {"stream_queue_events": 1_000, **QUEUED_ONLY}
    async with (
        serve_green_app(database_url, **settings) as (url, app),
        httpx.AsyncClient(base_url=url, timeout=60, limits=httpx.Limits(max_connections=64)) as client,
    ):
        assessment_id = await create_queued(client)
        received = [0] * 16
        ended: list[str] = []

        async def read(i: int) -> None:
            path = f"/assessments/{assessment_id}/events" if i % 2 else f"/ui/live?id={assessment_id}"
            async with open_stream(client, path) as response:
                assert response.status_code == 200
                last = ""
                async for line in response.aiter_lines():
                    if line.startswith("event:"):
                        received[i] += 1
                        last = line
                ended.append(last)

        readers = [asyncio.create_task(read(i)) for i in range(16)]
        await poll_until(lambda: streams(app).open == 16)
        async with open_stream(client, f"/ui/live?id={assessment_id}") as refused:
            assert refused.status_code == 429
        tracemalloc.start()
        try:
            before = traced()
            for _ in range(5):
                await publish(app, assessment_id, turns=1_000, trials=200, pause_every=50)
                await asyncio.sleep(0.05)
            during = traced()
        finally:
            tracemalloc.stop()
        app.state.runtime.service.hub.publish(
            assessment_id,
            StatusChanged(assessment_id=assessment_id, status="cancelled", trials_done=0, trials_total=1),
        )
        async with asyncio.timeout(60):
            await asyncio.gather(*readers)
        await poll_until(lambda: streams(app).open == 0)
    assert during - before < 8 * MIB, f"{(during - before) / MIB:.1f} MiB for 16 readers"
    assert all(count > 2 for count in received)  # they did read
    assert len(ended) == 16


async def test_a2a_streaming_counts_and_a_refused_stream_starts_nothing(database_url: str) -> None:
    async with (
        serve_green_app(database_url, max_streams_per_tenant=1, **QUEUED_ONLY) as (url, app),
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        assessment_id = await create_queued(client)
        async with open_stream(client, f"/assessments/{assessment_id}/events") as held:
            assert held.status_code == 200
            a2a = await a2a_client(url, client, streaming=True)
            with pytest.raises(Exception, match="429"):
                async for _ in a2a.send_message(request(agentbeats("http://127.0.0.1:9/", task_ids=["0"]))):
                    pass
            listed = (await client.get("/assessments")).json()
            assert listed["count"] == 1  # the refused A2A stream never ran its request
        await poll_until(lambda: streams(app).open == 0)
