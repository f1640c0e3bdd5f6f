"""Serving reference white agents over real A2A (a2a-sdk 1.x server, JSON-RPC, 0.3 clients accepted).

`build_reference_agent_app` gives the ASGI app; `serve_reference_agent` runs it with uvicorn in this process
on loopback and yields its base URL (tests, the service's `demo` command, benchmarks).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, Literal

import uvicorn
from a2a.server.agent_execution import AgentExecutor
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import AgentCapabilities, AgentCard, AgentExtension, AgentInterface, AgentSkill
from starlette.applications import Starlette
from starlette.routing import Route

from domain_kit import DomainData
from green_agent.config import LLMEndpoint
from green_agent.llm.client import ChatLLM
from green_agent.reference_agents.llm_agent import LLMAgentExecutor, ToolCallMode
from green_agent.reference_agents.misbehaving import NoToolsExecutor, SleepingExecutor, garbage_endpoint
from green_agent.reference_agents.oracle import OracleExecutor
from green_agent.white_agent.dialect import STRUCTURED_DIALECT_URI

ReferenceKind = Literal["oracle", "llm", "no_tools", "garbage", "timeout", "idle"]

TIMEOUT_AGENT_SLEEP_S = 3_600.0
IDLE_AGENT_SLEEP_S = 86_400.0

_DESCRIPTIONS: dict[str, str] = {
    "oracle": "Replays the task's gold actions (needs the scripted customer, who names the task).",
    "llm": "A plain tool-calling agent on an OpenAI-compatible endpoint.",
    "no_tools": "Never calls a tool; always answers politely that it cannot help.",
    "garbage": "Answers every request with bytes that are not A2A.",
    "timeout": "Answers only after an hour, past any turn timeout.",
    "idle": "Answers only after a day; holds conversations open for memory benchmarks.",
}


def agent_card(
    *, name: str, description: str, url: str, structured: bool = False, protocol_version: str = "1.0"
) -> AgentCard:
    """The card of a reference agent at `url`. A 1.0 agent lists its endpoint for 0.3 clients too (the route
    takes both), so the card also carries the fields a 0.3 client requires (`url` and the rest, which the SDK
    adds when an interface is 0.3): the AgentBeats gateway reads every participant's card with a2a-sdk 0.3
    before it starts. `protocol_version="0.3"` makes an agent that offers 0.3 only."""
    extensions = []
    if structured:
        extensions.append(AgentExtension(uri=STRUCTURED_DIALECT_URI, description="tau2 retail structured v1"))
    versions = [protocol_version] if protocol_version == "0.3" else [protocol_version, "0.3"]
    return AgentCard(
        name=name,
        description=description,
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version=version)
            for version in versions
        ],
        capabilities=AgentCapabilities(streaming=False, extensions=extensions),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain", "application/json"],
        skills=[
            AgentSkill(id="retail-support", name="Retail support", description=description, tags=["tau2"])
        ],
    )


def build_agent_app(
    executor: AgentExecutor,
    *,
    card: AgentCard,
    rpc_endpoint: Callable[..., Any] | None = None,
    on_close: Callable[[], Awaitable[None]] | None = None,
) -> Starlette:
    """An A2A app for any executor (tests build their own misbehaving agents with it)."""
    handler = DefaultRequestHandler(executor, InMemoryTaskStore(), card)
    rpc_routes = (
        [Route("/", rpc_endpoint, methods=["POST"])]
        if rpc_endpoint is not None
        else create_jsonrpc_routes(handler, "/", enable_v0_3_compat=True)
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await handler.aclose()
            if on_close is not None:
                await on_close()

    return Starlette(routes=[*create_agent_card_routes(card), *rpc_routes], lifespan=lifespan)


def build_reference_agent_app(
    kind: ReferenceKind,
    *,
    data: DomainData | None = None,
    url: str,
    llm: LLMEndpoint | None = None,
    delay_s: float = 0.0,
    protocol_version: str = "1.0",
    tool_calls: ToolCallMode = "native",
) -> Starlette:
    """The app of one reference agent; `url` is where it will be reachable (it goes into the agent card)."""
    executor: AgentExecutor
    rpc_endpoint = None
    on_close: Callable[[], Awaitable[None]] | None = None
    if kind == "oracle":
        executor = OracleExecutor(data, delay_s=delay_s)
    elif kind == "llm":
        if llm is None:
            raise ValueError("the 'llm' reference agent needs an LLM endpoint (llm=LLMEndpoint(...))")
        chat = ChatLLM(llm)
        executor, on_close = LLMAgentExecutor(chat, tool_calls), chat.aclose
    elif kind == "no_tools":
        executor = NoToolsExecutor()
    elif kind == "garbage":
        executor, rpc_endpoint = NoToolsExecutor(), garbage_endpoint
    elif kind == "timeout":
        executor = SleepingExecutor(max(delay_s, TIMEOUT_AGENT_SLEEP_S))
    elif kind == "idle":
        executor = SleepingExecutor(max(delay_s, IDLE_AGENT_SLEEP_S))
    else:
        raise ValueError(f"unknown reference agent kind {kind!r}; use one of {sorted(_DESCRIPTIONS)}")
    card = agent_card(
        name=f"reference-{kind}",
        description=_DESCRIPTIONS[kind],
        url=url,
        structured=kind == "llm",
        protocol_version=protocol_version,
    )
    return build_agent_app(executor, card=card, rpc_endpoint=rpc_endpoint, on_close=on_close)


@contextlib.contextmanager
def _bound_socket(host: str, port: int) -> Iterator[socket.socket]:
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
        sock.setblocking(False)
        yield sock
    finally:
        sock.close()


class _QuietServer(uvicorn.Server):
    """uvicorn inside someone else's process: leave the process's signal handlers alone."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@contextlib.asynccontextmanager
