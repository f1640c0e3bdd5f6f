"""A2A client side: a small pool of httpx clients, cached agent cards, one conversation per trial.

Why a pool: conversations are spread over clients of at most `conversations_per_client` each (each client
keeps that many idle connections at most; with httpx's own transport, one client also degraded beyond ~64
conversations).

Delivery rule: a message is re-sent only when the connection was never established (so it cannot have been
delivered). Everything else (timeout, HTTP or A2A error, a failed task, an empty answer) becomes an
`AgentError` at once; library exceptions are translated here and nowhere else.

Egress: every connection goes through the pool's `EgressPolicy` (`egress.py`), and so do the endpoints an
agent card advertises. Failures do not tell port states apart: a card that cannot be fetched, whatever the
reason, reads "could not reach the agent", and so does any failure at an endpoint the card advertises on
another origin than the agent URL (only the agent's own origin gets detailed errors, for vendors debugging).
Optional per-assessment headers (the agent's own credentials) go with every request to the agent, and
nowhere else: never into messages, errors or logs.

HTTP: the clients are `DirectClient`s on `AgentTransport` (http1.py), HTTP/1.1 on asyncio and llhttp, at a
fraction of the CPU of httpx's own stack (a third of the green agent's cost per turn went there). Every reply
is matched to its request (matching.py: JSON-RPC id, A2A context and task id), and a trial's connections serve
that trial only and close when its conversation ends.

Size rule: every response is read by the transport, which stops reading past `max_reply_bytes` plus
`max_echo_bytes`, and then by wire.py, which drops the task history a server echoes back (our own messages)
and the fields nobody reads, and refuses bodies over `max_reply_bytes` or with more JSON values than
`max_reply_values` without that echo, before the A2A SDK parses them (it does so on the event loop).
Compressed bodies are refused: a small body could inflate without bound.

Packaging rule: a reply means the same however the agent's framework packaged it. The text parts of one
artifact are one text (streaming SDKs store appended chunks as separate parts of one artifact); separate
artifacts, and the parts of a message, are separate lines. An agent whose card says it streams is sent
`SendStreamingMessage` (0.3: `message/stream`); its events are folded into the task they describe
(`_TaskFold`), so the same reply is read as from the final task of a blocking `SendMessage`. The history
asked for is the smallest each protocol version honours (`history_length_for`).

Loop rule: reading one reply never holds the event loop for more than a few ms (issue 8 asks for ~10 ms at
most). Receiving the body, the SDK's parse of it, turning its parts into Python values and admitting them
(`intake.admit_reply`, called by the orchestrator) each cost up to ~3 ms at the bounds, so each runs in a loop
callback of its own: the steps are separated by `await asyncio.sleep(0)` (docs/benchmarks.md, hostile white
agents, measures it).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import ssl
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx
import pydantic
from a2a.client import A2ACardResolver, Client, ClientCallContext, ClientConfig, ClientFactory
from a2a.client.errors import A2AClientTimeoutError
from a2a.compat.v0_3.versions import is_legacy_version
from a2a.helpers import get_data_parts, get_text_parts
from a2a.types import (
    AgentCard,
    Artifact,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
)
from a2a.utils.constants import TransportProtocol
from a2a.utils.errors import A2AError
from google.protobuf.json_format import MessageToDict  # type: ignore[import-untyped]

from green_agent.core.bounded_cache import BoundedCache
from green_agent.core.errors import (
    AgentEgressError,
    AgentError,
    AgentProtocolError,
    AgentTimeoutError,
    AgentUnreachableError,
)
from green_agent.core.limits import AgentLimits, reply_values
from green_agent.white_agent.egress import (
    UNREACHABLE,
    EgressConnector,
    EgressPolicy,
    Resolver,
    egress_refusal_in,
)
from green_agent.white_agent.http1 import AgentTransport, DirectClient, TransportLimits
from green_agent.white_agent.matching import Trial, expectation_for, expecting
from green_agent.white_agent.unreached import NotACard, why_unreached
from green_agent.white_agent.wire import WireLimits

log = logging.getLogger(__name__)

_FAILED_STATES = {
    TaskState.TASK_STATE_FAILED: "failed",
    TaskState.TASK_STATE_CANCELED: "canceled",
    TaskState.TASK_STATE_REJECTED: "rejected",
    TaskState.TASK_STATE_AUTH_REQUIRED: "auth-required",
}
_PENDING_STATES = {TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING}
_USED_BINDINGS = (TransportProtocol.JSONRPC, TransportProtocol.HTTP_JSON)
AgentHeaders = dict[str, str]
LARGE_REPLY_BYTES = 8 * 1024
"""A reply body above this is read in several loop callbacks (loop rule); below it the steps cost well under
a millisecond together, and the extra callbacks would only add to every turn's CPU."""
ENDPOINT_UNREACHABLE = f"{UNREACHABLE} at the A2A endpoint its card advertises"


