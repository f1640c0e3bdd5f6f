"""A retry runs under the rights of whoever asks for it, at the time they ask, not those of whoever created
the assessment (issue 37), on SQLite and PostgreSQL. In one tenant, a key that may not assess agents on
private networks used to retry (and so run) an assessment of a loopback agent that a key allowed to had
created; an admin whose tenant may run one trial per assessment retried one of two."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from api.db.engine import create_engine
from api.db.keys import KeyRepository
from api.security.auth import UI_SESSION_COOKIE
from tests.api.servers import poll, serve_green

TWO_TASKS = {"tasks": {"task_ids": ["0", "1"]}}


@dataclass(frozen=True)
class Keys:
    private: str  # tenant a, may assess agents on private networks
    public: str  # tenant a, may not
    admin: str  # tenant ops, admin, private networks allowed, one trial per assessment at most


@pytest.fixture
async def green(database_url: str) -> AsyncIterator[tuple[str, Keys]]:
    async with serve_green(database_url, tenant_quotas={"ops": {"trials_per_assessment": 1}}) as url:
        engine = create_engine(database_url)
        try:
            keys = KeyRepository(engine)
            _, private = await keys.create("a", admin=False, allow_private_agents=True)
            _, public = await keys.create("a", admin=False, allow_private_agents=False)
            _, admin = await keys.create("ops", admin=True, allow_private_agents=True)
        finally:
            await engine.dispose()
        yield url, Keys(private=private, public=public, admin=admin)


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def finished(http: httpx.AsyncClient, path: str) -> dict[str, Any]:
    return await poll(http, path, lambda body: body["status"] in ("completed", "failed", "cancelled"))


async def test_a_retry_is_refused_by_the_callers_egress_rule_and_quota(green: tuple[str, Keys]) -> None:
    url, keys = green
    async with httpx.AsyncClient(base_url=url, timeout=30, headers=bearer(keys.private)) as http:
        created = await http.post("/assessments", json={"agent_url": "http://127.0.0.1:9", **TWO_TASKS})
        assert created.status_code == 202, created.text
        path = f"/assessments/{created.json()['id']}"
        assert (await finished(http, path))["status"] == "failed"  # nobody at :9: both trials never ran

        refused = await http.post(f"{path}/retry", headers=bearer(keys.public))
        assert refused.status_code == 422, refused.text
        (error,) = refused.json()["detail"]
        assert "agent_url is refused" in error["msg"] and "private" in error["msg"], error
        # The web UI's button takes the same path, with the key from the UI's cookie.
        async with httpx.AsyncClient(base_url=url, timeout=30) as browser:
            browser.cookies.set(UI_SESSION_COOKIE, keys.public)
            token = re.search(r'name="csrf_token" value="([^"]+)"', (await browser.get(f"/ui{path}")).text)
            assert token is not None
            from_ui = await browser.post(
                f"/ui{path}/retry", data={"csrf_token": token.group(1)}, headers={"Origin": url.rstrip("/")}
            )
            assert from_ui.status_code == 422 and "agent_url is refused" in from_ui.text, from_ui.status_code
        too_large = await http.post(f"{path}/retry", headers=bearer(keys.admin))
        assert too_large.status_code == 422, too_large.text
        assert "at most 1 are allowed per assessment" in too_large.json()["detail"][0]["msg"]
        unchanged = (await http.get(path)).json()
        assert unchanged["status"] == "failed" and [a["number"] for a in unchanged["attempts"]] == [1]

        allowed = await http.post(f"{path}/retry")  # its creator may, and does
        assert allowed.status_code == 202, allowed.text
        assert [a["number"] for a in (await finished(http, path))["attempts"]] == [1, 2]


async def test_a_retry_runs_under_the_callers_egress_rule(green: tuple[str, Keys], idle_url: str) -> None:
    """A host name is judged where it resolves, when the trials connect: the retry of an assessment of
    `localhost` by a key that may not reach loopback is accepted, and its run is refused there; retried by a
    key that may, it runs again."""
    url, keys = green
    agent = idle_url.replace("127.0.0.1", "localhost")
    async with httpx.AsyncClient(base_url=url, timeout=30, headers=bearer(keys.private)) as http:
        created = await http.post("/assessments", json={"agent_url": agent, **TWO_TASKS})
        assert created.status_code == 202, created.text
        path = f"/assessments/{created.json()['id']}"
        await poll(http, path, lambda body: body["status"] == "running")
        assert (await http.post(f"{path}/cancel")).status_code == 200

        by_public = await http.post(f"{path}/retry", headers=bearer(keys.public))
        assert by_public.status_code == 202, by_public.text
        failed = await finished(http, path)
        assert failed["status"] == "failed" and failed["attempts"][-1]["status"] == "failed", failed
        assert "may not connect to localhost" in failed["error"], failed["error"]
        assert "may not reach private networks" in failed["error"], failed["error"]

        by_private = await http.post(f"{path}/retry")
        assert by_private.status_code == 202, by_private.text
        running = await poll(http, path, lambda body: body["status"] == "running")
        assert running["error"] is None and running["attempt"] == 3
        assert (await http.post(f"{path}/cancel")).status_code == 200
