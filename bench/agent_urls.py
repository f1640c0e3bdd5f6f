"""Benchmark: memory kept per distinct agent URL (issue 17), the number an outside check holds under 16 KiB.

A requester names the agent URL, so one tenant can name a new one with every assessment. Whatever the service
keeps per URL (cards, a2a clients, per-agent caps, metric labels) must be bounded, or the process grows with
every URL ever assessed. The white agent here is the oracle served under any number of URL prefixes
(`http://127.0.0.1:P/agents/<n>/`), each with its own agent card padded to `--card-bytes` (default 120 KB, the
size the issue measured with), in a child process.

    .venv/bin/python -m bench.agent_urls                        # 300 one-trial assessments, 300 distinct URLs
    .venv/bin/python -m bench.agent_urls --urls 300 --warmup 50 --card-bytes 120000

Real service path: each assessment is created and run by `AssessmentService` (queue, worker, SQL) exactly as
`green-agent serve` runs it. After `--warmup` assessments (first HTTP clients, lazily imported code) the
process's RSS is read; then `--urls` more, each on a new URL, and read again. KiB per URL = growth / urls.

`python -m bench.agent_urls probe ...` is the engine-level probe the memory test runs in a fresh process:
it opens an assessment (card fetched, a2a client built) on each of N distinct URLs and prints the RSS growth
as JSON (RSS, not tracemalloc: parsed protobuf cards live in upb's arenas, which tracemalloc does not see);
`--unbounded` lifts the card cache bounds, to show the measurement sees what an unbounded cache keeps.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import re
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, cast

import uvloop
from google.protobuf.json_format import MessageToJson  # type: ignore[import-untyped]
from starlette.applications import Starlette
from starlette.types import Receive, Scope, Send

from green_agent import EngineSettings
from green_agent.reference_agents import agent_card, build_reference_agent_app, serve_app
from retail_domain import RetailData, load_retail_data

_PREFIX = re.compile(r"^/agents/(\d+)(/.*)?$")
_CARD_PATH = "/.well-known/agent-card.json"
_URL_MARK = "http://agent-url.invalid/"
UNBOUNDED_NOTE = ", card cache unbounded"


class ManyUrlAgents:
    """The oracle under every `/agents/<n>/` prefix: a card per prefix that advertises that prefix, padded
    with skills to about `card_bytes`; messages to a prefix go to the one oracle."""

    def __init__(self, data: RetailData, base_url: str, card_bytes: int) -> None:
        self._inner = build_reference_agent_app("oracle", data=data, url=base_url)
        self._base = base_url.rstrip("/")
        card = agent_card(name="many-urls-oracle", description="the oracle, one card per URL", url=_URL_MARK)
        filler = "x" * 900
        while len(MessageToJson(card)) < card_bytes:
            skill = card.skills.add()
            skill.id, skill.name, skill.description = f"pad-{len(card.skills)}", "padding", filler
        self._card = MessageToJson(card)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        match = _PREFIX.match(scope.get("path", "")) if scope["type"] == "http" else None
        if match is None:
            await self._inner(scope, receive, send)
            return
        rest = match.group(2) or "/"
        if rest == _CARD_PATH:
            body = self._card.replace(_URL_MARK, f"{self._base}/agents/{match.group(1)}/").encode()
            headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        await self._inner({**scope, "path": rest, "raw_path": rest.encode()}, receive, send)


@asynccontextmanager
async def serve_many_url_agents(data: RetailData, card_bytes: int) -> AsyncIterator[str]:
    """Serve `ManyUrlAgents` on loopback in this process; yields the base URL."""

    def app_for(url: str) -> Starlette:
        return cast(Starlette, ManyUrlAgents(data, url, card_bytes))  # an ASGI app; lifespan passed through

    async with serve_app(app_for) as url:
        yield url.rstrip("/")


def agent_url(base: str, n: int) -> str:
    return f"{base}/agents/{n}/"


def _cache_bounds(settings: EngineSettings, unbounded: bool) -> EngineSettings:
    """`settings`, or with the card cache's count and byte bounds lifted (what the service kept before)."""
    if not unbounded:
        return settings
    return settings.model_copy(
        update={"agent_card_cache_entries": 100_000, "agent_card_cache_bytes": 1 << 34}
    )


