"""White agents packaged the way A2A frameworks package replies, each a relay to the oracle (so a client that
reads them right scores 1), for issue 35: a reply's meaning must not depend on the framework.

* `ChunkingRelay` runs on a2a-sdk's own server and answers as a streaming agent of @a2a-js/sdk 1.3 or
  a2a-sdk 0.3 does: it keeps its task open in input-required and writes each answer as chunks appended to one
  artifact (`append: true`), which the SDK's task store keeps as separate text parts of that artifact. Served
  with a 0.3 interface, the server reads `historyLength: 0` as "no limit" (as a2a-sdk 0.3.26 does) and echoes
  the whole conversation with every reply; `lookups` read-only calls per conversation make it longer.
* `fasta2a_agent` is fasta2a 2.1 (pydantic-ai's A2A server) itself, with a relay worker: A2A 1.0, a new task
  per message, answered `submitted` at once (or streamed), status timestamps without a time zone.

`zoneless_timestamps` rewrites a server's timestamps the way fasta2a writes them, for the a2a-sdk server.
"""

from __future__ import annotations

import contextlib
import json
import re
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

from a2a.helpers import new_task_from_user_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from fasta2a import FastA2A, Worker
from fasta2a.broker import InMemoryBroker
from fasta2a.schema import Artifact, Message, TaskIdParams, TaskSendParams
from fasta2a.storage import InMemoryStorage
from starlette.applications import Starlette
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.types import Message as AsgiMessage

from green_agent.reference_agents import agent_card, build_agent_app, serve_app
from green_agent.reference_agents.oracle import DONE_TEXT, UNKNOWN_TEXT, OracleExecutor, named_task
from green_agent.reference_agents.replies import Incoming
from retail_domain import RetailData

LOOKUP = json.dumps({"name": "list_all_product_types", "arguments": {}})
"""A read-only call (its result, some 1.5 KB of product names and ids, comes back in the next message)."""


class OracleRelay:
    """The oracle's answers as text-dialect JSON, for servers that are not a2a-sdk executors: `lookups`
    read-only calls first in each conversation, then the task's gold actions, then a closing line."""

    def __init__(self, data: RetailData, *, lookups: int = 0) -> None:
        self._oracle = OracleExecutor(data)
        self._lookups = lookups
        self._looked: dict[str, int] = {}

    def answer(self, context_id: str, text: str) -> str:
        incoming = Incoming(text=text, data=())
        self._oracle.load_now(named_task(incoming)[1])
        session = self._oracle._session(context_id, incoming)
        if session is None:
            return json.dumps({"name": "respond", "arguments": {"content": UNKNOWN_TEXT}})
        looked = self._looked.get(context_id, 0)
        if looked < self._lookups:
            self._looked[context_id] = looked + 1
            return LOOKUP
        if session.next_action < len(session.actions):
            action = session.actions[session.next_action]
            session.next_action += 1
            return json.dumps({"name": action.name, "arguments": action.arguments})
        closing = DONE_TEXT + "".join(f" {fact}." for fact in session.facts)  # as the oracle closes
        return json.dumps({"name": "respond", "arguments": {"content": closing}})


