"""What the A2A JSON-RPC endpoint sends, with the `Result` artifact's counts as integers.

An A2A DataPart is a protobuf Value: every number in it is a double, so the SDK writes `max_score` 5 as `5.0`
(both the 1.x JSON and the 0.3 compatibility layer), and a leaderboard's `score || '/' || max_score` reads
"5.0/5.0" where the official green's rows read "49.0/114". This wraps the SDK's JSON-RPC endpoint: in each
JSON response and each server-sent event that carries an artifact named `Result`, the data parts get their
counts back as integers (`result.whole_counts`); everything else passes as the SDK wrote it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from typing import Any

from sse_starlette.sse import EventSourceResponse
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from api.web.a2a.result import RESULT_ARTIFACT, whole_counts

_MARK = f'"{RESULT_ARTIFACT}"'
MAX_WALK_DEPTH = 16
"""How deep a response is searched for a Result artifact (a task: result.artifacts[i].parts[j])."""


def _fix(value: Any, depth: int = 0) -> Any:
    if depth > MAX_WALK_DEPTH:
        return value
    if isinstance(value, list):
        return [_fix(item, depth + 1) for item in value]
    if not isinstance(value, dict):
        return value
    if value.get("name") == RESULT_ARTIFACT and isinstance(value.get("parts"), list):
        parts = [
            {**part, "data": whole_counts(part["data"])}
            if isinstance(part, dict) and isinstance(part.get("data"), dict)
            else part
            for part in value["parts"]
        ]
        return {**value, "parts": parts}
    return {key: _fix(item, depth + 1) for key, item in value.items()}


def with_whole_counts(text: str) -> str:
    """`text` (one JSON-RPC message) with the Result's counts as integers; unchanged when it has none."""
    if _MARK not in text:
        return text
    try:
        return json.dumps(_fix(json.loads(text)))
    except ValueError:
        return text


def _events(items: AsyncIterable[Any]) -> AsyncIterator[Any]:
    async def fixed() -> AsyncIterator[Any]:
        async for item in items:
            if isinstance(item, dict) and isinstance(item.get("data"), str):
                item = {**item, "data": with_whole_counts(item["data"])}
            yield item

    return fixed()


def whole_counts_route(route: Route) -> Route:
    """`route` (the SDK's JSON-RPC route) answering the same, with the Result's counts as integers."""
    endpoint: Callable[[Request], Awaitable[Response]] = route.endpoint

    async def handle(request: Request) -> Response:
        response = await endpoint(request)
        if isinstance(response, EventSourceResponse):
            response.body_iterator = _events(response.body_iterator)
        elif isinstance(response, JSONResponse) and _MARK.encode() in response.body:
            headers = {k: v for k, v in response.headers.items() if k.lower() not in ("content-length",)}
            fixed = json.loads(with_whole_counts(bytes(response.body).decode()))
            return JSONResponse(fixed, status_code=response.status_code, headers=headers)
        return response

    return Route(route.path, endpoint=handle, methods=sorted(route.methods or ["POST"]), name=route.name)