async def _rss_around(one: Callable[[int], Awaitable[None]], warmup: int, urls: int) -> tuple[int, int]:
    """RSS after `warmup` calls of `one` (agent URLs 0..warmup-1) and after `urls` more, each on a new URL."""
    from bench.procstats import rss_bytes

    for n in range(warmup):
        await one(n)
    gc.collect()
    before = rss_bytes()
    for n in range(warmup, warmup + urls):
        await one(n)
    gc.collect()
    return before, rss_bytes()


# -- the engine-level probe (tests/engine/test_agent_url_memory.py runs it in a fresh process) --------------


async def _probe(urls: int, warmup: int, card_bytes: int, unbounded: bool) -> dict[str, Any]:
    from green_agent import AssessmentConfig, Engine, TaskSelection

    data = await asyncio.to_thread(load_retail_data)
    settings = _cache_bounds(EngineSettings(), unbounded)
    async with serve_many_url_agents(data, card_bytes) as base, Engine(settings, data) as engine:

        async def one(n: int) -> None:
            config = AssessmentConfig(agent_url=agent_url(base, n), tasks=TaskSelection(task_ids=["0"]))
            run = await engine.open_assessment(config, assessment_id=f"probe-{n}")
            async with run._deps.open_conversation():  # an a2a client built for the card, as a trial does
                pass

        before, after = await _rss_around(one, warmup, urls)
    return {"urls": urls, "growth_bytes": after - before, "unbounded": unbounded}


# -- the service-level benchmark --------------------------------------------------------------------------


async def _bench(urls: int, warmup: int, card_bytes: int, database: str, unbounded: bool) -> dict[str, Any]:
    from bench.harness import engine_settings, fresh_database, green_agent_service
    from bench.white_agent import white_agent_process
    from green_agent import AssessmentConfig, TaskSelection

    data = await asyncio.to_thread(load_retail_data)
    async with (
        white_agent_process("many_urls", card_bytes=card_bytes) as white,
        fresh_database(database) as database_url,  # type: ignore[arg-type]
        green_agent_service(database_url, _cache_bounds(engine_settings(8), unbounded), data) as green,
    ):

        async def one(n: int) -> None:
            config = AssessmentConfig(agent_url=agent_url(white.url, n), tasks=TaskSelection(task_ids=["0"]))
            record, _ = await green.service.create(config, source="bench")
            final = await green.service.wait(record.id)
            if final.status != "completed":
                raise RuntimeError(f"assessment {record.id} ended {final.status}: {final.error}")

        rss_before, rss_after = await _rss_around(one, warmup, urls)
    return {
        "urls": urls,
        "card_bytes": card_bytes,
        "rss_before_mib": rss_before / 2**20,
        "rss_after_mib": rss_after / 2**20,
        "rss_kib_per_url": (rss_after - rss_before) / 1024 / urls,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="memory kept per distinct agent URL")
    parser.add_argument("mode", nargs="?", choices=["bench", "probe"], default="bench")
    parser.add_argument("--urls", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--card-bytes", type=int, default=120_000)
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--unbounded", action="store_true", help="lift the card cache bounds (comparison)")
    args = parser.parse_args(argv)
    if args.mode == "probe":
        result = uvloop.run(_probe(args.urls, args.warmup, args.card_bytes, args.unbounded))
        print(json.dumps(result))
        return 0
    result = uvloop.run(_bench(args.urls, args.warmup, args.card_bytes, args.database, args.unbounded))
    where = args.database + (UNBOUNDED_NOTE if args.unbounded else "")
    print(
        f"{result['urls']} one-trial assessments, each on a new agent URL with a {args.card_bytes:,}-byte "
        f"card ({where}): RSS {result['rss_before_mib']:.1f} -> {result['rss_after_mib']:.1f} MiB, "
        f"{result['rss_kib_per_url']:.1f} KiB per distinct URL"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
