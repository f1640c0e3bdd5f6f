"""Helpers to serve ad-hoc white agents (custom executors) over real loopback A2A, for tests."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from starlette.applications import Starlette

from green_agent.reference_agents import agent_card, build_agent_app, serve_app
from green_agent.reference_agents.replies import Incoming

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