def chunks_of(text: str, count: int) -> list[str]:
    """`text` cut into `count` pieces of about equal length (cuts land inside JSON strings and keys)."""
    size = -(-len(text) // count)
    return [text[i : i + size] for i in range(0, len(text), size)]


class ChunkingRelay(AgentExecutor):
    """An a2a-sdk executor that answers in `chunks` appended chunks of one artifact, task left open."""

    def __init__(self, relay: OracleRelay, *, chunks: int = 3) -> None:
        self._relay = relay
        self._chunks = chunks

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        answer = self._relay.answer(context.context_id or "", Incoming.of(context.message).text)
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work()
        artifact_id = str(uuid.uuid4())
        pieces = chunks_of(answer, self._chunks)
        for i, piece in enumerate(pieces):
            await updater.add_artifact(
                [new_text_part(piece)],
                artifact_id=artifact_id,
                name="answer",
                append=i > 0,
                last_chunk=i == len(pieces) - 1,
            )
        await updater.requires_input()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        return None


@contextlib.asynccontextmanager
async def serve_chunking_relay(
    data: RetailData,
    *,
    protocol_version: str,
    streaming: bool,
    chunks: int = 3,
    lookups: int = 0,
    wrap: Callable[[ASGIApp], ASGIApp] | None = None,
) -> AsyncIterator[str]:
    """A `ChunkingRelay` on a2a-sdk's server, its card saying `protocol_version` and `streaming`; `wrap`
    rewrites what the server writes (`ZonelessTimestamps`, `RewrittenTasks`)."""
    executor = ChunkingRelay(OracleRelay(data, lookups=lookups), chunks=chunks)

    def app_for(url: str) -> Starlette:
        card = agent_card(
            name="chunking-relay", description="oracle relay", url=url, protocol_version=protocol_version
        )
        card.capabilities.streaming = streaming
        app = build_agent_app(executor, card=card)
        return wrap(app) if wrap is not None else app  # type: ignore[return-value]

    async with serve_app(app_for) as url:
        yield url


_ZONED = re.compile(rb'("timestamp":\s*"[0-9T:.-]+?)(?:Z|[+-]00:00)"')


class ZonelessTimestamps:
    """ASGI middleware writing every `"timestamp"` of a response without its time zone, as fasta2a does
    (`datetime.now().isoformat()`): `2026-12-01T21:14:01.505735`."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def rewrite(message: AsgiMessage) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [(k, v) for k, v in message["headers"] if k.lower() != b"content-length"]
            elif message["type"] == "http.response.body":
                message["body"] = _ZONED.sub(rb'\1"', message.get("body", b""))
            await send(message)

        await self.app(scope, receive, rewrite)


class RewrittenTasks:
    """ASGI middleware applying `rewrite` to every task of a JSON-RPC answer (0.3 or 1.x), as a server of
    another make would write it: `echo(history)` gives each the history of a server that ignores
    `historyLength` (a flood of echo, or a million values of it)."""

    def __init__(self, app: ASGIApp, rewrite: Callable[[dict[str, Any]], None]) -> None:
        self.app = app
        self.rewrite = rewrite
        self.rewritten = 0
        """Tasks rewritten so far."""

    @classmethod
    def echo(cls, history: Any, made: list[RewrittenTasks]) -> Callable[[ASGIApp], ASGIApp]:
        """A `wrap` for `serve_chunking_relay` giving every task `history`; `made` gets the middleware."""

        def wrap(app: ASGIApp) -> ASGIApp:
            made.append(cls(app, lambda task: task.__setitem__("history", history)))
            return made[-1]

        return wrap

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def rewrite(message: AsgiMessage) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [(k, v) for k, v in message["headers"] if k.lower() != b"content-length"]
            elif message["type"] == "http.response.body" and message.get("body", b"").startswith(b"{"):
                answer = json.loads(message["body"])
                result = answer.get("result") if isinstance(answer, dict) else None
                task = result.get("task", result) if isinstance(result, dict) else None
                if isinstance(task, dict) and "status" in task:
                    self.rewrite(task)
                    self.rewritten += 1
                    message["body"] = json.dumps(answer).encode()
            await send(message)

        await self.app(scope, receive, rewrite)


# -- fasta2a 2.1 -------------------------------------------------------------------------------------------


class _RelayWorker(Worker[list[Message]]):
    """fasta2a's worker contract: read the task's message, store the answer as an artifact (in `chunks`
    parts, also published as appended chunks to a streaming client) and complete the task."""

    relay: OracleRelay
    chunks: int

    async def run_task(self, params: TaskSendParams) -> None:
        task = await self.storage.load_task(params["id"])
        assert task is not None
        context_id = task["context_id"]
        await self.storage.update_task(task["id"], state="working")
        await self.publish_status(task["id"], context_id, "working")
        text = "\n".join(p["text"] for p in params["message"]["parts"] if "text" in p)
        pieces = chunks_of(self.relay.answer(context_id, text), self.chunks)
        artifact_id = str(uuid.uuid4())
        for i, piece in enumerate(pieces):
            chunk = Artifact(artifact_id=artifact_id, name="result", parts=[{"text": piece}])
            await self.publish_artifact(
                task["id"], context_id, chunk, append=i > 0, last_chunk=i == len(pieces) - 1
            )
        artifact = Artifact(artifact_id=artifact_id, name="result", parts=[{"text": p} for p in pieces])
        await self.storage.update_task(task["id"], state="completed", new_artifacts=[artifact])

    async def cancel_task(self, params: TaskIdParams) -> None:
        await self.storage.update_task(params["id"], state="canceled")

    def build_message_history(self, history: list[Message]) -> list[Any]:
        return history

    def build_artifacts(self, result: Any) -> list[Artifact]:
        return []


class _CardSays(FastA2A):
    streams: bool = True

    def _capabilities(self) -> Any:
        capabilities = super()._capabilities()
        capabilities["streaming"] = self.streams
        return capabilities


@contextlib.asynccontextmanager
async def serve_fasta2a_relay(data: RetailData, *, streaming: bool, chunks: int = 3) -> AsyncIterator[str]:
    """fasta2a's own app and in-memory storage and broker, with a relay worker; its card says `streaming`
    (fasta2a's says true)."""
    relay = OracleRelay(data)

    def app_for(url: str) -> Starlette:
        storage: InMemoryStorage[list[Message]] = InMemoryStorage()
        broker = InMemoryBroker()
        worker = _RelayWorker(broker=broker, storage=storage)
        worker.relay, worker.chunks = relay, chunks

        @contextlib.asynccontextmanager
        async def lifespan(app: FastA2A) -> AsyncIterator[None]:
            async with app.task_manager, worker.run():
                yield

        app = _CardSays(storage=storage, broker=broker, name="fasta2a-relay", url=url, lifespan=lifespan)
        app.streams = streaming
        return app

    async with serve_app(app_for) as url:
        yield url