@dataclass(frozen=True)
class AgentReply:
    """The usable content of one white-agent answer: its text and its DataPart payloads."""

    text: str
    data: tuple[Any, ...] = ()
    metadata: dict[str, Any] | None = None
    """The answer message's A2A metadata (e.g. the agent's self-reported usage), as plain JSON values."""


@dataclass(frozen=True)
class ClientLimits:
    conversations_per_client: int = 4
    connect_timeout_s: float = 10.0
    write_timeout_s: float = 60.0
    read_timeout_s: float = 3_700.0
    """Backstop only: the per-turn deadline is enforced with asyncio, per assessment."""
    card_timeout_s: float = 30.0
    connect_retries: int = 3
    retry_backoff_s: float = 0.25
    poll_interval_s: float = 0.25
    max_reply_bytes: int = AgentLimits().max_reply_bytes
    max_reply_values: int = AgentLimits().max_reply_values
    max_echo_bytes: int = AgentLimits().max_echo_bytes
    card_cache_entries: int = 64
    """Agent cards kept (with the a2a clients built from them), least recently used first out."""
    card_cache_bytes: int = 2 * 1024 * 1024
    """Their total serialized size; a requester picks the URLs, and each card may be max_reply_bytes."""
    card_cache_ttl_s: float = 300.0
    """Age at which a cached card is fetched again."""
    keepalive_s: float = 5.0
    """An idle connection to an agent older than this is closed rather than reused."""

    @property
    def wire(self) -> WireLimits:
        return WireLimits(self.max_reply_bytes, self.max_reply_values, self.max_echo_bytes)

    @property
    def retry_schedule_s(self) -> float:
        """Total wait between the connection attempts of one message (or card)."""
        return sum(self.retry_backoff_s * 2**i for i in range(self.connect_retries))


@dataclass
class _Slot:
    index: int
    http: DirectClient
    transport: AgentTransport
    factory: ClientFactory
    active: int = 0


CardKey = tuple[str, str]
"""(agent URL, digest of the agent headers): what a card fetch depends on within one pool (one egress
policy). Two assessments of one URL with different credentials may be served different cards."""


def card_key(agent_url: str, headers: AgentHeaders | None) -> CardKey:
    digest = hashlib.sha256()
    for name, value in sorted((headers or {}).items(), key=lambda item: item[0].lower()):
        digest.update(f"{name.lower()}\0{value}\0".encode("utf-8", "surrogatepass"))
    return agent_url, digest.hexdigest()


@dataclass
class _CachedCard:
    """One agent's card and the a2a clients built from it, one per slot that used it: the clients keep no
    per-call state (the context id travels in each message), and building one per trial cost CPU and memory
    for nothing. Evicting the entry drops them all."""

    card: AgentCard
    clients: dict[int, Client] = field(default_factory=dict)
    history_length: int = field(init=False)
    judged_under: EgressPolicy | None = None
    """The policy the agent URL and the card's endpoints were last found acceptable under."""

    def __post_init__(self) -> None:
        self.history_length = history_length_for(self.card)

    def client_for(self, slot: _Slot) -> Client:
        client = self.clients.get(slot.index)
        if client is None:
            client = self.clients[slot.index] = slot.factory.create(self.card)
        return client


