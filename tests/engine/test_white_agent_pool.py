"""The white-agent pool's resources: HTTP clients, what they share, and what a waiting trial holds."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import ssl
import weakref
from typing import Any

import httpx
import pytest
from a2a.helpers import new_text_part
from a2a.server.agent_execution import RequestContext
from a2a.server.events import EventQueue
from a2a.types import Part

from green_agent import AssessmentConfig, TaskSelection
from green_agent.reference_agents import serve_reference_agent
from green_agent.reference_agents.replies import Incoming
from green_agent.white_agent.client import ClientLimits, WhiteAgentPool
from green_agent.white_agent.text_dialect import TextDialect
from retail_domain import RetailData
from tests.engine.conftest import engine_for
from tests.support.agents import FunctionExecutor, serve_executor


def _ssl_context_of(client: httpx.AsyncClient) -> ssl.SSLContext:
    # The transport builds its TLS context on its first https connection; there is no public accessor.
    context = client._transport._ssl_context()  # type: ignore[attr-defined]
    assert isinstance(context, ssl.SSLContext)
    return context


async def test_pool_clients_share_one_tls_context(data: RetailData) -> None:
    """Building a TLS context loads the whole CA bundle (~1 MB): none for plain-http agents, and one per
    pool, not one per HTTP client."""
    pool = WhiteAgentPool(ClientLimits(conversations_per_client=1))
    try:
        async with serve_reference_agent("oracle", data=data) as url, contextlib.AsyncExitStack() as stack:
            for _ in range(3):  # one conversation per client: three clients
                await stack.enter_async_context(pool.conversation(url, turn_timeout_s=10))
            clients = [slot.http for slot in pool._slots]
            assert len(clients) == 3
            assert pool._card_http is not None
            assert pool._ssl is None  # http only so far: no CA bundle loaded
            contexts = {id(_ssl_context_of(c)) for c in [*clients, pool._card_http]}
            assert len(contexts) == 1
    finally:
        await pool.aclose()


def test_default_conversations_per_client_is_small() -> None:
    """A client keeps at most this many idle connections; small clients keep connections few per client."""
    from green_agent import EngineSettings

    assert ClientLimits().conversations_per_client == EngineSettings().conversations_per_client == 4


class _TrackedParts(list[Part]):
    """A list that can be weakly referenced, to see when the engine lets go of a sent message."""


async def test_sent_message_is_not_held_while_its_answer_is_awaited(
    data: RetailData, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The opening message (policy + tools, ~24 KB) must not stay referenced by the orchestrator or the
    conversation while a trial waits for the agent: with 1,000 live trials that is ~24 MB per copy."""
    sent: list[weakref.ReferenceType[_TrackedParts]] = []
    original = TextDialect.opening

    def tracked_opening(self: TextDialect, **kwargs: Any) -> list[Part]:
        parts = _TrackedParts(original(self, **kwargs))
        sent.append(weakref.ref(parts))
        return parts

    monkeypatch.setattr(TextDialect, "opening", tracked_opening)
    received = asyncio.Event()

    async def hold(incoming: Incoming, context: RequestContext, queue: EventQueue) -> None:
        received.set()
        await asyncio.Event().wait()  # never answers: the trial stays waiting on its first message

    async with serve_executor(FunctionExecutor(hold)) as url, engine_for(data) as engine:
        config = AssessmentConfig(agent_url=url, tasks=TaskSelection(task_ids=["0"]))
        running = asyncio.create_task(engine.run(config))
        try:
            await asyncio.wait_for(received.wait(), 10)
            gc.collect()
            assert len(sent) == 1
            assert sent[0]() is None, "the sent parts are still referenced while the answer is awaited"
        finally:
            running.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await running


async def test_conversations_of_a_client_share_one_a2a_client_until_the_card_changes(
    data: RetailData,
) -> None:
    """An a2a client keeps no per-conversation state, so one per pooled HTTP client and agent card is enough
    (one per trial cost ~0.1 ms and a few KiB each); a re-fetched card must get a client of its own."""
    pool = WhiteAgentPool(ClientLimits(conversations_per_client=4))
    try:
        async with serve_reference_agent("oracle", data=data) as url:
            async with (
                pool.conversation(url, turn_timeout_s=10) as first,
                pool.conversation(url, turn_timeout_s=10) as second,
            ):
                assert first.client is second.client
                assert first.context_id != second.context_id
            pool.forget_card(url)
            async with pool.conversation(url, turn_timeout_s=10) as third:
                assert third.card is not first.card
                assert third.client is not first.client
                reply = await third.send([new_text_part("hello")])
                assert reply.text or reply.data
    finally:
        await pool.aclose()


async def test_a_cached_card_is_judged_once_per_policy(
    data: RetailData, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent URL and the card's endpoints are judged against the pool's policy at the cached card's first
    use, not at every trial; a different policy judges them again (here: one that refuses loopback)."""
    from green_agent.white_agent.egress import AgentEgressError, EgressPolicy

    judged: list[str] = []
    url_refusal = EgressPolicy.url_refusal

    def counted(self: EgressPolicy, url: str) -> str | None:
        judged.append(url)
        return url_refusal(self, url)

    monkeypatch.setattr(EgressPolicy, "url_refusal", counted)
    pool = WhiteAgentPool(ClientLimits(conversations_per_client=1))
    try:
        async with serve_reference_agent("oracle", data=data) as url:
            async with pool.conversation(url, turn_timeout_s=10):
                pass  # fetched: the endpoints judged as the card is cached
            async with pool.conversation(url, turn_timeout_s=10):
                pass  # first use of the cached card: URL and endpoints judged
            after_first_use = len(judged)
            for _ in range(3):
                async with pool.conversation(url, turn_timeout_s=10):
                    pass
            assert len(judged) == after_first_use  # not again under the same policy
            pool.policy = EgressPolicy(allow_private=False)
            with pytest.raises(AgentEgressError, match="refused"):
                async with pool.conversation(url, turn_timeout_s=10):
                    pass
    finally:
        await pool.aclose()
