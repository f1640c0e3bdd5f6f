"""A deterministic OpenAI-compatible chat-completions server, for tests: no model behind it.

It answers `POST /v1/chat/completions` with whatever a test's `responder` returns for the request body, and
records every request, so tests can check what the engine sent (roles, seed, temperature, prompts).
Served for real over loopback HTTP by `serve_fake_llm`.

With `context_bytes` set it fakes a context window too: a request whose messages hold more than that many
bytes of content is refused before the responder is asked, the way OpenAI refuses an over-long prompt (HTTP
400, error code `context_length_exceeded`). Bytes stand in for tokens; the fake has no tokenizer.

With `rules` (`ProviderRules`) it is a fake *provider* that says no as real ones do: requests per second or
per minute and tokens per minute over sliding windows, an in-flight cap (HTTP 429 beyond each, with the
Retry-After variant the rules name), and an outage window (HTTP 503, or refused connections behind a
`TcpProxy`). It counts what it answered (`answered`, by status) and the most requests it held at once.

`scenario_customer` and `passing_judge` are deterministic stand-ins for a model-played customer and a judge
that serve the oracle agent: the customer names its task (as the scripted customer does) and ends the
conversation after the oracle's closing line; the judge passes every assertion.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import re
import time
from collections import Counter, deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any, Literal

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from green_agent.conversation.user_simulator import SCRIPTED_OPENING
from green_agent.reference_agents import serve_app
from green_agent.reference_agents.oracle import DONE_TEXT
from retail_domain import RetailData
from tests.support.tcp_proxy import TcpProxy


@dataclass(frozen=True)
class FakeReply:
    """One canned answer: text and/or tool calls, or an HTTP error status."""

    content: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    status: int = 200
    prompt_tokens: int = 100
    completion_tokens: int = 20
    """Reported as the response's `usage` (fixed numbers, so tests can check the cost arithmetic)."""
    delay_s: float = 0.0
    """Wait this long before answering (to make the client time out)."""
    finish_reason: str = "stop"
    refusal: str | None = None
    """Sent as `message.refusal` (OpenAI's field for a model that declines to answer)."""
    error: dict[str, Any] | None = None
    """With an error `status`: the `error` object of the body (default: a generic server error)."""
    headers: dict[str, str] | None = None
    """With an error `status`: its response headers (e.g. a 429's Retry-After)."""


Responder = Callable[[dict[str, Any]], FakeReply]

RetryAfterStyle = Literal["seconds", "http-date", "ms", "reset-requests", "reset-tokens", "none"]
"""How a 429 says when to come back: `Retry-After: <seconds>`, `Retry-After: <HTTP date>`,
`retry-after-ms`, OpenAI's `x-ratelimit-reset-requests` or `-tokens` (with the matching `remaining` at 0 and
the other pair as a decoy: a long reset whose `remaining` is not 0), or nothing at all."""


@dataclass(frozen=True)
class ProviderRules:
    """What the fake provider refuses; a limit left None is not enforced."""

    requests_per_second: int | None = None
    """Requests accepted in any one-second window (sliding)."""
    requests_per_minute: int | None = None
    """Requests accepted in any sixty-second window (sliding)."""
    tokens_per_minute: int | None = None
    """Tokens (the replies' reported prompt + completion tokens) accepted in any sixty-second window."""
    max_in_flight: int | None = None
    """Requests held at once (meaningful with `latency_s`)."""
    retry_after: RetryAfterStyle = "seconds"
    retry_after_s: float | None = None
    """What a 429 announces; None: the exact time until the limit that was hit frees (at least 1 ms)."""
    outage_from_s: float | None = None
    """An outage starts this many seconds after the fake started (None: no outage)..."""
    outage_s: float = 0.0
    """... and lasts this long."""
    outage: Literal["503", "refuse"] = "503"
    """During the outage: every request answered HTTP 503 (no Retry-After), or connections refused."""
    latency_s: float = 0.0
    """Time each accepted request takes before its answer."""


def openai_duration(seconds: float) -> str:
    """A duration as OpenAI's x-ratelimit-reset-* headers write it: "20ms", "1s", "1.5s", "6m0s", "1h2m3s"."""
    if seconds < 1:
        return f"{max(1, math.ceil(seconds * 1000))}ms"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{secs:.3f}".rstrip("0").rstrip(".") + "s"
    if minutes or hours:
        text = f"{int(minutes)}m{text}"
    if hours:
        text = f"{int(hours)}h{text}"
    return text


