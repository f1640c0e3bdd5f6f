"""One retrying chat-completions wrapper over `openai.AsyncOpenAI`, shared by the user simulator, the judge
and the `llm` reference agent.

Why our own retry loop instead of the client's (whose own retries are off, `max_retries=0`, so that none
doubles ours or hides a 429's headers from us): the client does not retry a reply that is empty, and we want
one place that decides what is transient (connection, timeout, 408/409/429/5xx, empty reply) and what is a
configuration mistake (401, 403, 404, other 400s) that no retry will fix.

Every request first takes a turn at its endpoint's gate (`llm_gate.py`), which holds it back while the
provider is rate limiting or down. What the provider says "not now" to costs time only, never a retry: a 429
(or a 5xx with Retry-After) waits as long as the provider said, and never less than the backoff; a
connection error, timeout or 5xx while the endpoint is down (its breaker open) waits for the endpoint to
answer again. Only failures of an endpoint that answers use up the `RetryPolicy`; then, or when the gate
gives up after the operator's outage tolerance (`LLMOutage`), `LLMError` is raised.

Two kinds of failure depend on what the conversation says, and so may have been provoked by the white agent
(docs/scoring.md, "Who pays for a failure of our LLMs"); each raises its own `LLMError` subclass so that the
trial can charge it:

* `LLMContextTooLong`: a 400 saying the conversation is longer than the model's context;
* `LLMRefusedConversation`: the provider's content policy refused the request (a 400 with code
  `content_policy_violation`, `content_filter` or `invalid_prompt`, or a message saying so; never retried),
  or the model's reply stayed unusable on every attempt: cut by the provider's content filter
  (`finish_reason` `content_filter`), a refusal (`message.refusal`), or empty. Its `cause` names which.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import logging
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from green_agent.config import LLMEndpoint
from green_agent.core.errors import LLMContextTooLong, LLMError, LLMRefusedConversation
from green_agent.core.usage import TokenUsage
from green_agent.llm.gate import EndpointGate, EndpointLimits, GatePolicy, endpoint_label, provider_wait

if TYPE_CHECKING:
    # The openai package costs ~18 MiB of RSS and ~0.3 s to import, and a process needs it only once it talks
    # to an LLM (a model-played customer, the judge, the `llm` reference agent): each function that uses it
    # imports it, so the service, its workers and scripted-user runs never load it (tests/engine/test_llm.py).
    import openai
    from openai import AsyncOpenAI

log = logging.getLogger(__name__)

_TRANSIENT_STATUS = frozenset({408, 409, 425, 429})
_CONTEXT_TOO_LONG = re.compile(
    r"context[ _]length|context window|context size|too many tokens|prompt is too long", re.IGNORECASE
)
"""How OpenAI-compatible servers word a 400 for an over-long prompt when they send no `code` (vLLM, llama.cpp,
LiteLLM in front of other vendors). Only ever read on a 400."""
_POLICY_CODES = frozenset({"content_policy_violation", "content_filter", "invalid_prompt"})
_POLICY_WORDS = re.compile(
    r"content[ _]?(management )?polic|content[ _]filter|usage polic|safety system|flagged as", re.IGNORECASE
)
"""How a 400 says the provider's content policy refused the prompt: OpenAI's and Azure's codes, and the words
of gateways that send no code (LiteLLM, vLLM guardrails). Only ever read on a 400."""


@dataclass(frozen=True)
class LLMToolCall:
    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class LLMReply:
    content: str | None
    tool_calls: tuple[LLMToolCall, ...] = ()
    usage: TokenUsage = field(default_factory=TokenUsage)
    finish_reason: str | None = None
    refusal: str | None = None
    """The model's refusal text, when the endpoint sends one (OpenAI's `message.refusal`)."""


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 3
    backoff_s: float = 1.0
    """First wait; doubled after each failed attempt."""
    max_backoff_s: float = 30.0

    def delay(self, attempt: int) -> float:
        return float(min(self.max_backoff_s, self.backoff_s * (2**attempt)))


@dataclass(frozen=True)
class LLMCall:
    """One request to an LLM endpoint, as the service's metrics count it."""

    model: str
    seconds: float
    outcome: str  # "ok", "error", "rate_limited" (a 429) or "empty"
    prompt_tokens: int = 0
    completion_tokens: int = 0


