"""API keys and tenancy over real HTTP, on SQLite and PostgreSQL: two tenants, an admin, no key and a revoked
key, across the REST routes and the A2A methods (the a2a-sdk client over loopback)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx
import pytest
import sqlalchemy as sa
from a2a.client import Client, ClientConfig, create_client
from a2a.client.errors import A2AClientError
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskState,
)
from a2a.utils.errors import TaskNotFoundError

from api.cli import main as cli_main
from api.db.engine import create_engine
from api.db.keys import KeyRepository, hash_key
from api.security.auth import Principal, open_mode_warning, principal_for_key
from tests.api.servers import a2a_text_request, poll, serve_green


@dataclass
class Keys:
    a: str
    b: str
    admin: str
    revoked: str


@pytest.fixture
async def green(database_url: str) -> AsyncIterator[tuple[str, Keys]]:
    """The service with four keys: tenant a, tenant b, an admin (tenant ops), and a revoked key of a."""
    async with serve_green(database_url) as url:
        engine = create_engine(database_url)
        try:
            keys = KeyRepository(engine)
            _, a = await keys.create("a", admin=False, allow_private_agents=True)
            _, b = await keys.create("b", admin=False, allow_private_agents=True)
            _, admin = await keys.create("ops", admin=True, allow_private_agents=False)
            revoked_key, revoked = await keys.create("a", admin=False, allow_private_agents=True)
            await keys.revoke(revoked_key.id)
            async with engine.connect() as connection:
                stored = (await connection.execute(sa.text("SELECT * FROM api_keys"))).all()
        finally:
            await engine.dispose()
        # Only hashes are stored: no column of any row holds a secret.
        assert all(secret not in str(row) for row in stored for secret in (a, b, admin, revoked))
        assert {row.key_hash for row in stored} == {hash_key(s) for s in (a, b, admin, revoked)}
        yield url, Keys(a=a, b=b, admin=admin, revoked=revoked)


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def a2a_client(url: str, http: httpx.AsyncClient, *, streaming: bool = False) -> Client:
    return await create_client(url, ClientConfig(httpx_client=http, streaming=streaming))


def agentbeats_request(agent_url: str) -> SendMessageRequest:
    text = json.dumps(
        {
            "participants": {"agent": agent_url},
            "config": {"domain": "retail", "num_tasks": 2, "user_llm": "scripted"},
        }
    )
    return a2a_text_request(text, return_immediately=True)


async def test_keys_and_tenancy_matrix_over_rest_and_a2a(green: tuple[str, Keys], idle_url: str) -> None:
    url, keys = green
    body = {"agent_url": idle_url, "tasks": {"num_tasks": 2}}
    async with (
        httpx.AsyncClient(base_url=url, timeout=30) as anonymous,
        httpx.AsyncClient(base_url=url, timeout=30, headers=bearer(keys.a)) as a,
        httpx.AsyncClient(base_url=url, timeout=30, headers=bearer(keys.b)) as b,
        httpx.AsyncClient(base_url=url, timeout=30, headers=bearer(keys.admin)) as admin,
        httpx.AsyncClient(base_url=url, timeout=30, headers=bearer(keys.revoked)) as revoked,
    ):
        # Probes, the card and the docs need no key; everything else does, once a key exists.
        for path in ("/healthz", "/readyz", "/.well-known/agent-card.json", "/openapi.json", "/docs"):
            assert (await anonymous.get(path)).status_code == 200, path
        card = (await anonymous.get("/.well-known/agent-card.json")).json()
        assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "Bearer"
        assert card["securityRequirements"] == [{"schemes": {"bearer": {}}}]
        for client in (anonymous, revoked):
            for method, path in (("GET", "/assessments"), ("POST", "/assessments"), ("POST", "/")):
                response = await client.request(method, path, json=body)
                assert response.status_code == 401, (method, path, response.text)
                assert response.headers["WWW-Authenticate"].startswith("Bearer")
        wrong_scheme = await anonymous.get("/assessments", headers={"Authorization": f"Basic {keys.a}"})
        assert wrong_scheme.status_code == 401
        # Metrics label every tenant's agent hosts: admin keys only.
        assert (await anonymous.get("/metrics")).status_code == 401
        assert (await a.get("/metrics")).status_code == 403
        assert (await admin.get("/metrics")).status_code == 200

        # Tenant a and tenant b each start one over REST, with the same idempotency key: keys are per tenant.
        made_a = await a.post("/assessments", json=body, headers={"Idempotency-Key": "nightly"})
        assert made_a.status_code == 202, made_a.text
        made_b = await b.post(
            "/assessments", json={**body, "trials": 2}, headers={"Idempotency-Key": "nightly"}
        )
        assert made_b.status_code == 202 and "Idempotent-Replayed" not in made_b.headers, made_b.text
        replay = await a.post("/assessments", json=body, headers={"Idempotency-Key": "nightly"})
        assert replay.headers["Idempotent-Replayed"] == "true" and replay.json()["id"] == made_a.json()["id"]
        id_a, id_b = made_a.json()["id"], made_b.json()["id"]
        assert made_a.json()["tenant"] == "a" and made_b.json()["tenant"] == "b"

        # b sees only its own; a's assessment does not exist for b, on every route.
        listed_b = (await b.get("/assessments")).json()
        assert [x["id"] for x in listed_b["data"]] == [id_b] and listed_b["count"] == 1
        for method, path in (
            ("GET", f"/assessments/{id_a}"),
            ("GET", f"/assessments/{id_a}/trials"),
            ("GET", f"/assessments/{id_a}/trials/0/0"),
            ("GET", f"/assessments/{id_a}/events"),
            ("GET", f"/assessments/{id_a}/leaderboard"),
            ("GET", f"/assessments/{id_a}/export"),
            ("GET", f"/assessments/{id_a}/trials.csv"),
            ("POST", f"/assessments/{id_a}/cancel"),
            ("GET", f"/assessments/{id_a}/compare/{id_b}"),
            ("GET", f"/assessments/{id_b}/compare/{id_a}"),
            ("POST", f"/assessments/{id_a}/rerun-failed"),
        ):
            response = await b.request(method, path)
            assert response.status_code == 404, (method, path, response.text)
            assert response.json()["detail"] == f"no assessment with id {id_a}"
        assert (await a.get(f"/assessments/{id_a}")).json()["status"] in ("queued", "running")

        # A key without --allow-private-agents (here the admin's) may not assess an agent on loopback.
        private = await admin.post("/assessments", json=body)
        assert private.status_code == 422 and "agent_url is refused" in private.text, private.text

        # The admin sees both and may cancel a's.
        listed_admin = (await admin.get("/assessments")).json()
        assert {x["id"] for x in listed_admin["data"]} == {id_a, id_b}
        assert (await admin.get(f"/assessments/{id_b}")).status_code == 200
        assert (await admin.post(f"/assessments/{id_a}/cancel")).json()["status"] == "cancelled"
        assert (await a.get(f"/assessments/{id_a}")).json()["status"] == "cancelled"

    # A2A: the same rules through the SDK client.
    async with (
        httpx.AsyncClient(timeout=30) as anonymous_http,
        httpx.AsyncClient(timeout=30, headers=bearer(keys.a)) as a_http,
        httpx.AsyncClient(timeout=30, headers=bearer(keys.b)) as b_http,
        httpx.AsyncClient(timeout=30, headers=bearer(keys.admin)) as admin_http,
        httpx.AsyncClient(timeout=30, headers=bearer(keys.revoked)) as revoked_http,
    ):
        for http in (anonymous_http, revoked_http):
            refused = await a2a_client(url, http)  # the card is public
            with pytest.raises(A2AClientError):
                [r async for r in refused.send_message(agentbeats_request(idle_url))]

        a_client, b_client, admin_client = [await a2a_client(url, h) for h in (a_http, b_http, admin_http)]
        (first_a,) = [r async for r in a_client.send_message(agentbeats_request(idle_url))]
        (first_b,) = [r async for r in b_client.send_message(agentbeats_request(idle_url))]
        task_a, task_b = first_a.task.id, first_b.task.id

        assert (await a_client.get_task(GetTaskRequest(id=task_a))).id == task_a
        with pytest.raises(TaskNotFoundError):
            await b_client.get_task(GetTaskRequest(id=task_a))
        with pytest.raises(TaskNotFoundError):
            await b_client.cancel_task(CancelTaskRequest(id=task_a))
        with pytest.raises(TaskNotFoundError):
            b_streaming = await a2a_client(url, b_http, streaming=True)
            [r async for r in b_streaming.subscribe(SubscribeToTaskRequest(id=task_a))]
        listed_b_tasks = await b_client.list_tasks(ListTasksRequest())
        assert [t.id for t in listed_b_tasks.tasks] == [task_b]

        listed_admin_tasks = await admin_client.list_tasks(ListTasksRequest())
        assert {task_a, task_b} <= {t.id for t in listed_admin_tasks.tasks}
        assert (await admin_client.get_task(GetTaskRequest(id=task_b))).id == task_b

        # The assessments behind the tasks carry the tenants; the admin cancels b's over A2A and b's task
        # stays b's (b can still read it).
        rest = (await admin_http.get(url + "assessments", params={"limit": 10})).json()
        by_task = {x["a2a_task_id"]: x for x in rest["data"] if x["a2a_task_id"]}
        assert by_task[task_a]["tenant"] == "a" and by_task[task_b]["tenant"] == "b"
        cancelled = await admin_client.cancel_task(CancelTaskRequest(id=task_b))
        assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
        assert (
            await b_client.get_task(GetTaskRequest(id=task_b))
        ).status.state == TaskState.TASK_STATE_CANCELED
        with pytest.raises(TaskNotFoundError):
            await a_client.get_task(GetTaskRequest(id=task_b))
        await a_client.cancel_task(CancelTaskRequest(id=task_a))
        assert (await admin_http.post(f"{url}assessments/{id_b}/cancel")).status_code == 200
        await poll(admin_http, url + "assessments?status=running", lambda page: page["count"] == 0, 10)


async def test_open_mode_without_keys(database_url: str, idle_url: str) -> None:
    """No key at all: requests need none and act as tenant "default" with admin rights."""
    async with serve_green(database_url) as url, httpx.AsyncClient(base_url=url, timeout=30) as http:
        made = await http.post("/assessments", json={"agent_url": idle_url, "tasks": {"num_tasks": 1}})
        assert made.status_code == 202 and made.json()["tenant"] == "default"
        assert (await http.post(f"/assessments/{made.json()['id']}/cancel")).status_code == 200
        # A stray header in open mode is ignored: no key could match it.
        assert (await http.get("/assessments", headers=bearer("ga_not-a-key"))).status_code == 200


def test_open_mode_warning_names_non_loopback_binds() -> None:
    for host in ("127.0.0.1", "::1", "[::1]", "localhost", "127.8.9.10"):
        assert open_mode_warning(host) is None, host
    for host in ("0.0.0.0", "::", "10.1.2.3", "green.example"):
        warning = open_mode_warning(host)
        assert warning is not None and "OPEN MODE" in warning and "keys create" in warning


async def test_serve_warns_in_open_mode_on_a_public_bind(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    # The socket is loopback (tests never listen elsewhere); `host` is what the operator asked for.
    with caplog.at_level(logging.WARNING, logger="api.web.app"):
        async with serve_green(database_url, host="0.0.0.0"):
            pass
    assert any("OPEN MODE on 0.0.0.0" in r.getMessage() for r in caplog.records)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="api.web.app"):
        async with serve_green(database_url, host="127.0.0.1"):
            pass
    assert not any("OPEN MODE" in r.getMessage() for r in caplog.records)


async def test_keys_cli_shows_the_secret_once_and_revokes(
    database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    async def keys(*args: str) -> tuple[int, str]:
        # The command's own entry point, in a thread (it runs its own event loop).
        code = await asyncio.to_thread(cli_main, ["keys", *args, "--database-url", database_url])
        captured = capsys.readouterr()
        return code, captured.out + captured.err

    code = await asyncio.to_thread(
        cli_main,
        ["keys", "create", "--tenant", "acme", "--allow-private-agents", "--database-url", database_url],
    )
    captured = capsys.readouterr()
    created = captured.err
    assert code == 0, created
    # The key alone on stdout (`ACME_KEY=$(green-agent keys create ...)`, as the README does), the rest on
    # stderr.
    secret = captured.out.removesuffix("\n")
    assert secret.startswith("ga_") and len(secret) >= 40 and "\n" not in secret and secret not in created
    key_id = created.split("created key ")[1].split()[0]
    assert "for tenant acme (allow-private-agents)" in created

    code, listed = await keys("list")
    assert code == 0 and key_id in listed and "acme" in listed and secret not in listed
    assert listed.splitlines()[1].split()[-1] == "-"  # not revoked

    engine = create_engine(database_url)
    try:
        principal = await principal_for_key(KeyRepository(engine), secret)
        assert principal == Principal(tenant="acme", admin=False, allow_private_agents=True, key_id=key_id)
        code, revoked = await keys("revoke", key_id)
        assert code == 0 and f"key {key_id} of tenant acme is revoked" in revoked
        assert await principal_for_key(KeyRepository(engine), secret) is None
    finally:
        await engine.dispose()
    code, listed = await keys("list")
    assert listed.splitlines()[1].split()[-1] != "-"

    code, unknown = await keys("revoke", "nope")
    assert code == 1 and "no key with id 'nope'" in unknown
    code, bad = await keys("create", "--tenant", "a b")
    assert code == 2 and "not valid" in bad
