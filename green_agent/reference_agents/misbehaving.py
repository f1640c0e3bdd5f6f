"""White agents that misbehave on purpose, for tests and benchmarks.

* `NoToolsExecutor`: always answers the customer politely and never calls a tool.
* `SleepingExecutor`: answers only after a long sleep (`timeout` outlives the turn timeout; `idle` holds
  conversations open for memory benchmarks).
* `garbage_endpoint`: a JSON-RPC endpoint that answers every request with bytes that are not A2A at all.
"""

from __future__ import annotations

import asyncio

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from starlette.requests import Request
from starlette.responses import Response

from green_agent.reference_agents.replies import Incoming, agent_message, text_parts

NO_TOOLS_TEXT = "Thank you for reaching out. I'm afraid I can't look anything up or change anything for you."
GARBAGE_BODY = b"%%% this is not JSON-RPC, not A2A, not anything %%%"


class NoToolsExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        incoming = Incoming.of(context.message)
        parts = text_parts(incoming.structured, NO_TOOLS_TEXT)
        await event_queue.enqueue_event(agent_message(parts, context.context_id))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        return None


class SleepingExecutor(AgentExecutor):
    def __init__(self, sleep_s: float) -> None:
        self._sleep_s = sleep_s

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        await asyncio.sleep(self._sleep_s)
        incoming = Incoming.of(context.message)
        parts = text_parts(incoming.structured, "Sorry for the wait.")
        await event_queue.enqueue_event(agent_message(parts, context.context_id))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        return None


async def garbage_endpoint(request: Request) -> Response:
    await request.body()
    return Response(GARBAGE_BODY, status_code=200, media_type="application/json")
