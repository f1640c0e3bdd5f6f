"""Helpers to serve ad-hoc white agents (custom executors) over real loopback A2A, for tests."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from starlette.applications import Starlette
from starlette.types import ASGIApp, Receive, Scope, Send

from green_agent.reference_agents import agent_card, build_agent_app, serve_app
from green_agent.reference_agents.replies import Incoming, agent_message, text_parts

Reply = Callable[[Incoming, RequestContext, EventQueue], Awaitable[None]]


class FunctionExecutor(AgentExecutor):
    """An executor whose behaviour is one async function of the incoming message (tests write it inline)."""

    def __init__(self, reply: Reply) -> None:
        self._reply = reply
        self.received: list[Incoming] = []

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        incoming = Incoming.of(context.message)
        self.received.append(incoming)
        await self._reply(incoming, context, event_queue)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        return None


@contextlib.asynccontextmanager
async def serve_executor(
    executor: AgentExecutor, *, structured: bool = False, protocol_version: str = "1.0"
) -> AsyncIterator[str]:
    """Serve any executor as an A2A agent on loopback; yields its base URL."""

    def app_for(url: str) -> Starlette:
        card = agent_card(
            name="test-agent",
            description="a white agent written by a test",
            url=url,
            structured=structured,
            protocol_version=protocol_version,
        )
        return build_agent_app(executor, card=card)

    async with serve_app(app_for) as url:
        yield url


class HeaderRecorder:
    """ASGI middleware keeping the headers of every request (what the agent really received)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.seen: list[dict[str, str]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.seen.append({k.decode().lower(): v.decode() for k, v in scope["headers"]})
        await self.app(scope, receive, send)


class ConcurrencyProbe:
    """A reply function that answers after `delay_s` and keeps the peak number of messages handled at once
    (how many trials the engine let run against this agent)."""

    def __init__(self, delay_s: float = 0.05) -> None:
        self.delay_s = delay_s
        self.in_flight = 0
        self.peak = 0

    async def __call__(self, incoming: Incoming, context: RequestContext, queue: EventQueue) -> None:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await asyncio.sleep(self.delay_s)
        finally:
            self.in_flight -= 1
        await queue.enqueue_event(agent_message(text_parts(False, "Done."), context.context_id))


async def answer_done(incoming: Incoming, context: RequestContext, queue: EventQueue) -> None:
    """A white agent that answers every message with the same short text."""
    await queue.enqueue_event(agent_message(text_parts(False, "###STOP###"), context.context_id))


@contextlib.asynccontextmanager
async def serve_agent(
    executor: AgentExecutor, *, advertise: Callable[[str], str] = lambda url: url
) -> AsyncIterator[tuple[str, int, HeaderRecorder]]:
    """A real A2A agent on loopback whose card advertises `advertise(own_url)` as its endpoint (a test of
    where a card may send the service); yields its URL, its port and the headers it received."""
    recorders: list[HeaderRecorder] = []

    def app_for(url: str) -> Starlette:
        card = agent_card(
            name="test-agent", description="a white agent written by a test", url=advertise(url)
        )
        recorder = HeaderRecorder(build_agent_app(executor, card=card))
        recorders.append(recorder)
        return recorder  # type: ignore[return-value]

    async with serve_app(app_for) as url:
        yield url, int(url.rstrip("/").rsplit(":", 1)[1]), recorders[0]