@dataclass
class WhiteAgentPool:
    """Owns the httpx clients and agent cards of one egress policy; create one per engine and policy, and
    `aclose()` it."""

    limits: ClientLimits = field(default_factory=ClientLimits)
    policy: EgressPolicy = field(default_factory=EgressPolicy)
    resolver: Resolver | None = None
    """Host name resolution (None = the system resolver); tests inject one."""
    _slots: list[_Slot] = field(default_factory=list, init=False)
    _cards: BoundedCache[CardKey, _CachedCard] = field(init=False)
    _fetching: dict[CardKey, asyncio.Task[_CachedCard]] = field(default_factory=dict, init=False)
    """Card fetches in flight (one per key; concurrent callers share it): at most one per waiting caller."""
    _card_http: DirectClient | None = field(default=None, init=False)
    _ssl: ssl.SSLContext | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self._cards = BoundedCache(
            self.limits.card_cache_entries,
            max_bytes=self.limits.card_cache_bytes,
            ttl_s=self.limits.card_cache_ttl_s,
        )

    def _ssl_context(self) -> ssl.SSLContext:
        """One TLS context for all the pool's clients, built on first use.

        Each `httpx.AsyncClient` otherwise builds its own and loads the whole CA bundle into it (~930 KiB of
        memory and ~50 ms of CPU per client, even for plain-http agents). The context is read-only once
        built, so sharing it between clients is safe; httpx's own factory keeps its defaults (certifi
        bundle, SSL_CERT_FILE / SSL_CERT_DIR honoured).
        """
        if self._ssl is None:
            self._ssl = httpx.create_ssl_context()
        return self._ssl

    def _new_slot(self) -> _Slot:
        limits = self.limits
        timeout = httpx.Timeout(
            connect=limits.connect_timeout_s,
            read=limits.read_timeout_s,
            write=limits.write_timeout_s,
            pool=limits.read_timeout_s,
        )
        # A conversation has at most one request in flight, so this many connections always suffice. A reply
        # may carry an echo of our own messages on top of the agent's bytes (wire.py).
        cap = limits.wire.max_response_bytes
        transport = self._transport(limits.conversations_per_client, cap, "max_reply_bytes + max_echo_bytes")
        http = DirectClient(
            transport,
            timeout=timeout,
            parsed_urls=2 * limits.card_cache_entries,  # a card's endpoints, of every cached card
            matcher=expectation_for,
        )
        config = ClientConfig(
            httpx_client=http,
            streaming=True,  # used where the card says the agent streams; the turn timeout bounds it
            supported_protocol_bindings=[TransportProtocol.JSONRPC, TransportProtocol.HTTP_JSON],
        )
        slot = _Slot(index=len(self._slots), http=http, transport=transport, factory=ClientFactory(config))
        self._slots.append(slot)
        return slot

    def _transport(
        self, max_idle: int, max_response_bytes: int, bound: str = "max_reply_bytes"
    ) -> AgentTransport:
        limits = self.limits

        def check_values(body: bytes) -> None:
            if reply_values(body) > limits.max_reply_values:
                raise AgentProtocolError(
                    f"the agent's response holds more than {limits.max_reply_values} JSON values "
                    "(max_reply_values)"
                )

        return AgentTransport(
            EgressConnector(self.policy, self.resolver),
            TransportLimits(
                max_response_bytes=max_response_bytes,
                max_idle=max_idle,
                keepalive_s=limits.keepalive_s,
                bound=bound,
            ),
            ssl_context=self._ssl_context,
            check_body=check_values,
            large_body_bytes=LARGE_REPLY_BYTES,
        )

    def _acquire_slot(self) -> _Slot:
        free = [s for s in self._slots if s.active < self.limits.conversations_per_client]
        slot = min(free, key=lambda s: s.active) if free else self._new_slot()
        slot.active += 1
        return slot

    async def card(self, agent_url: str, headers: AgentHeaders | None = None) -> AgentCard:
        """The agent's card, fetched once and cached (failures are not cached). Raises `AgentEgressError`
        when the card advertises an endpoint the policy refuses."""
        return (await self._cached_card(agent_url, headers)).card

    async def _cached_card(self, agent_url: str, headers: AgentHeaders | None) -> _CachedCard:
        key = card_key(agent_url, headers)
        cached = self._cards.get(key)
        if cached is not None:
            # The cache belongs to this pool's policy; the URL and the card's endpoints are judged against it
            # at the entry's first use (the addresses behind them at every connection). The policy and the
            # card do not change while the entry lives, so neither does the answer: later uses skip it
            # (~30 us a trial, 2-3% of the green agent's CPU per trial in telecom).
            if cached.judged_under is not self.policy:
                reason = self.policy.url_refusal(agent_url)
                if reason is not None:
                    self._cards.pop(key)
                    raise AgentEgressError(f"the agent URL is refused: {reason}")
                self._check_endpoints(cached.card)
                cached.judged_under = self.policy
            return cached
        fetching = self._fetching.get(key)
        if fetching is None:
            fetching = asyncio.create_task(self._fetch_and_cache(key, agent_url, headers or {}))
            self._fetching[key] = fetching
            fetching.add_done_callback(lambda _: self._fetching.pop(key, None))
        # Shielded: one caller cancelled does not cancel the fetch the others wait for.
        return await asyncio.shield(fetching)

    async def _fetch_and_cache(self, key: CardKey, agent_url: str, headers: AgentHeaders) -> _CachedCard:
        if self._card_http is None:  # its own client: card fetches never queue behind conversations
            self._card_http = DirectClient(
                self._transport(max_idle=4, max_response_bytes=self.limits.max_reply_bytes),
                timeout=self.limits.card_timeout_s,
            )
        card = await self._fetch_card(self._card_http, agent_url, headers)
        self._check_endpoints(card)
        entry = _CachedCard(card)
        self._cards.put(key, entry, size=card.ByteSize())
        return entry

    def forget_card(self, agent_url: str, headers: AgentHeaders | None = None) -> None:
        """Drop the cached card, so the next conversation fetches it afresh (once per assessment)."""
        self._cards.pop(card_key(agent_url, headers))

    async def _fetch_card(self, http: httpx.AsyncClient, agent_url: str, headers: AgentHeaders) -> AgentCard:
        """Every failure reads the same (closed port, open port that is not HTTP, HTTP that is not A2A,
        timeout), and all but a timeout are retried alike, so they take about as long: the requester learns
        whether an A2A agent answered there, and nothing else. The operator's log keeps the detail."""
        resolver = A2ACardResolver(http, agent_url)
        unreachable = f"{UNREACHABLE} at {agent_url}: no A2A agent card was served there"
        card_url = f"{resolver.base_url}/{resolver.agent_card_path}"
        detail = None
        for attempt in range(self.limits.connect_retries + 1):
            if attempt:
                await asyncio.sleep(self.limits.retry_backoff_s * 2 ** (attempt - 1))
            try:
                async with asyncio.timeout(self.limits.card_timeout_s):
                    card = await resolver.get_agent_card(
                        http_kwargs={"timeout": self.limits.card_timeout_s, "headers": headers}
                    )
                if not any(i.protocol_binding in _USED_BINDINGS for i in card.supported_interfaces):
                    # The SDK takes any JSON object for a card; one without a usable endpoint is none.
                    raise NotACard("it names no JSON-RPC or HTTP+JSON endpoint (supportedInterfaces)")
                return card
            except Exception as exc:
                refused = egress_refusal_in(exc)
                if refused is not None:
                    raise AgentEgressError(str(refused)) from None
                detail = why_unreached(exc, card_url, timeout_s=self.limits.card_timeout_s)
                log.info("agent card at %s not read: %s (%s)", agent_url, detail, _describe(exc))
                if isinstance(exc, TimeoutError):
                    break
        raise AgentUnreachableError(unreachable, detail)

    def _check_endpoints(self, card: AgentCard) -> None:
        """Every endpoint the card offers for the bindings this client uses must pass the policy as a URL
        (the addresses behind it are checked again at each connection)."""
        for interface in card.supported_interfaces:
            if interface.protocol_binding not in _USED_BINDINGS:
                continue  # never connected to
            reason = self.policy.url_refusal(interface.url)
            if reason is not None:
                shown = interface.url if len(interface.url) <= 200 else interface.url[:200] + "…"
                raise AgentEgressError(f"the agent card advertises the endpoint {shown!r}, refused: {reason}")

    @asynccontextmanager
    async def conversation(
        self, agent_url: str, *, turn_timeout_s: float, headers: AgentHeaders | None = None
    ) -> AsyncIterator[Conversation]:
        """A fresh A2A context (one per trial) on one of the pooled clients."""
        cached = await self._cached_card(agent_url, headers)
        card = cached.card
        slot = self._acquire_slot()
        try:
            try:
                client = cached.client_for(slot)
            except ValueError as exc:
                raise AgentProtocolError(f"the agent card offers no usable transport: {exc}") from exc
            conversation = Conversation(
                client=client,
                card=card,
                turn_timeout_s=turn_timeout_s,
                limits=self.limits,
                call_context=ClientCallContext(service_parameters=dict(headers)) if headers else None,
                detailed_errors=_same_origin_endpoints(agent_url, card),
                history_length=cached.history_length,
            )
            try:
                yield conversation
            finally:
                slot.transport.forget(conversation.context_id)  # its connection serves no other trial
        finally:
            slot.active -= 1

    async def aclose(self) -> None:
        for fetching in list(self._fetching.values()):
            fetching.cancel()
        self._cards.clear()
        for slot in self._slots:
            await slot.http.aclose()
        self._slots.clear()
        if self._card_http is not None:
            await self._card_http.aclose()
            self._card_http = None