def retry_after_headers(style: RetryAfterStyle, seconds: float) -> dict[str, str]:
    """The headers of a 429 saying "come back in `seconds`", in `style`."""
    if style == "seconds":
        return {"Retry-After": str(max(1, math.ceil(seconds)))}
    if style == "http-date":
        # Whole seconds: round up, so that the date is never before the moment the limit frees.
        when = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=math.ceil(seconds) + 1)
        return {"Retry-After": format_datetime(when, usegmt=True)}
    if style == "ms":
        return {"retry-after-ms": str(max(1, math.ceil(seconds * 1000)))}
    if style == "reset-requests":
        return {
            "x-ratelimit-remaining-requests": "0",
            "x-ratelimit-reset-requests": openai_duration(seconds),
            "x-ratelimit-remaining-tokens": "90000",
            "x-ratelimit-reset-tokens": "6m0s",
        }
    if style == "reset-tokens":
        return {
            "x-ratelimit-remaining-tokens": "0",
            "x-ratelimit-reset-tokens": openai_duration(seconds),
            "x-ratelimit-remaining-requests": "499",
            "x-ratelimit-reset-requests": "6m0s",
        }
    return {}


@dataclass
class _Window:
    """Amounts accepted over the last `span_s` seconds (a sliding window)."""

    span_s: float
    limit: float
    entries: deque[tuple[float, float]] = field(default_factory=deque)
    total: float = 0.0

    def _expire(self, now: float) -> None:
        while self.entries and self.entries[0][0] <= now - self.span_s:
            self.total -= self.entries.popleft()[1]

    def full(self, now: float, amount: float) -> float | None:
        """None when `amount` more fits now, else the seconds until enough of the window has passed."""
        self._expire(now)
        if self.total + amount <= self.limit or not self.entries:
            return None
        freed, wait = self.total, 0.0
        for at, size in self.entries:
            freed -= size
            wait = at + self.span_s - now
            if freed + amount <= self.limit:
                break
        return max(wait, 0.001)

    def add(self, now: float, amount: float) -> None:
        self.entries.append((now, amount))
        self.total += amount