# Called after every LLM request (the API's metrics register here); the engine itself keeps no counters.
observers: list[Callable[[LLMCall], None]] = []


def _observe(call: LLMCall) -> None:
    for observer in observers:
        observer(call)


COMPLETION_TOKENS_GUESS = 512
"""Reply tokens a request is assumed to spend against `tokens_per_minute` when its arguments set no
`max_tokens` / `max_completion_tokens` (the answer's reported usage corrects the guess)."""


def open_client(endpoint: LLMEndpoint, timeout_s: float) -> AsyncOpenAI:
    """An OpenAI client for the endpoint's base URL and key, with its own retries off (ours decide)."""
    # Local OpenAI-compatible servers need no key, but the client insists on one.
    api_key = endpoint.api_key or os.environ.get("OPENAI_API_KEY") or "not-needed"
    from openai import AsyncOpenAI  # lazily: see the TYPE_CHECKING import above

    return AsyncOpenAI(api_key=api_key, base_url=endpoint.base_url, timeout=timeout_s, max_retries=0)


def endpoint_limits(endpoint: LLMEndpoint) -> EndpointLimits:
    return EndpointLimits(endpoint.max_in_flight, endpoint.requests_per_minute, endpoint.tokens_per_minute)


@dataclass
class ChatLLM:
    """Chat completions against one endpoint, with retries; create once, share, `aclose()` at the end.

    `gate`: the endpoint's turns, shared by every client of the same endpoint in the process (the engine
    passes its own); default: one of its own, with the endpoint's limits."""

    endpoint: LLMEndpoint
    timeout_s: float = 120.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    gate: EndpointGate | None = None
    client: AsyncOpenAI | None = field(default=None, repr=False)
    """The HTTP client to send with (`open_client`), owned by whoever made it; None: one of its own."""
    _client: AsyncOpenAI = field(init=False, repr=False)
    _owns_client: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        if self.client is not None:
            self._client = self.client
        else:
            self._client, self._owns_client = open_client(self.endpoint, self.timeout_s), True
        if self.gate is None:
            policy = GatePolicy(
                probe_backoff_s=self.retry.backoff_s, max_probe_backoff_s=self.retry.max_backoff_s
            )
            label = endpoint_label(self.endpoint.model, self.endpoint.base_url)
            self.gate = EndpointGate(label, endpoint_limits(self.endpoint), policy)

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.close()

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        seed: int | None = None,
        temperature: float | None = 0.0,
        tools: list[dict[str, Any]] | None = None,
        require_text: bool = True,
        response_format: dict[str, Any] | None = None,
    ) -> LLMReply:
        """One completion; transient failures and empty replies are retried, then raise `LLMError`.
        `response_format` (e.g. a `json_schema` one) asks the endpoint to constrain the reply's shape."""
        import openai  # lazily: see the TYPE_CHECKING import above

        kwargs: dict[str, Any] = {"model": self.endpoint.model, "messages": messages}
        if response_format is not None:
            kwargs["response_format"] = response_format
        if temperature is not None:
            kwargs["temperature"] = temperature
        if seed is not None:
            kwargs["seed"] = seed
        if tools:
            kwargs["tools"] = tools
            kwargs["tool_choice"] = "auto"
        kwargs.update(self.endpoint.extra_args)
        # extra_args may remove a parameter (e.g. temperature for reasoning models) by setting it to None
        kwargs = {k: v for k, v in kwargs.items() if v is not None}

        gate = self.gate
        assert gate is not None
        tokens = _estimated_tokens(kwargs) if gate.counts_tokens else 0
        last_problem = ""
        refused = ""  # the cause, when the last attempt failed for what its reply held
        usage = TokenUsage()
        failures = 0  # attempts that used the retry budget
        rate_limited = 0  # 429s in a row of this call: each waits at least the next backoff
        rate_limited_wait = 0.0  # this call's backoff past the endpoint's pause, before its next attempt
        for attempt in itertools.count():
            if rate_limited_wait:
                await asyncio.sleep(rate_limited_wait)
                rate_limited_wait = 0.0
            refused = ""
            down = False  # the attempt got no answer (connection, timeout, 5xx)
            # Raises LLMOutage once the endpoint has been unavailable past the operator's tolerance.
            async with gate.request(tokens, first=attempt == 0) as turn:
                try:
                    completion = await self._create(kwargs)
                except openai.APIStatusError as exc:
                    last_problem = f"HTTP {exc.status_code}: {_short(exc.message)}"
                    wait = provider_wait(exc.response.headers) if exc.response is not None else None
                    if exc.status_code == 429 or (exc.status_code >= 500 and wait is not None):
                        # The endpoint pauses for what the provider said; this call waits at least its
                        # own backoff, which grows with its 429s in a row, without holding the others.
                        backoff = self.retry.delay(rate_limited)
                        turn.rate_limited(wait if wait is not None else backoff)
                        rate_limited_wait = backoff if wait is not None and backoff > wait else 0.0
                        rate_limited += 1
                        continue  # no retry spent: the gate holds the next turn until the wait is over
                    rate_limited = 0
                    if exc.status_code >= 500:
                        turn.failed(last_problem)
                        down = True
                    else:
                        turn.answered()
                        if _context_too_long(exc):
                            raise LLMContextTooLong(self._failed(last_problem)) from None
                        if _content_policy(exc):  # decided on the prompt alone: refused again
                            raise LLMRefusedConversation(
                                self._failed(last_problem), "content_policy"
                            ) from None
                        if exc.status_code not in _TRANSIENT_STATUS:
                            break  # a configuration mistake (bad model, key, request): no retry helps
                except openai.APIConnectionError as exc:  # also timeouts: no answer
                    last_problem = f"{type(exc).__name__}: {_short(str(exc))}"
                    turn.failed(last_problem)
                    down, rate_limited = True, 0
                except openai.OpenAIError as exc:  # an answer we could not read
                    last_problem = f"{type(exc).__name__}: {_short(str(exc))}"
                    turn.answered()
                    rate_limited = 0
                else:
                    rate_limited = 0
                    reply_usage = _usage(completion)
                    turn.answered(reply_usage.prompt_tokens + reply_usage.completion_tokens or None)
                    usage = usage + reply_usage
                    reply = _to_reply(completion)
                    if reply is None:
                        last_problem = "the endpoint's response held no choices"
                    elif require_text and (refused := _unusable(reply)):
                        last_problem = _UNUSABLE[refused]
                    else:
                        return dataclasses.replace(reply, usage=usage)
            if down and gate.down:
                continue  # the endpoint is down: wait at the gate for it to answer, without spending a retry
            if failures >= self.retry.max_retries:
                break
            await asyncio.sleep(self.retry.delay(failures))
            failures += 1
        if refused:
            raise LLMRefusedConversation(self._failed(last_problem), refused)
        raise LLMError(self._failed(last_problem))

    async def _create(self, kwargs: dict[str, Any]) -> Any:
        import openai

        began = time.monotonic()
        try:
            completion = await self._client.chat.completions.create(**kwargs)
        except openai.OpenAIError as exc:
            outcome = "rate_limited" if isinstance(exc, openai.RateLimitError) else "error"
            _observe(LLMCall(self.endpoint.model, time.monotonic() - began, outcome))
            raise
        usage = getattr(completion, "usage", None)
        _observe(
            LLMCall(
                self.endpoint.model,
                time.monotonic() - began,
                "ok" if getattr(completion, "choices", None) else "empty",
                getattr(usage, "prompt_tokens", 0) or 0,
                getattr(usage, "completion_tokens", 0) or 0,
            )
        )
        return completion

    async def check(self, timeout_s: float) -> str | None:
        """One request that needs the endpoint and its key but costs no tokens (the model list): None when
        the endpoint answers, else what is wrong and what to do about it. An endpoint without a model list
        (HTTP 404 and the like) answered, so it passes: only no answer, or a refused key, fails.

        No answer from an endpoint that has answered before in this process is an outage, not a mistake in
        the settings: it passes, and the assessment's trials wait for the endpoint at its gate (up to the
        operator's outage tolerance), as the trials of a running assessment do."""
        import openai

        where = self.endpoint.base_url or "the OpenAI default URL"
        name = f"LLM {self.endpoint.model!r} at {where}"
        gate = self.gate
        assert gate is not None
        try:
            await self._client.with_options(timeout=timeout_s).models.list()
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            return (
                f"{name} refused the API key (HTTP {exc.status_code}); set OPENAI_API_KEY or the model's "
                "api_key in GREEN_AGENT_USER_MODELS / GREEN_AGENT_JUDGE_MODEL"
            )
        except openai.APIStatusError:
            gate.answered_once = True
            return None
        except (openai.APIConnectionError, openai.APITimeoutError) as exc:
            cause = exc.__cause__ or exc
            problem = _short(str(cause) or type(cause).__name__, 120)
            if gate.answered_once:
                log.warning("%s does not answer (%s) but did before: trials wait for it", name, problem)
                return None
            return (
                f"{name} is unreachable ({problem}); check that it runs and the base_url (OPENAI_BASE_URL, "
                "or the model's base_url)"
            )
        gate.answered_once = True
        return None

    def _failed(self, problem: str) -> str:
        where = self.endpoint.base_url or "the OpenAI default URL"
        return f"LLM {self.endpoint.model!r} at {where} failed: {problem}"