@dataclass
class Conversation:
    """One trial's exchange with the white agent: one context id, continuing input-required tasks."""

    client: Client
    card: AgentCard
    turn_timeout_s: float
    limits: ClientLimits
    call_context: ClientCallContext | None = field(default=None, repr=False)
    """Carries the assessment's agent headers with every request."""
    detailed_errors: bool = True
    """False when the card's endpoints are on another origin than the agent URL: failures there read
    "could not reach the agent" whatever happened, so a card cannot turn the service into a port scanner."""
    context_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    metadata: dict[str, Any] = field(default_factory=dict)
    """Sent with every message (the trial seed, for agents that want reproducible LLM calls)."""
    history_length: int = 0
    """Asked for with every message and poll: the answer only, not the task's history (which repeats our own
    messages and only grows). `history_length_for` the card's protocol version."""
    _open_task_id: str | None = None
    _read_artifacts: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Per task and artifact id: how many of its parts were read in earlier turns, and their digest."""

    async def send(self, parts: list[Part]) -> AgentReply:
        """Send one message and wait for the answer; raises `AgentError` on any failure.

        The caller should hand over `parts` without keeping them (`send(compose())`): the request built here
        holds a copy, and `parts` is dropped before the answer is awaited, so a waiting trial holds its
        message once (plus what the SDK keeps of it), not three times.
        """
        request = SendMessageRequest(
            message=Message(
                role=Role.ROLE_USER,
                parts=parts,
                message_id=str(uuid.uuid4()),
                context_id=self.context_id,
                task_id=self._open_task_id,
                metadata=self.metadata or None,
            ),
            configuration=SendMessageConfiguration(history_length=self.history_length),
        )
        del parts
        try:
            async with asyncio.timeout(self.turn_timeout_s):
                reply = await self._exchange(request)
        except (TimeoutError, A2AClientTimeoutError, httpx.TimeoutException) as exc:
            raise AgentTimeoutError(f"no reply within the turn timeout of {self.turn_timeout_s:g}s") from exc
        except AgentError:
            raise
        except Exception as exc:  # translate whatever the SDK or httpx raised; the trial records the reason
            refused = egress_refusal_in(exc)
            if refused is not None:
                raise AgentEgressError(str(refused)) from None
            if not self.detailed_errors:
                log.info("agent endpoint failed: %s", _describe(exc))
                # As long as the retries of a closed port take, so the time does not tell either.
                await asyncio.sleep(self.limits.retry_schedule_s)
                raise AgentUnreachableError(ENDPOINT_UNREACHABLE) from None
            raise AgentProtocolError(_describe(exc)) from exc
        if not reply.text.strip() and not reply.data:
            raise AgentProtocolError("the agent's answer was empty (no text and no data)")
        return reply

    async def _exchange(self, request: SendMessageRequest) -> AgentReply:
        # The same request object is re-sent: the SDK holds it during the call anyway, so keeping it for a
        # retry costs no extra copy.
        last: Exception | None = None
        for attempt in range(self.limits.connect_retries + 1):
            if attempt:
                await asyncio.sleep(self.limits.retry_backoff_s * 2 ** (attempt - 1))
            try:
                return await self._send_once(request)
            except (A2AError, httpx.HTTPError) as exc:
                if not _never_delivered(exc):
                    raise
                last = exc
        log.info("agent endpoint not reached: %s", _describe(last))
        used = [i.url for i in self.card.supported_interfaces if i.protocol_binding in _USED_BINDINGS]
        detail = None
        if last is not None and used:
            detail = why_unreached(last, used[0], timeout_s=self.limits.connect_timeout_s)
        raise AgentUnreachableError(ENDPOINT_UNREACHABLE, detail)

    async def _send_once(self, request: SendMessageRequest) -> AgentReply:
        message: Message | None = None
        fold = _TaskFold()
        streams = self.card.capabilities.streaming
        with expecting(Trial(self.context_id, request.message.task_id or None, limits=self.limits.wire)):
            async for event in self.client.send_message(request, context=self.call_context):
                if event.HasField("message"):
                    message = event.message
                else:
                    fold.add(event)
                if streams:  # the SDK parses each event when it is asked for the next: one callback each
                    await asyncio.sleep(0)
        await asyncio.sleep(0)  # turning the parts into Python values is the next callback (loop rule)
        if message is not None:
            self._open_task_id = None
            return _reply(message.parts, message)
        if fold.task is not None:
            return await self._reply_from_task(fold.task)
        if fold.empty:
            raise AgentProtocolError("the agent sent no response")
        raise AgentProtocolError("the agent's response held neither a message nor a task")

    async def _reply_from_task(self, task: Task) -> AgentReply:
        while task.status.state in _PENDING_STATES:
            if not task.id:
                raise AgentProtocolError("the agent's task is still working and names no id to ask it by")
            await asyncio.sleep(self.limits.poll_interval_s)
            with expecting(Trial(self.context_id, task.id, polls_task=True, limits=self.limits.wire)):
                task = await self.client.get_task(
                    GetTaskRequest(id=task.id, history_length=self.history_length), context=self.call_context
                )
        state = task.status.state
        status_message = task.status.message if task.status.HasField("message") else None
        if state in _FAILED_STATES:
            self._open_task_id = None
            detail = " ".join(get_text_parts(status_message.parts)).strip() if status_message else ""
            raise AgentProtocolError(
                f"the agent's task ended in state {_FAILED_STATES[state]}" + (f": {detail}" if detail else "")
            )
        self._open_task_id = task.id if state == TaskState.TASK_STATE_INPUT_REQUIRED else None
        texts: list[str] = []
        data: list[Any] = []
        for artifact in task.artifacts:
            parts = self._unread_parts(task.id, artifact)
            texts.append("".join(get_text_parts(parts)))  # one artifact's parts are one text (its chunks)
            data.extend(get_data_parts(parts))
        text = "\n".join(t for t in texts if t)
        if text or data:
            return _reply_text(text, data, status_message)
        if status_message is not None:
            return _reply(status_message.parts, status_message)
        return _reply_text("", [], None)

    def _unread_parts(self, task_id: str, artifact: Artifact) -> list[Part]:
        """The parts of `artifact` this conversation has not read yet: a continued task carries the artifacts
        of its earlier turns, and an artifact may grow by appended chunks from one turn to the next."""
        key = f"{task_id}/{artifact.artifact_id}"
        parts = list(artifact.parts)
        read, digest = self._read_artifacts.get(key, (0, 0))
        if read >= len(parts):
            return []  # read in an earlier turn (a replacement of the same length is not told apart)
        if read and _digest(parts[:read]) != digest:
            read = 0  # replaced, not appended to: read it whole
        self._read_artifacts[key] = (len(parts), _digest(parts))
        return parts[read:]


@dataclass
class _TaskFold:
    """A stream's events folded into the task they describe, as the server's own task store folds them:
    a task event is the task so far, a status update replaces its status, an artifact update adds an artifact
    or replaces it (or, with `append`, adds its parts to the one of the same id: how streaming SDKs send one
    answer in chunks)."""

    task: Task | None = None
    empty: bool = True

    def add(self, event: StreamResponse) -> None:
        self.empty = False
        if event.HasField("task"):
            self.task = event.task
            return
        if event.HasField("status_update"):
            update = event.status_update
            self._task_of(update.task_id, update.context_id).status.CopyFrom(update.status)
        elif event.HasField("artifact_update"):
            added = event.artifact_update
            task = self._task_of(added.task_id, added.context_id)
            for artifact in task.artifacts:
                if artifact.artifact_id == added.artifact.artifact_id:
                    if added.append:
                        artifact.parts.extend(added.artifact.parts)
                    else:
                        artifact.CopyFrom(added.artifact)
                    return
            task.artifacts.append(added.artifact)

    def _task_of(self, task_id: str, context_id: str) -> Task:
        if self.task is None:
            self.task = Task(id=task_id, context_id=context_id)
        return self.task


def _digest(parts: list[Part]) -> int:
    return hash(tuple(p.SerializeToString(deterministic=True) for p in parts))


def _reply(parts: Any, message: Message | None) -> AgentReply:
    """A message's reply: its text parts are separate lines, its data parts payloads."""
    return _reply_text("\n".join(t for t in get_text_parts(parts) if t), get_data_parts(parts), message)