@dataclass
class FakeLLM:
    responder: Responder
    context_bytes: int | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)
    base_url: str = ""
    api_key: str | None = None
    """When set, every request without `Authorization: Bearer <api_key>` is refused with HTTP 401."""
    rules: ProviderRules = field(default_factory=ProviderRules)
    keep_requests: bool = True
    """False: `requests` stays empty (a benchmark's thousand prompts would fill memory)."""
    answered: Counter[int] = field(default_factory=Counter)
    """Chat requests answered, by HTTP status (refused connections are never answered, so not counted)."""
    in_flight: int = 0
    peak_in_flight: int = 0
    started_at: float = field(default_factory=time.monotonic)
    _windows: list[_Window] = field(default_factory=list)
    _tokens: _Window | None = None

    def __post_init__(self) -> None:
        rules = self.rules
        if rules.requests_per_second is not None:
            self._windows.append(_Window(1.0, rules.requests_per_second))
        if rules.requests_per_minute is not None:
            self._windows.append(_Window(60.0, rules.requests_per_minute))
        if rules.tokens_per_minute is not None:
            self._tokens = _Window(60.0, rules.tokens_per_minute)

    @property
    def total_answered(self) -> int:
        return sum(self.answered.values())

    def in_outage(self, now: float | None = None) -> bool:
        rules = self.rules
        if rules.outage_from_s is None:
            return False
        elapsed = (now or time.monotonic()) - self.started_at
        return rules.outage_from_s <= elapsed < rules.outage_from_s + rules.outage_s

    def _too_many(self, reply: FakeReply) -> Response | None:
        """A 429 when a limit of the rules is reached (the request is then not counted against them)."""
        now = time.monotonic()
        waits = [w for window in self._windows if (w := window.full(now, 1)) is not None]
        tokens = reply.prompt_tokens + reply.completion_tokens
        if self._tokens is not None and (w := self._tokens.full(now, tokens)) is not None:
            waits.append(w)
        if self.rules.max_in_flight is not None and self.in_flight >= self.rules.max_in_flight:
            waits.append(self.rules.retry_after_s or 1.0)
        if waits:
            wait = self.rules.retry_after_s if self.rules.retry_after_s is not None else max(waits)
            error = {
                "message": "Rate limit reached (fake provider)",
                "type": "requests",
                "code": "rate_limit",
            }
            return JSONResponse(
                {"error": error}, 429, headers=retry_after_headers(self.rules.retry_after, wait)
            )
        for window in self._windows:
            window.add(now, 1)
        if self._tokens is not None:
            self._tokens.add(now, tokens)
        return None

    def _refused(self, request: Request) -> Response | None:
        if self.api_key is None or request.headers.get("authorization") == f"Bearer {self.api_key}":
            return None
        message = {"message": "Incorrect API key provided", "type": "invalid_request_error"}
        return JSONResponse({"error": {**message, "code": "invalid_api_key"}}, 401)

    async def models(self, request: Request) -> Response:
        """The model list (what the service's endpoint check asks for)."""
        refused = self._refused(request)
        if refused is not None:
            return refused
        if self.in_outage():
            return JSONResponse(
                {"error": {"message": "Service Unavailable (fake outage)", "type": None}}, 503
            )
        return JSONResponse(
            {"object": "list", "data": [{"id": "fake", "object": "model", "owned_by": "tests"}]}
        )

    async def stats(self, request: Request) -> Response:
        """What the fake answered so far (for a benchmark that runs it in another process)."""
        answered = {str(status): count for status, count in sorted(self.answered.items())}
        return JSONResponse({"answered": answered, "peak_in_flight": self.peak_in_flight})

    async def handle(self, request: Request) -> Response:
        response = await self._handle(request)
        self.answered[response.status_code] += 1
        return response

    async def _handle(self, request: Request) -> Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        body = json.loads(await request.body())
        if self.keep_requests:
            self.requests.append(body)
        if self.in_outage():
            return JSONResponse(
                {"error": {"message": "Service Unavailable (fake outage)", "type": None}}, 503
            )
        size = prompt_bytes(body)
        if self.context_bytes is not None and size > self.context_bytes:
            return JSONResponse(_context_length_exceeded(self.context_bytes, size), 400)
        reply = self.responder(body)
        if (too_many := self._too_many(reply)) is not None:
            return too_many
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            if self.rules.latency_s or reply.delay_s:
                await asyncio.sleep(self.rules.latency_s + reply.delay_s)
            return self._respond(body, reply)
        finally:
            self.in_flight -= 1

    def _respond(self, body: dict[str, Any], reply: FakeReply) -> Response:
        if reply.status != 200:
            error = reply.error or {"message": "fake failure", "type": "server_error"}
            return JSONResponse({"error": error}, reply.status, headers=reply.headers)
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.refusal is not None:
            message["refusal"] = reply.refusal
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.get("id", f"call_{self.total_answered}_{i}"),
                    "type": "function",
                    "function": {"name": call["name"], "arguments": json.dumps(call.get("arguments", {}))},
                }
                for i, call in enumerate(reply.tool_calls)
            ]
        return JSONResponse(
            {
                "id": f"chatcmpl-{self.total_answered}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "fake"),
                "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
                "usage": {
                    "prompt_tokens": reply.prompt_tokens,
                    "completion_tokens": reply.completion_tokens,
                    "total_tokens": reply.prompt_tokens + reply.completion_tokens,
                },
            }
        )


@contextlib.asynccontextmanager
async def serve_fake_llm(
    responder: Responder,
    *,
    context_bytes: int | None = None,
    api_key: str | None = None,
    rules: ProviderRules | None = None,
    keep_requests: bool = True,
) -> AsyncIterator[FakeLLM]:
    """Serve `responder` as an OpenAI-compatible endpoint on loopback; `fake.base_url` ends in `/v1`. With
    `rules`, a provider with limits and an outage window (`ProviderRules`); an outage of refused connections
    puts a `TcpProxy` in front, which stops listening for the window."""
    fake = FakeLLM(responder, context_bytes, api_key=api_key, rules=rules or ProviderRules())
    fake.keep_requests = keep_requests

    def app_for(url: str) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/chat/completions", fake.handle, methods=["POST"]),
                Route("/v1/models", fake.models, methods=["GET"]),
                Route("/fake/stats", fake.stats, methods=["GET"]),
            ]
        )

    async with serve_app(app_for) as url, contextlib.AsyncExitStack() as stack:
        fake.started_at = time.monotonic()
        fake.base_url = url.rstrip("/") + "/v1"
        if fake.rules.outage == "refuse" and fake.rules.outage_from_s is not None:
            port = int(url.rstrip("/").rsplit(":", 1)[1])
            proxy = TcpProxy("127.0.0.1", port)
            await proxy.start()
            stack.push_async_callback(proxy.close)
            fake.base_url = f"http://127.0.0.1:{proxy.port}/v1"
            outage = asyncio.create_task(_refuse_for(proxy, fake.rules))
            stack.callback(outage.cancel)
        yield fake


