"""Request hardening in front of every route: body size, strict JSON, short error bodies.

`RequestGuard` (pure ASGI, so streaming responses pass untouched) reads a request body up to
`max_request_bytes` and answers 413 past it, before anything parses it (a Content-Length over the limit is
refused without reading a byte). A JSON body must then pass `api.web.strict_json`: finite numbers, 64-bit
integers, no NUL or lone surrogates in any string, nesting within `max_request_json_depth`; otherwise 422 on
the REST routes, or a JSON-RPC parse error on the A2A JSON-RPC endpoint. A NUL, control, format or bidi
character in the path or query (as decoded) is a 422: path and query parameters are quoted back in errors and
pages, and may be logged.

`validation_error_handler` replaces FastAPI's 422 body, which echoes the whole input (a 20 MB body came back
as 20 MB): at most `MAX_ERRORS` errors, each quoting at most a short preview of the input.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import unquote_plus

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.web import strict_json
from api.web.a2a.card import JSONRPC_PATH
from api.web.strict_json import preview
from green_agent.core.one_line import unshowable_reason

MAX_ERRORS = 20
MAX_MESSAGE_CHARS = 500
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_FORM_TYPES = (b"multipart/", b"application/x-www-form-urlencoded")
_PARSE_IN_THREAD_BYTES = 64 * 1024


class BodyTooLarge(Exception):
    pass


def short(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters in all)"


def _json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(body, status_code=status, headers=headers)


def unprocessable_body(location: list[str | int], message: str) -> dict[str, Any]:
    """A 422 body shaped like FastAPI's validation errors."""
    return {"detail": [{"loc": location, "msg": short(message), "type": "value_error"}]}


class RequestGuard:
    def __init__(self, app: ASGIApp, *, max_body_bytes: int, max_json_depth: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.max_json_depth = max_json_depth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = _path_or_query_refusal(scope)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        if scope["method"] not in _BODY_METHODS:
            await self.app(scope, receive, send)
            return
        try:
            body, more_body = await self._read_body(scope, receive)
        except BodyTooLarge:
            # No `Connection: close`: closing with unread bytes makes the kernel reset the connection, and the
            # client may lose this answer. uvicorn discards the rest of the body instead (bounded by its
            # keep-alive timeout), and the client reads the 413 when it is done sending.
            response = _json_response(
                413, {"detail": f"the request body is larger than {self.max_body_bytes} bytes; send less"}
            )
            await response(scope, receive, send)
            return
        rejection = await self._check_json(scope, body)
        if rejection is not None:
            await rejection(scope, receive, send)
            return
        await self.app(scope, self._replay(body, more_body, receive), send)

    async def _read_body(self, scope: Scope, receive: Receive) -> tuple[bytes, bool]:
        headers = dict(scope["headers"])
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            raise BodyTooLarge
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away; let the app see it
                return b"".join(chunks), False
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                raise BodyTooLarge
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks), False

    @staticmethod
    def _replay(body: bytes, more_body: bool, receive: Receive) -> Receive:
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": more_body}
            return await receive()

        return replay

    async def _check_json(self, scope: Scope, body: bytes) -> JSONResponse | None:
        content_type = dict(scope["headers"]).get(b"content-type", b"").lower()
        if not body or content_type.startswith(_FORM_TYPES):
            return None
        # Every body the service reads is JSON, whatever its declared type (the A2A SDK parses any).
        try:
            if len(body) > _PARSE_IN_THREAD_BYTES:  # a large body takes long enough to hold up other requests
                await asyncio.to_thread(strict_json.loads, body, max_depth=self.max_json_depth)
            else:
                strict_json.loads(body, max_depth=self.max_json_depth)
        except strict_json.UnsafeJSON as exc:
            if scope["path"] == JSONRPC_PATH:
                return _json_response(
                    200,
                    {
                        "jsonrpc": "2.0",
                        "id": None,
                        "error": {"code": -32700, "message": short(f"Parse error: {exc}")},
                    },
                )
            return _json_response(422, unprocessable_body(["body"], str(exc)))
        return None


def _path_or_query_refusal(scope: Scope) -> JSONResponse | None:
    """A 422 for a path or query (as the routes will decode them) holding a NUL, control, format or bidi
    character, else None. Every path and query parameter (ids, task ids, filters) is checked by this one
    rule, before any route runs."""
    if "\x00" in scope["path"] or b"%00" in scope.get("query_string", b""):
        where = "path" if "\x00" in scope["path"] else "query"
        return _json_response(422, unprocessable_body([where], "contains a NUL character (%00); remove it"))
    query = scope.get("query_string", b"").decode("latin-1")
    for where, text in (("path", scope["path"]), ("query", unquote_plus(query) if "%" in query else query)):
        reason = unshowable_reason(text)
        if reason is not None:
            return _json_response(422, unprocessable_body([where], reason))
    return None


def _short_error(error: dict[str, Any]) -> dict[str, Any]:
    item: dict[str, Any] = {
        "loc": [p if isinstance(p, int) else short(str(p), 100) for p in list(error.get("loc", ()))[:10]],
        "msg": short(str(error.get("msg", ""))),
        "type": error.get("type", "value_error"),
    }
    if "input" in error:
        item["input"] = _quoted(error["input"])
    return item


def _quoted(value: Any) -> Any:
    """Small JSON-safe inputs as they are; anything else as a short repr."""
    text = preview(value)
    if text.endswith((" characters)", " items)")):  # cut short
        return text
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return text
    return value


async def validation_error_handler(request: Request, exc: Exception) -> JSONResponse:
    """FastAPI's 422, with at most MAX_ERRORS errors and short previews of the input instead of all of it."""
    assert isinstance(exc, RequestValidationError)
    errors = list(exc.errors())
    detail = [_short_error(e) for e in errors[:MAX_ERRORS]]
    if len(errors) > MAX_ERRORS:
        detail.append(
            {
                "loc": ["body"],
                "msg": f"{len(errors) - MAX_ERRORS} more errors not shown; fix the ones above first",
                "type": "value_error",
            }
        )
    return JSONResponse({"detail": detail}, status_code=422)