def _reply_text(text: str, data: list[Any], message: Message | None) -> AgentReply:
    metadata = (
        MessageToDict(message.metadata) if message is not None and message.HasField("metadata") else None
    )
    return AgentReply(text=text, data=tuple(data), metadata=metadata)


def history_length_for(card: AgentCard) -> int:
    """The smallest task history the agent's protocol version honours: A2A 1.x reads 0 as none; a2a-sdk 0.3
    and @a2a-js/sdk 0.3 read 0 as "no limit" (they echo the whole conversation), 1 as the last message. The
    interface is the one the SDK's client factory picks: the card's first with a binding we use, at the best
    protocol version the card offers for that binding."""
    for interface in card.supported_interfaces:
        if interface.protocol_binding in _USED_BINDINGS:
            best = ClientFactory._find_best_interface(
                list(card.supported_interfaces), protocol_bindings=[interface.protocol_binding]
            )
            return 1 if best is not None and is_legacy_version(best.protocol_version) else 0
    return 0


def _same_origin_endpoints(agent_url: str, card: AgentCard) -> bool:
    def origin(url: str) -> tuple[str, str, int]:
        parts = urlsplit(url)
        default_port = 443 if parts.scheme == "https" else 80
        return parts.scheme, (parts.hostname or "").lower(), parts.port or default_port

    used = [i.url for i in card.supported_interfaces if i.protocol_binding in _USED_BINDINGS]
    return all(origin(url) == origin(agent_url) for url in used)


def _never_delivered(exc: BaseException | None) -> bool:
    """True only when the request provably never reached the server (connection refused or not opened)."""
    while exc is not None:
        if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
            return True
        exc = exc.__cause__
    return False


def _describe(exc: BaseException | None) -> str:
    """One line, at most 500 characters: what failed, and for a field the SDK refused, which and why."""
    if exc is None:
        return "unknown error"
    if isinstance(exc, pydantic.ValidationError):  # the 0.3 parsers: one error per union branch and line
        return _invalid_field(exc)
    text = str(exc).strip() or type(exc).__name__
    cause = exc.__cause__
    if cause is not None and str(cause).strip() and str(cause) not in text:
        text = f"{text} ({type(cause).__name__}: {cause})"
    text = " ".join(text.split())
    return text if len(text) <= 500 else text[:500] + "…"


def _invalid_field(exc: pydantic.ValidationError) -> str:
    errors = exc.errors(include_url=False)
    first = errors[0]
    where = ".".join(str(step) for step in first["loc"]) or "(the object itself)"
    got = repr(first.get("input"))
    got = got if len(got) <= 60 else got[:60] + "…"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"the agent's {exc.title} has an invalid field {where}: {first['msg']}, got {got}{more}"