async def _refuse_for(proxy: TcpProxy, rules: ProviderRules) -> None:
    await asyncio.sleep(rules.outage_from_s or 0.0)
    await proxy.refuse()
    await asyncio.sleep(rules.outage_s)
    await proxy.listen_again()


# -- stand-ins for the customer and the judge that serve the oracle agent -----------------------------------


def scenario_customer(data: RetailData) -> Responder:
    """A fake customer-LLM for the oracle agent: it answers the greeting with the scripted customer's opening
    (which names the task: how the oracle knows what to replay, found from the scenario in the system
    prompt), ends the conversation (`###STOP###`) after the oracle's closing line, and asks again after
    anything else."""
    scenarios = {f"<scenario>\n{task.scenario_text()}\n</scenario>": task.id for task in data.tasks.values()}

    def reply(body: dict[str, Any]) -> FakeReply:
        messages = body["messages"]
        if len(messages) == 2:  # the system prompt and the greeting
            system = messages[0]["content"]
            task_id = next(tid for text, tid in scenarios.items() if text in system)
            return FakeReply(SCRIPTED_OPENING.format(domain=data.name, task_id=task_id))
        if DONE_TEXT in str(messages[-1]["content"]):
            return FakeReply("Thanks, that's all. ###STOP###")
        return FakeReply("Sorry, could you say that again?")

    return reply


_OUTCOME_LINE = re.compile(r"^\d+\. ", re.MULTILINE)


def passing_judge(body: dict[str, Any]) -> FakeReply:
    """A fake judge passing every assertion it is asked about (it counts the numbered expected outcomes)."""
    prompt = str(body["messages"][-1]["content"])
    outcomes = prompt.rsplit("Expected outcomes:", 1)[-1]
    count = max(1, len(_OUTCOME_LINE.findall(outcomes)))
    results = [{"index": i, "reasoning": "fine", "metExpectation": True} for i in range(count)]
    return FakeReply(json.dumps({"results": results}))


def customer_or_judge(data: RetailData) -> Responder:
    """`scenario_customer` and `passing_judge` on one endpoint (the judge's requests ask for a
    response_format, the customer's do not)."""
    customer = scenario_customer(data)

    def reply(body: dict[str, Any]) -> FakeReply:
        return passing_judge(body) if "response_format" in body else customer(body)

    return reply


def last_user_text(body: dict[str, Any]) -> str:
    """The content of the last `user` message of a request."""
    for message in reversed(body.get("messages", [])):
        if message.get("role") == "user":
            return str(message.get("content") or "")
    return ""


def prompt_bytes(body: dict[str, Any]) -> int:
    """UTF-8 bytes of the contents of a request's messages (what the fake context window measures)."""
    return sum(len(str(m.get("content") or "").encode()) for m in body.get("messages", []))


CONTENT_POLICY_ERROR = {
    "message": "Invalid prompt: your prompt was flagged as potentially violating our usage policy.",
    "type": "invalid_request_error",
    "param": None,
    "code": "content_policy_violation",
}
"""The error object of a 400 by which OpenAI's content policy refuses a prompt."""
AZURE_CONTENT_FILTER_ERROR = {
    "message": "The response was filtered due to the prompt triggering Azure OpenAI's content management "
    "policy. Please modify your prompt and retry.",
    "type": None,
    "param": "prompt",
    "code": None,
}
"""The same refusal as a gateway words it without a code (the words are Azure's)."""


def _context_length_exceeded(limit: int, size: int) -> dict[str, Any]:
    """The error body OpenAI sends for a prompt over the model's context (bytes in place of tokens)."""
    message = (
        f"This model's maximum context length is {limit} tokens. However, your messages resulted in {size} "
        "tokens. Please reduce the length of the messages."
    )
    return {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }
