"""The web UI's session cookie counts on the UI's own pages only (issue 37), on SQLite and PostgreSQL.

The A2A SDK mounts its REST binding under any first path segment (`/{tenant}/a2a/...`), so
`/ui/a2a/message:send` is an A2A route that lives under /ui, where the cookie used to be honoured: with only
the cookie and an `A2A-Version` header it created an assessment. Each door is tried here with the cookie alone
(refused, nothing created) and with the same key as a Bearer header (the route is there and answers): REST,
A2A JSON-RPC 1.x and 0.3, the A2A REST binding 1.x and 0.3, and the catch-all under /ui."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from api.db.engine import create_engine
from api.db.keys import KeyRepository
from api.security.auth import UI_SESSION_COOKIE
from tests.api.servers import serve_green

# The agent is on loopback and the key may not reach private networks: a request that gets through is
# refused by the egress rule (a 422, a rejected task) and no assessment runs either way.
REQUEST = json.dumps(
    {
        "participants": {"agent": "http://127.0.0.1:9"},
        "config": {"domain": "retail", "task_ids": ["0"], "user_llm": "scripted"},
    }
)
V1 = {"A2A-Version": "1.0"}


def message_v1() -> dict[str, Any]:
    return {"role": "ROLE_USER", "messageId": uuid.uuid4().hex, "parts": [{"text": REQUEST}]}


def message_v03() -> dict[str, Any]:
    return {
        "kind": "message",
        "role": "user",
        "messageId": uuid.uuid4().hex,
        "parts": [{"kind": "text", "text": REQUEST}],
    }


def message_v03_rest() -> dict[str, Any]:
    """A 0.3 message in the HTTP+JSON binding (the 0.3 protobuf's JSON: parts are `content`)."""
    return {"role": "ROLE_USER", "messageId": uuid.uuid4().hex, "content": [{"text": REQUEST}]}


def jsonrpc(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}


# (name, method, path, headers, body): one per door, the catch-all under /ui twice (a message, a listing).
DOORS: list[tuple[str, str, str, dict[str, str], Any]] = [
    ("REST list", "GET", "/assessments", {}, None),
    (
        "REST create",
        "POST",
        "/assessments",
        {},
        {"agent_url": "http://127.0.0.1:9", "tasks": {"task_ids": ["0"]}},
    ),
    ("JSON-RPC 1.x", "POST", "/", V1, jsonrpc("SendMessage", {"message": message_v1()})),
    ("JSON-RPC 0.3", "POST", "/", {}, jsonrpc("message/send", {"message": message_v03()})),
    ("A2A REST 1.x", "POST", "/a2a/message:send", V1, {"message": message_v1()}),
    ("A2A REST 0.3", "POST", "/a2a/v1/message:send", {}, {"message": message_v03_rest()}),
    ("catch-all send", "POST", "/ui/a2a/message:send", V1, {"message": message_v1()}),
    ("catch-all list", "GET", "/ui/a2a/tasks", V1, None),
]


@pytest.fixture
async def green(database_url: str) -> AsyncIterator[tuple[str, str]]:
    """A service in keys mode and one key of tenant a (no private agents)."""
    async with serve_green(database_url) as url:
        engine = create_engine(database_url)
        try:
            _, key = await KeyRepository(engine).create("a", admin=False, allow_private_agents=False)
        finally:
            await engine.dispose()
        yield url, key


@pytest.mark.parametrize(("name", "method", "path", "headers", "body"), DOORS, ids=[d[0] for d in DOORS])
async def test_the_cookie_is_no_credential_on_rest_or_a2a(
    green: tuple[str, str], name: str, method: str, path: str, headers: dict[str, str], body: Any
) -> None:
    url, key = green
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        # The cookie works where it should: the UI's pages.
        assert (await http.get("/ui", headers={"Cookie": f"{UI_SESSION_COOKIE}={key}"})).status_code == 200

        with_cookie = await http.request(
            method, path, json=body, headers={**headers, "Cookie": f"{UI_SESSION_COOKIE}={key}"}
        )
        if method == "GET" and path.startswith("/ui/"):  # a browser is sent to the login form
            assert with_cookie.status_code == 303, (name, with_cookie.text)
            assert with_cookie.headers["location"].startswith("/ui/login?next=")
        else:
            assert with_cookie.status_code == 401, (name, with_cookie.text)
            assert with_cookie.headers["WWW-Authenticate"].startswith("Bearer")

        # The same key as a header: the route is there and answers (the request itself is refused: a
        # private agent), so the 401 above was the cookie's, not a missing route's.
        with_bearer = await http.request(
            method, path, json=body, headers={**headers, "Authorization": f"Bearer {key}"}
        )
        assert with_bearer.status_code in (200, 422), (name, with_bearer.status_code, with_bearer.text)
        if with_bearer.status_code == 200 and method == "POST":
            assert "refused" in with_bearer.text, with_bearer.text  # a rejected task saying why

        listed = await http.get("/assessments", headers={"Authorization": f"Bearer {key}"})
        assert listed.json()["count"] == 0
