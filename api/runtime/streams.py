"""Bounds on server-sent-event streams, whichever route opens them: REST progress (/assessments/{id}/events),
the web UI's live progress (/ui/live) and A2A streaming (message/stream, tasks/subscribe).

A stream holds a connection, a subscription and its buffer for as long as the reader wants, so:

* **How many**: at most `max_streams_per_tenant` open streams per tenant and `max_streams_total` in the
  process; one more is answered `429` with `Retry-After` before any event is sent.
* **How slow**: a reader that does not take an event within `stream_send_timeout_s` (its socket buffers are
  full: it stopped reading) is dropped; it reconnects and starts again from the stored state, as after a
  `lagged` event. Without this a stalled reader would hold its slot, and its subscription's full buffer, until
  the operating system gave up on the connection.
* **How long a key lasts**: a stream opened with an API key checks that key again at the first event sent
  after every `stream_key_recheck_s` (pings included, so at least every 15 s) and ends once it is revoked:
  a revoked key stops working for streams opened before `keys revoke` too.

`StreamGuard` is an ASGI middleware between authentication (it needs the tenant) and the routes; it sees a
stream by its `text/event-stream` response, so every route is covered, the A2A SDK's included.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from dataclasses import dataclass, field

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.db.keys import KeyRepository
from api.security.auth import PrincipalUser
from api.settings import default_of

logger = logging.getLogger(__name__)


class TooManyStreams(Exception):
    """The tenant's or the process's stream limit is reached."""


@dataclass
class StreamLimits:
    """Open streams per tenant and in total, in this process."""

    per_tenant: int
    total: int
    open_by_tenant: dict[str, int] = field(default_factory=dict)

    @property
    def open(self) -> int:
        return sum(self.open_by_tenant.values())

    def check(self, tenant: str) -> None:
        """Raise TooManyStreams when `tenant` may not open one more stream now."""
        held = self.open_by_tenant.get(tenant, 0)
        if held >= self.per_tenant:
            raise TooManyStreams(
                f"tenant {tenant!r} already has {held} event streams open (limit {self.per_tenant}, "
                "GREEN_AGENT_MAX_STREAMS_PER_TENANT); close one or retry later"
            )
        if self.open >= self.total:
            raise TooManyStreams(
                f"the service has {self.total} event streams open (limit, GREEN_AGENT_MAX_STREAMS_TOTAL); "
                "retry later"
            )

    def acquire(self, tenant: str) -> None:
        self.check(tenant)
        self.open_by_tenant[tenant] = self.open_by_tenant.get(tenant, 0) + 1

    def release(self, tenant: str) -> None:
        held = self.open_by_tenant.get(tenant, 0) - 1
        if held > 0:
            self.open_by_tenant[tenant] = held
        else:
            self.open_by_tenant.pop(tenant, None)  # no entry kept per tenant that has none open


class _Refused(Exception):
    """Raised into the route's response once the 429 is sent, so it stops and unsubscribes."""


class _Stalled(Exception):
    """The reader took no event within the send timeout."""


class _Revoked(Exception):
    """The stream's API key was revoked while it was open."""


def _is_event_stream(message: Message) -> bool:
    return any(
        name.lower() == b"content-type" and value.split(b";")[0].strip().lower() == b"text/event-stream"
        for name, value in message.get("headers", [])
    )


def _asks_for_a_stream(scope: Scope) -> bool:
    return any(
        name.lower() == b"accept" and b"text/event-stream" in value.lower()
        for name, value in scope["headers"]
    )


def _principal(scope: Scope) -> tuple[str, str | None]:
    """(tenant, API key id) of the request; ("", None) when it has no principal."""
    user = scope.get("user")
    if isinstance(user, PrincipalUser):
        return user.principal.tenant, user.principal.key_id
    return "", None


class StreamGuard:
    def __init__(
        self,
        app: ASGIApp,
        *,
        limits: StreamLimits,
        send_timeout_s: float,
        retry_after_s: int,
        keys: KeyRepository | None = None,
        key_recheck_s: float = default_of("stream_key_recheck_s"),
    ) -> None:
        self.app = app
        self.limits = limits
        self.send_timeout_s = send_timeout_s
        self.retry_after_s = retry_after_s
        self.keys = keys
        self.key_recheck_s = key_recheck_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        tenant, key_id = _principal(scope)
        if _asks_for_a_stream(scope):
            # Refused before the route runs: an A2A streaming request must not start an assessment that its
            # requester is then told was refused. (A client that asks for a stream without saying so is
            # still refused when the stream starts, below.)
            try:
                self.limits.check(tenant)
            except TooManyStreams as exc:
                await self._too_many(send, str(exc))
                return
        state = {"streaming": False, "refused": False}
        checked_at = time.monotonic()

        async def guarded_send(message: Message) -> None:
            nonlocal checked_at
            if message["type"] == "http.response.start" and _is_event_stream(message):
                try:
                    self.limits.acquire(tenant)
                except TooManyStreams as exc:
                    state["refused"] = True
                    await self._too_many(send, str(exc))
                    raise _Refused from None
                state["streaming"] = True
            if state["refused"]:
                raise _Refused
            if state["streaming"] and message["type"] == "http.response.body":
                if (
                    key_id is not None
                    and self.keys is not None
                    and time.monotonic() - checked_at >= self.key_recheck_s
                ):
                    checked_at = time.monotonic()
                    try:
                        active = await self.keys.is_active(key_id)
                    except Exception as exc:  # the key table cannot be read: never stream on unchecked
                        logger.warning("could not recheck a stream's API key (%s)", type(exc).__name__)
                        active = False
                    if not active:
                        raise _Revoked
                try:
                    async with asyncio.timeout(self.send_timeout_s):
                        await send(message)
                except TimeoutError:
                    raise _Stalled from None
                return
            await send(message)

        try:
            await self.app(scope, receive, guarded_send)
        except* _Refused:
            pass
        except* _Stalled:
            logger.info("dropped an event stream of tenant %r: its reader stopped reading", tenant)
        except* _Revoked:
            logger.info("ended an event stream of tenant %r: its API key was revoked", tenant)
            with contextlib.suppress(Exception):  # end it cleanly; a reader that does not read is cut off
                async with asyncio.timeout(self.send_timeout_s):
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            if state["streaming"]:
                self.limits.release(tenant)

    async def _too_many(self, send: Send, detail: str) -> None:
        body = json.dumps({"detail": detail}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 429,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"retry-after", str(self.retry_after_s).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