def _context_too_long(exc: openai.APIStatusError) -> bool:
    """A 400 saying the prompt exceeds the model's context (OpenAI's `code` is `context_length_exceeded`)."""
    if exc.status_code != 400:
        return False
    return getattr(exc, "code", None) == "context_length_exceeded" or bool(
        _CONTEXT_TOO_LONG.search(exc.message)
    )


_UNUSABLE = {
    "content_filter": "the provider's content filter cut the reply (finish_reason content_filter)",
    "refusal": "the model refused to answer",
    "empty_reply": "the model returned an empty reply",
}


def _unusable(reply: LLMReply) -> str:
    """Why a reply that must hold text cannot be used (a key of `_UNUSABLE`), or "" when it can."""
    if reply.finish_reason == "content_filter":
        return "content_filter"
    if (reply.content or "").strip() or reply.tool_calls:
        return ""
    return "refusal" if reply.refusal else "empty_reply"


def _content_policy(exc: openai.APIStatusError) -> bool:
    """A 400 saying the provider's content policy refused the prompt."""
    if exc.status_code != 400:
        return False
    return getattr(exc, "code", None) in _POLICY_CODES or bool(_POLICY_WORDS.search(exc.message))


def _to_reply(completion: Any) -> LLMReply | None:
    choices = getattr(completion, "choices", None)
    if not choices:
        return None
    message = choices[0].message
    calls = []
    for call in message.tool_calls or ():
        function = getattr(call, "function", None)
        if function is None:
            continue
        try:
            arguments = json.loads(function.arguments or "{}")
        except json.JSONDecodeError:
            arguments = {"__unparsed__": function.arguments}
        calls.append(
            LLMToolCall(
                id=call.id, name=function.name, arguments=arguments if isinstance(arguments, dict) else {}
            )
        )
    refusal = getattr(message, "refusal", None)
    return LLMReply(
        content=message.content,
        tool_calls=tuple(calls),
        finish_reason=getattr(choices[0], "finish_reason", None),
        refusal=refusal if isinstance(refusal, str) and refusal else None,
    )


def _usage(completion: Any) -> TokenUsage:
    """The response's `usage`, if the endpoint sent one; missing or malformed counts are 0."""
    usage = getattr(completion, "usage", None)

    def count(name: str) -> int:
        value = getattr(usage, name, None)
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0

    return TokenUsage(1, count("prompt_tokens"), count("completion_tokens"))


def _estimated_tokens(kwargs: dict[str, Any]) -> int:
    """What a request will spend of `tokens_per_minute`, before it is sent: its prompt at four bytes a token
    (messages and tools as JSON) plus the reply's cap, or `COMPLETION_TOKENS_GUESS`."""
    prompt = len(json.dumps(kwargs.get("messages", []), ensure_ascii=False)) // 4
    if "tools" in kwargs:
        prompt += len(json.dumps(kwargs["tools"])) // 4
    cap = kwargs.get("max_completion_tokens") or kwargs.get("max_tokens")
    return prompt + (cap if isinstance(cap, int) and cap > 0 else COMPLETION_TOKENS_GUESS)


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + "…"
