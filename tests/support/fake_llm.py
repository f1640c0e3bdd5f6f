"""A deterministic OpenAI-compatible chat-completions server, for tests: no model behind it.

It answers `POST /v1/chat/completions` with whatever a test's `responder` returns for the request body, and
records every request, so tests can check what the engine sent (roles, seed, temperature, prompts).
Served for real over loopback HTTP by `serve_fake_llm`.

With `context_bytes` set it fakes a context window too: a request whose messages hold more than that many
bytes of content is refused before the responder is asked, the way OpenAI refuses an over-long prompt (HTTP
400, error code `context_length_exceeded`). Bytes stand in for tokens; the fake has no tokenizer.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from green_agent.reference_agents import serve_app


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


Responder = Callable[[dict[str, Any]], FakeReply]


@dataclass
class FakeLLM:
    responder: Responder
    context_bytes: int | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)
    base_url: str = ""
    api_key: str | None = None
    """When set, every request without `Authorization: Bearer <api_key>` is refused with HTTP 401."""

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
        return JSONResponse(
            {"object": "list", "data": [{"id": "fake", "object": "model", "owned_by": "tests"}]}
        )

    async def handle(self, request: Request) -> Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        body = json.loads(await request.body())
        self.requests.append(body)
        size = prompt_bytes(body)
        if self.context_bytes is not None and size > self.context_bytes:
            return JSONResponse(_context_length_exceeded(self.context_bytes, size), 400)
        reply = self.responder(body)
        if reply.delay_s:
            await asyncio.sleep(reply.delay_s)
        if reply.status != 200:
            error = reply.error or {"message": "fake failure", "type": "server_error"}
            return JSONResponse({"error": error}, reply.status)
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.refusal is not None:
            message["refusal"] = reply.refusal
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.get("id", f"call_{len(self.requests)}_{i}"),
                    "type": "function",
                    "function": {"name": call["name"], "arguments": json.dumps(call.get("arguments", {}))},
                }
                for i, call in enumerate(reply.tool_calls)
            ]
        return JSONResponse(
            {
                "id": f"chatcmpl-{len(self.requests)}",
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
    responder: Responder, *, context_bytes: int | None = None, api_key: str | None = None
) -> AsyncIterator[FakeLLM]:
    """Serve `responder` as an OpenAI-compatible endpoint on loopback; `fake.base_url` ends in `/v1`."""
    fake = FakeLLM(responder, context_bytes, api_key=api_key)

    def app_for(url: str) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/chat/completions", fake.handle, methods=["POST"]),
                Route("/v1/models", fake.models, methods=["GET"]),
            ]
        )

    async with serve_app(app_for) as url:
        fake.base_url = url.rstrip("/") + "/v1"
        yield fake


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
