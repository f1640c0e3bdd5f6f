"""API keys under concurrency (api/security/auth.py, api/db/keys.py): requests keep arriving while a key is
revoked or the first key is created, and none that starts after `revoke` (or `create`) returned gets through
on the old terms; a stream opened before the revocation ends soon after it. Real server, SQLite and
PostgreSQL."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from api.db.keys import KeyRepository
from tests.api.servers import serve_green

QUIET = {"worker_enabled": False, "resume_on_start": False}


@dataclass(frozen=True)
class Outcome:
    started: float
    status: int


async def hammer(client: httpx.AsyncClient, headers: dict[str, str], stop: asyncio.Event) -> list[Outcome]:
    """GET /assessments as fast as it can until `stop`; each outcome with the moment its request started."""
    outcomes = []
    while not stop.is_set():
        started = time.monotonic()
        response = await client.get("/assessments", headers=headers)
        outcomes.append(Outcome(started, response.status_code))
    return outcomes


def hammering(
    client: httpx.AsyncClient, headers: dict[str, str], stop: asyncio.Event, workers: int = 6
) -> list[asyncio.Task[list[Outcome]]]:
    return [asyncio.create_task(hammer(client, headers, stop)) for _ in range(workers)]


async def test_no_request_after_revoke_returns_gets_through(database_url: str, database: AsyncEngine) -> None:
    keys = KeyRepository(database)
    async with (
        serve_green(database_url, **QUIET) as url,
        httpx.AsyncClient(base_url=url, timeout=30, limits=httpx.Limits(max_connections=32)) as client,
    ):
        doomed, doomed_secret = await keys.create("a", admin=False, allow_private_agents=False)
        _, other_secret = await keys.create("b", admin=False, allow_private_agents=False)
        doomed_headers = {"Authorization": f"Bearer {doomed_secret}"}
        stop = asyncio.Event()
        doomed_tasks = hammering(client, doomed_headers, stop)
        other_tasks = hammering(client, {"Authorization": f"Bearer {other_secret}"}, stop, workers=2)
        await asyncio.sleep(0.5)
        revoked = await keys.revoke(doomed.id)
        returned = time.monotonic()
        assert revoked is not None and revoked.revoked
        await asyncio.sleep(0.5)
        stop.set()
        doomed_outcomes = [o for task in doomed_tasks for o in await task]
        other_outcomes = [o for task in other_tasks for o in await task]
    before = [o.status for o in doomed_outcomes if o.started < returned]
    after = [o.status for o in doomed_outcomes if o.started > returned]
    assert 200 in before, "the key worked before it was revoked"
    assert after and set(after) == {401}, f"{after.count(200)} requests got through after revoke returned"
    assert {o.status for o in doomed_outcomes} <= {200, 401}
    assert {o.status for o in other_outcomes} == {200}  # the other tenant's key was never affected
    assert (await keys.revoke(doomed.id)) == revoked  # revoking again changes nothing


async def test_a_stream_opened_before_the_revocation_ends(database_url: str, database: AsyncEngine) -> None:
    keys = KeyRepository(database)
    async with (
        serve_green(database_url, stream_key_recheck_s=0.2, **QUIET) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        key, secret = await keys.create("a", admin=False, allow_private_agents=True)
        headers = {"Authorization": f"Bearer {secret}"}
        created = await client.post(
            "/assessments",
            json={"agent_url": "http://127.0.0.1:9/", "tasks": {"task_ids": ["0"]}},
            headers=headers,
        )
        assert created.status_code == 202, created.text
        path = f"/assessments/{created.json()['id']}/events"
        async with client.stream("GET", path, headers=headers) as response:
            assert response.status_code == 200
            lines = response.aiter_lines()
            assert (await anext(lines)).startswith("event:")  # the stream is live
            await keys.revoke(key.id)
            # Its next send (a ping at the latest, every 15 s) finds the key revoked and ends the stream.
            async with asyncio.timeout(30):
                async for _ in lines:
                    pass


async def test_no_request_after_the_first_key_is_created_is_open(
    database_url: str, database: AsyncEngine
) -> None:
    keys = KeyRepository(database)
    async with (
        serve_green(database_url, **QUIET) as url,
        httpx.AsyncClient(base_url=url, timeout=30, limits=httpx.Limits(max_connections=32)) as client,
    ):
        stop = asyncio.Event()
        tasks = hammering(client, {}, stop)
        await asyncio.sleep(0.5)
        created = await asyncio.gather(
            *(keys.create(f"t{n}", admin=False, allow_private_agents=False) for n in range(20))
        )
        returned = time.monotonic()
        await asyncio.sleep(0.5)
        stop.set()
        outcomes = [o for task in tasks for o in await task]
        # Every key created concurrently is distinct and works.
        assert len({key.id for key, _ in created}) == len({secret for _, secret in created}) == 20
        statuses = await asyncio.gather(
            *(client.get("/assessments", headers={"Authorization": f"Bearer {s}"}) for _, s in created)
        )
        assert {r.status_code for r in statuses} == {200}
    before = [o.status for o in outcomes if o.started < returned]
    after = [o.status for o in outcomes if o.started > returned]
    assert 200 in before, "open mode served requests before the first key existed"
    assert after and set(after) == {401}, f"{after.count(200)} keyless requests got through after create"
