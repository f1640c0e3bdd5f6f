"""What the engine keeps per white agent is bounded: the LRU + TTL cache, the card cache keyed by URL and the
agent headers (and judged by the egress policy at every use), per-agent caps held only while in use, and
memory flat over 1,000 distinct agent URLs (a fresh process, RSS)."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from google.protobuf.json_format import MessageToJson  # type: ignore[import-untyped]
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from green_agent.core.bounded_cache import BoundedCache
from green_agent.core.errors import AgentEgressError
from green_agent.reference_agents import agent_card, serve_app
from green_agent.scheduling.keyed_limits import KeyedLimits
from green_agent.white_agent.client import ClientLimits, WhiteAgentPool
from green_agent.white_agent.egress import EgressPolicy
from tests.api.servers import REPO_ROOT


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_cache_evicts_least_recently_used_past_its_count() -> None:
    evicted: list[str] = []
    cache: BoundedCache[str, int] = BoundedCache(2, on_evict=lambda key, _: evicted.append(key))
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # a is now the most recently used
    cache.put("c", 3)
    assert evicted == ["b"] and cache.get("b") is None and len(cache) == 2


def test_cache_evicts_past_its_bytes_and_keeps_no_oversized_entry() -> None:
    cache: BoundedCache[str, str] = BoundedCache(100, max_bytes=10)
    cache.put("a", "x", size=4)
    cache.put("b", "y", size=4)
    cache.put("c", "z", size=4)  # 12 > 10: the oldest goes
    assert "a" not in cache and cache.bytes == 8
    cache.put("big", "w", size=11)  # larger than the whole budget on its own: not kept, and nothing else lost
    assert "big" not in cache and cache.bytes == 8 and "b" in cache


def test_cache_entries_expire() -> None:
    clock = Clock()
    evicted: list[str] = []
    cache: BoundedCache[str, int] = BoundedCache(
        10, ttl_s=5.0, clock=clock, on_evict=lambda key, _: evicted.append(key)
    )
    cache.put("a", 1)
    clock.now = 4.9
    assert cache.get("a") == 1
    clock.now = 5.0
    assert cache.get("a") is None and evicted == ["a"]
    cache.put("b", 2)
    clock.now = 20.0
    cache.put("c", 3)  # storing drops what has expired meanwhile
    assert "b" not in cache and len(cache) == 1


async def test_keyed_limits_cap_each_key_and_forget_idle_keys() -> None:
    limits = KeyedLimits(2)
    inside: dict[str, int] = {"a": 0, "b": 0}
    peak: dict[str, int] = {"a": 0, "b": 0}

    async def hold(key: str) -> None:
        async with limits.hold(key):
            inside[key] += 1
            peak[key] = max(peak[key], inside[key])
            await asyncio.sleep(0.01)
            inside[key] -= 1

    await asyncio.gather(*(hold(key) for key in "aaaaabbbbb"))
    assert peak == {"a": 2, "b": 2}
    assert len(limits) == 0  # nothing kept for keys no trial holds
    for n in range(1000):
        async with limits.hold(f"agent-{n}"):
            pass
    assert len(limits) == 0


@asynccontextmanager
async def card_server() -> AsyncIterator[tuple[str, list[str]]]:
    """Serves an agent card whose name is the request's Authorization header; records every fetch."""
    fetches: list[str] = []

    def app_for(url: str) -> Starlette:
        async def card(request: Request) -> Response:
            who = request.headers.get("authorization", "nobody")
            fetches.append(request.url.path + " " + who)
            await asyncio.sleep(0.05)  # concurrent callers overlap
            body = MessageToJson(
                agent_card(name=f"card for {who}", description="d", url=str(request.base_url))
            )
            return Response(body, media_type="application/json")

        return Starlette(routes=[Route("/{prefix}/.well-known/agent-card.json", card)])

    async with serve_app(app_for) as url:
        yield url, fetches


async def test_cards_are_cached_per_url_and_agent_headers() -> None:
    pool = WhiteAgentPool(ClientLimits(card_cache_entries=8))
    try:
        async with card_server() as (url, fetches):
            agent = url + "one/"
            alice = {"Authorization": "alice"}
            first = await asyncio.gather(*(pool.card(agent, alice) for _ in range(5)))
            assert len(fetches) == 1  # concurrent callers share one fetch
            assert all(card.name == "card for alice" for card in first)
            bob = await pool.card(agent, {"authorization": "bob"})
            assert bob.name == "card for bob" and len(fetches) == 2  # other headers: not alice's card
            assert (await pool.card(agent, {"AUTHORIZATION": "alice"})).name == "card for alice"
            assert len(fetches) == 2  # header names compare case-insensitively
            assert (await pool.card(agent)).name == "card for nobody" and len(fetches) == 3
    finally:
        await pool.aclose()


async def test_card_cache_is_bounded_in_count_and_age() -> None:
    pool = WhiteAgentPool(ClientLimits(card_cache_entries=2, card_cache_ttl_s=0.3))
    try:
        async with card_server() as (url, fetches):
            for name in ("a", "b", "c"):
                await pool.card(f"{url}{name}/")
            assert len(pool._cards) == 2
            await pool.card(f"{url}a/")  # evicted as least recently used: fetched again
            assert [f.split()[0] for f in fetches] == [f"/{n}/.well-known/agent-card.json" for n in "abca"]
            await pool.card(f"{url}a/")
            assert len(fetches) == 4  # cached
            await asyncio.sleep(0.35)
            await pool.card(f"{url}a/")
            assert len(fetches) == 5  # expired
    finally:
        await pool.aclose()


async def test_a_cached_card_is_judged_by_the_egress_policy_at_every_use() -> None:
    pool = WhiteAgentPool(ClientLimits(), policy=EgressPolicy(allow_private=True))
    try:
        async with card_server() as (url, fetches):
            await pool.card(url + "x/")
            pool.policy = EgressPolicy(allow_private=False)  # what a cached entry must never outlive
            with pytest.raises(AgentEgressError, match="loopback"):
                await pool.card(url + "x/")
            assert len(fetches) == 1 and len(pool._cards) == 0
    finally:
        await pool.aclose()


async def _probe(unbounded: bool) -> dict[str, int]:
    args = ["probe", "--urls", "1000", "--warmup", "100", "--card-bytes", "32000"]
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.agent_urls",
        *args,
        *(["--unbounded"] if unbounded else []),
        cwd=REPO_ROOT,
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await process.communicate()
    assert process.returncode == 0
    result: dict[str, int] = json.loads(out.decode().strip().splitlines()[-1])
    return result


async def test_memory_is_flat_over_a_thousand_distinct_agent_urls() -> None:
    """1,000 assessments opened on 1,000 distinct URLs (each card ~32 KB, fetched, an a2a client built for it)
    grow the process by less than 4 MiB. The same probe with the card cache unbounded grows by more than
    20 MiB: the measurement sees what a per-URL cache keeps, so this test fails if one comes back."""
    bounded, unbounded = await asyncio.gather(_probe(False), _probe(True))
    mib = 1024 * 1024
    assert bounded["growth_bytes"] < 4 * mib, bounded
    assert unbounded["growth_bytes"] > 20 * mib, unbounded