async def serve_app(
    app_for_url: Callable[[str], Starlette], *, host: str = "127.0.0.1", port: int = 0
) -> AsyncIterator[str]:
    """Run `app_for_url(base_url)` with uvicorn on this event loop until the block exits; yield the URL."""
    with _bound_socket(host, port) as sock:
        bound_port = sock.getsockname()[1]
        url = f"http://{'[' + host + ']' if ':' in host else host}:{bound_port}/"
        config = uvicorn.Config(
            app_for_url(url),
            log_level="warning",
            access_log=False,
            timeout_keep_alive=75,  # outlive the client's idle connections (short keep-alive gave ReadErrors)
            timeout_graceful_shutdown=1,  # sleeping agents must not hold the shutdown
        )
        server = _QuietServer(config)
        serving = asyncio.create_task(server.serve(sockets=[sock]))
        try:
            while not server.started:
                if serving.done():
                    serving.result()  # startup failed: raise its error
                    raise RuntimeError("the agent server stopped during start-up")
                await asyncio.sleep(0.01)
            yield url
        finally:
            server.should_exit = True
            with contextlib.suppress(asyncio.CancelledError):
                await serving


@contextlib.asynccontextmanager
async def serve_reference_agent(
    kind: ReferenceKind,
    *,
    data: DomainData | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    llm: LLMEndpoint | None = None,
    delay_s: float = 0.0,
    protocol_version: str = "1.0",
    tool_calls: ToolCallMode = "native",
) -> AsyncIterator[str]:
    """Serve one reference agent on loopback (port 0 = any free port); yields its base URL. `tool_calls`
    picks how the `llm` agent gets tool calls from its model (llm_agent.ToolCallMode)."""

    def app_for(url: str) -> Starlette:
        return build_reference_agent_app(
            kind,
            data=data,
            url=url,
            llm=llm,
            delay_s=delay_s,
            protocol_version=protocol_version,
            tool_calls=tool_calls,
        )

    async with serve_app(app_for, host=host, port=port) as url:
        yield url
