"""The white-agent pool's resources: HTTP clients and what they share."""

from __future__ import annotations

import contextlib
import ssl

import httpx

from green_agent.reference_agents import serve_reference_agent
from green_agent.white_agent.client import ClientLimits, WhiteAgentPool
from retail_domain import RetailData


def _ssl_context_of(client: httpx.AsyncClient) -> ssl.SSLContext:
    # httpx keeps the context on its connection pool; there is no public accessor.
    context = client._transport._pool._ssl_context  # type: ignore[attr-defined]
    assert isinstance(context, ssl.SSLContext)
    return context


async def test_pool_clients_share_one_tls_context(data: RetailData) -> None:
    """Building a TLS context loads the whole CA bundle (~1 MB); one per pool, not one per HTTP client."""
    pool = WhiteAgentPool(ClientLimits(conversations_per_client=1))
    try:
        async with serve_reference_agent("oracle", data=data) as url, contextlib.AsyncExitStack() as stack:
            for _ in range(3):  # one conversation per client: three clients
                await stack.enter_async_context(pool.conversation(url, turn_timeout_s=10))
            clients = [slot.http for slot in pool._slots]
            assert len(clients) == 3
            assert pool._card_http is not None
            contexts = {id(_ssl_context_of(c)) for c in [*clients, pool._card_http]}
            assert len(contexts) == 1
    finally:
        await pool.aclose()


def test_default_conversations_per_client_is_small() -> None:
    """httpcore scans a client's whole connection pool per request; small clients keep that scan short."""
    from green_agent import EngineSettings

    assert ClientLimits().conversations_per_client == EngineSettings().conversations_per_client == 4
