"""The web UI acts (issue 36): start an assessment from the form, cancel it, retry it, rerun what failed and
compare, in Debian's Chromium; the same actions refused as REST refuses them (another tenant's assessment, a
finished one), and refused outright when the form does not come from the service's own page.

Two services: one in open mode (the local single user) with the oracle, a slow oracle and a flaky oracle to
assess, and one with API keys (tenants a and b, an admin, and a tenant whose key may not reach private
networks)."""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Browser, Page, expect
from starlette.applications import Starlette
from starlette.responses import HTMLResponse
from starlette.routing import Route

from api.db.engine import create_engine
from api.db.keys import KeyRepository
from api.security.auth import UI_SESSION_COOKIE
from api.web.ui.access import CSRF_COOKIE
from green_agent.domains import domain_names
from green_agent.reference_agents import serve_app, serve_reference_agent
from retail_domain import RetailData
from tests.api.servers import poll, serve_green
from tests.support.agents import FlakyOracle, serve_executor
from tests.ui.conftest import PHONE, Tab, no_sideways_scroll, run_assessment

SLOW_TASKS = ["0", "1", "5", "6", "7", "8"]
"""Scored on the DB alone (no judge here); six trials of the slow oracle, one at a time, take seconds."""
FLAKY_TASKS = ["0", "1", "5", "6"]


@dataclass(frozen=True)
class OpenService:
    url: str
    oracle_url: str
    slow_url: str
    flaky_url: str


@pytest.fixture(scope="module")
async def green(tmp_path_factory: pytest.TempPathFactory, ui_data: RetailData) -> AsyncIterator[OpenService]:
    database_url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('ui-actions') / 'green_agent.db'}"
    async with (
        serve_reference_agent("oracle", data=ui_data) as oracle_url,
        serve_reference_agent("oracle", data=ui_data, delay_s=0.2) as slow_url,
        serve_executor(FlakyOracle(ui_data, failure_rate=0.5, salt="ui-actions")) as flaky_url,
        serve_green(database_url) as url,
    ):
        yield OpenService(url, oracle_url, slow_url, flaky_url)


@pytest.fixture
async def page(browser: Browser, green: OpenService) -> AsyncIterator[Page]:
    context = await browser.new_context(base_url=green.url, viewport={"width": 1280, "height": 900})
    page = await context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(f"page error: {error}"))
    # Refusals (403, 404, 409, 422) are answers these tests expect; any other console error is not.
    expected = re.compile(r"status of (403|404|409|422)")
    page.on(
        "console",
        lambda m: errors.append(m.text) if m.type == "error" and not expected.search(m.text) else None,
    )
    try:
        yield page
        assert errors == []
    finally:
        await context.close()


def assessment_id_of(page: Page) -> str:
    match = re.search(r"/ui/assessments/([0-9a-f-]{36})$", page.url)
    assert match, page.url
    return match.group(1)


async def fill_form(
    page: Page, agent_url: str, task_ids: str, *, trials: int = 1, concurrency: int = 4
) -> None:
    await page.goto("/ui")
    await page.locator("#new-assessment-link").click()
    await expect(page).to_have_url(re.compile("/ui/assessments/new$"))
    await page.locator("#agent_url").fill(agent_url)
    await page.locator("#task_ids").fill(task_ids)
    await page.locator("#trials").fill(str(trials))
    await page.locator("#concurrency").fill(str(concurrency))


async def test_start_the_oracle_from_the_form_and_watch_it_complete(page: Page, green: OpenService) -> None:
    await fill_form(page, green.oracle_url, "0, 1 5", trials=2)
    await expect(page.locator("#domain option")).to_have_text(list(domain_names()))
    await expect(page.locator("#user_model")).to_have_value("scripted")
    await expect(page.locator("#judge")).to_contain_text("none configured")
    await page.get_by_role("button", name="Start assessment").click()

    await expect(page).to_have_url(re.compile(r"/ui/assessments/[0-9a-f-]{36}$"))
    assessment_id = assessment_id_of(page)
    await expect(page.locator(f'[data-status-for="{assessment_id}"]')).to_have_text(
        "completed", timeout=60_000
    )
    await expect(page.locator("#avg-reward")).to_contain_text("1.000")
    async with httpx.AsyncClient(base_url=green.url, timeout=30) as client:
        stored = (await client.get(f"/assessments/{assessment_id}")).json()
    assert stored["source"] == "ui" and stored["attempts"][0]["source"] == "ui"
    assert stored["config"]["tasks"]["task_ids"] == ["0", "1", "5"] and stored["config"]["trials"] == 2
    assert stored["report"]["trials_scored"] == 6
    # Solved everything in every trial: nothing to retry or rerun, and nothing running to cancel.
    for action in ("#cancel-form", "#retry-hint", "#rerun-form"):
        assert await page.locator(action).count() == 0, action


async def test_a_bad_url_is_refused_next_to_the_field(page: Page, green: OpenService) -> None:
    async with httpx.AsyncClient(base_url=green.url, timeout=30) as client:
        before = (await client.get("/assessments")).json()["count"]
    for url, reason in (
        ("ftp://agent.example.com", "only http:// or https:// URLs are accepted"),
        ("http://me:secret@agent.example.com", "user name or password"),
        ("http://169.254.169.254/", "agent_url is refused"),  # the metadata address: never, for anyone
    ):
        await fill_form(page, url, "0")
        async with page.expect_response(re.compile("/ui/assessments/new$")) as answer:
            await page.get_by_role("button", name="Start assessment").click()
        assert (await answer.value).status == 422
        error = page.locator("#agent_url-error")
        await expect(error).to_contain_text(reason)
        await expect(page.locator("#agent_url")).to_have_value(url)  # kept, to correct it
        await expect(page.locator("#agent_url")).to_have_attribute("aria-invalid", "true")
        await expect(page.locator("#task_ids")).to_have_value("0")
    # Problems of other fields are shown next to theirs.
    await fill_form(page, green.oracle_url, "0 no-such-task", trials=99)
    await page.get_by_role("button", name="Start assessment").click()
    await expect(page.locator("#trials-error")).to_contain_text("less than or equal to 32")
    await page.locator("#trials").fill("1")
    await page.get_by_role("button", name="Start assessment").click()
    await expect(page.locator("#tasks-error")).to_contain_text("unknown task ids ['no-such-task']")
    async with httpx.AsyncClient(base_url=green.url, timeout=30) as client:
        assert (await client.get("/assessments")).json()["count"] == before  # nothing was started


async def test_cancel_a_slow_run_then_retry_it_to_completion(page: Page, green: OpenService) -> None:
    await fill_form(page, green.slow_url, " ".join(SLOW_TASKS), concurrency=1)
    await page.get_by_role("button", name="Start assessment").click()
    await expect(page).to_have_url(re.compile(r"/ui/assessments/[0-9a-f-]{36}$"))
    assessment_id = assessment_id_of(page)
    live = page.locator(f'[data-progress-for="{assessment_id}"] .count')
    await expect(live).to_have_text(re.compile(r"^[1-5]/6$"), timeout=30_000)  # moved live, not finished

    await page.get_by_role("button", name="Cancel").click()
    await expect(page).to_have_url(re.compile(f"/ui/assessments/{assessment_id}$"))
    await expect(page.locator(f'[data-status-for="{assessment_id}"]')).to_have_text("cancelled")
    assert await page.locator("#cancel-form").count() == 0
    # Before it runs, Retry says what it will run and judge.
    plan = page.locator("#retry-plan")
    await expect(plan).to_contain_text(re.compile(r"run again: [1-5] never run"))
    await expect(plan).to_contain_text("judged by no judge")

    await page.get_by_role("button", name="Retry").click()
    await expect(page).to_have_url(re.compile(f"/ui/assessments/{assessment_id}$"))
    await expect(page.locator(f'[data-status-for="{assessment_id}"]')).to_have_text(
        "completed", timeout=60_000
    )
    await expect(page.locator("#avg-reward")).to_contain_text("1.000")
    rows = page.locator("#attempts tbody tr")
    await expect(rows).to_have_count(2)
    await expect(rows.nth(0)).to_contain_text("cancelled")
    await expect(rows.nth(1)).to_contain_text("never run")
    await expect(rows.nth(1)).to_contain_text("ui")
    assert await page.locator("#retry-hint").count() == 0  # nothing left to retry


async def test_rerun_the_failed_tasks_of_a_flaky_agent_and_compare(page: Page, green: OpenService) -> None:
    async with httpx.AsyncClient(base_url=green.url, timeout=30) as client:
        source = await run_assessment(
            client, {"agent_url": green.flaky_url, "tasks": {"task_ids": FLAKY_TASKS}, "trials": 2}
        )
        rewards = (await client.get(f"/assessments/{source}")).json()["report"]["task_rewards"]
    failed = [task for task in FLAKY_TASKS if rewards[task] < 1]
    assert 0 < len(failed) < len(FLAKY_TASKS)  # flaky: some tasks failed in some trials

    await page.goto(f"/ui/assessments/{source}")
    form = page.locator("#rerun-form")
    await expect(form).to_contain_text(f"of the {len(failed)} task")
    await expect(form.locator(".task-list")).to_have_text(", ".join(failed))
    await form.get_by_role("button", name="Rerun failed tasks").click()

    await expect(page).to_have_url(re.compile(r"/ui/assessments/[0-9a-f-]{36}$"))
    rerun = assessment_id_of(page)
    assert rerun != source
    await expect(page.locator("#rerun-of a")).to_have_attribute("href", f"/ui/assessments/{source}")
    await expect(page.locator(f'[data-status-for="{rerun}"]')).to_have_text("completed", timeout=60_000)
    async with httpx.AsyncClient(base_url=green.url, timeout=30) as client:
        stored = (await client.get(f"/assessments/{rerun}")).json()
    assert stored["rerun_of"] == source and stored["source"] == "ui"
    assert stored["config"]["tasks"]["task_ids"] == failed and stored["config"]["trials"] == 2

    # Compare with...: the previous assessment of the same agent (the source) is preselected.
    await expect(page.locator("#compare-other")).to_have_value(source)
    await page.locator("#compare-with").get_by_role("button", name="Compare").click()
    await expect(page).to_have_url(re.compile(rf"/ui/compare\?id={source}&id={rerun}$"))
    await expect(page.locator("#verdict")).to_be_visible()

    await page.goto(f"/ui/assessments/{source}")
    await expect(page.locator("#reruns a")).to_have_attribute("href", f"/ui/assessments/{rerun}")


async def test_the_form_and_the_actions_fit_a_phone(
    browser: Browser, green: OpenService, artifacts: Path
) -> None:
    context = await browser.new_context(base_url=green.url, viewport=PHONE)
    try:
        page = await context.new_page()
        tab = Tab(page, artifacts)
        await page.goto("/ui/assessments/new")
        await page.locator("#agent_url").fill("ftp://x")
        await page.get_by_role("button", name="Start assessment").click()
        await expect(page.locator("#agent_url-error")).to_be_visible()
        await no_sideways_scroll(tab)
        await tab.shot("new-assessment-phone")
        async with httpx.AsyncClient(base_url=green.url, timeout=30) as client:
            body = {"agent_url": green.flaky_url, "tasks": {"task_ids": FLAKY_TASKS}, "trials": 2}
            await run_assessment(client, body)
            flaky = await run_assessment(client, body)  # with one before it, to compare with
        await page.goto(f"/ui/assessments/{flaky}")
        await expect(page.locator("#rerun-form")).to_be_visible()
        await expect(page.locator("#compare-with")).to_be_visible()
        await no_sideways_scroll(tab)
        await tab.shot("assessment-actions-phone")
    finally:
        await context.close()


async def test_the_forms_work_without_javascript(browser: Browser, green: OpenService) -> None:
    """Plain POST and redirect: with scripts off, start a slow run, cancel it and retry it; only the live
    progress needs the script (here the page is reloaded instead)."""
    context = await browser.new_context(base_url=green.url, java_script_enabled=False)
    try:
        page = await context.new_page()
        await page.goto("/ui/assessments/new")
        await page.locator("#agent_url").fill(green.slow_url)
        await page.locator("#task_ids").fill(" ".join(SLOW_TASKS))
        await page.locator("#concurrency").fill("1")
        await page.get_by_role("button", name="Start assessment").click()
        await expect(page).to_have_url(re.compile(r"/ui/assessments/[0-9a-f-]{36}$"))
        assessment_id = assessment_id_of(page)
        await page.get_by_role("button", name="Cancel").click()
        await expect(page.locator(f'[data-status-for="{assessment_id}"]')).to_have_text("cancelled")
        await page.get_by_role("button", name="Retry").click()
        await expect(page).to_have_url(re.compile(f"/ui/assessments/{assessment_id}$"))
        async with httpx.AsyncClient(base_url=green.url, timeout=30) as client:
            path = f"/assessments/{assessment_id}"
            await poll(client, path, lambda body: body["status"] == "completed", timeout_s=60)
        await page.reload()
        await expect(page.locator(f'[data-status-for="{assessment_id}"]')).to_have_text("completed")
        await expect(page.locator("#attempts tbody tr")).to_have_count(2)
    finally:
        await context.close()


async def test_a_cross_origin_form_is_refused(page: Page, green: OpenService) -> None:
    """Another site's page posting the form (auto-submitted, as a CSRF attack does) starts nothing, though
    the browser visited the service first and holds its form-token cookie."""

    def attacker(_: str) -> Starlette:
        form = (
            f'<form method="post" action="{green.url}ui/assessments/new">'
            f'<input name="agent_url" value="{green.oracle_url}"><input name="task_ids" value="0">'
            '<input name="csrf_token" value="guessed"></form>'
            "<script>document.forms[0].submit()</script>"
        )

        async def home(_: Any) -> HTMLResponse:
            return HTMLResponse(f"<!doctype html><title>a cat video</title>{form}")

        return Starlette(routes=[Route("/", home)])

    async with httpx.AsyncClient(base_url=green.url, timeout=30) as client:
        before = (await client.get("/assessments")).json()["count"]
    await page.goto("/ui/assessments/new")  # the browser now holds this service's cookies
    assert any(c["name"] == CSRF_COOKIE for c in await page.context.cookies())
    async with serve_app(attacker) as evil_url:
        async with page.expect_response(re.compile("/ui/assessments/new$")) as answer:
            await page.goto(evil_url)
        assert (await answer.value).status == 403
    await expect(page.locator("h1")).to_have_text("Refused")
    await expect(page.locator(".error")).to_contain_text("another site's page")
    async with httpx.AsyncClient(base_url=green.url, timeout=30) as client:
        assert (await client.get("/assessments")).json()["count"] == before


async def form_token(client: httpx.AsyncClient) -> str:
    """The form token of the page the client opened (its cookie jar keeps the matching cookie)."""
    page = await client.get("/ui/assessments/new")
    match = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
    assert match and client.cookies.get(CSRF_COOKIE) == match.group(1)
    return match.group(1)


async def test_only_the_services_own_form_with_its_token_acts(green: OpenService) -> None:
    """Over plain HTTP: without the token, with another token, from another origin or site, the form is a
    403 and starts nothing; the same request from the service's page starts the assessment."""
    async with httpx.AsyncClient(base_url=green.url, timeout=30) as client:
        token = await form_token(client)
        fields = {"agent_url": green.oracle_url, "task_ids": "0", "idempotency_key": "ui-token-test"}
        before = (await client.get("/assessments")).json()["count"]
        own_origin = green.url.rstrip("/")
        refused: list[tuple[dict[str, str], dict[str, str]]] = [
            ({}, {"Origin": own_origin}),  # no token
            ({"csrf_token": "x" * 43}, {"Origin": own_origin}),  # another token
            ({"csrf_token": token}, {"Origin": "http://evil.example"}),  # another origin
            ({"csrf_token": token}, {"Origin": own_origin, "Sec-Fetch-Site": "cross-site"}),
            ({"csrf_token": token}, {"Origin": own_origin, "Sec-Fetch-Site": "same-site"}),
        ]
        for extra, headers in refused:
            answer = await client.post("/ui/assessments/new", data={**fields, **extra}, headers=headers)
            assert answer.status_code == 403, (extra, headers)
        # The token without its cookie (a client that never opened the page) is refused too.
        async with httpx.AsyncClient(base_url=green.url, timeout=30) as stranger:
            answer = await stranger.post("/ui/assessments/new", data={**fields, "csrf_token": token})
            assert answer.status_code == 403
        assert (await client.get("/assessments")).json()["count"] == before

        headers = {"Origin": own_origin, "Sec-Fetch-Site": "same-origin"}
        started = await client.post(
            "/ui/assessments/new", data={**fields, "csrf_token": token}, headers=headers
        )
        assert started.status_code == 303
        again = await client.post(
            "/ui/assessments/new", data={**fields, "csrf_token": token}, headers=headers
        )
        assert again.headers["location"] == started.headers["location"]  # a double click starts one
        assert (await client.get("/assessments")).json()["count"] == before + 1


async def test_a_refusal_reads_as_the_rest_one_and_both_are_logged(
    green: OpenService, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="api.web.actions")
    async with httpx.AsyncClient(base_url=green.url, timeout=30) as client:
        finished = await run_assessment(client, {"agent_url": green.oracle_url, "tasks": {"task_ids": ["0"]}})
        rest = await client.post(f"/assessments/{finished}/cancel")
        token = await form_token(client)
        ui = await client.post(f"/ui/assessments/{finished}/cancel", data={"csrf_token": token})
        assert rest.status_code == ui.status_code == 409
        reason = rest.json()["detail"]
        assert "only queued or running assessments can be cancelled" in reason
        assert f'id="action-error" role="alert">{reason}</p>' in ui.text.replace("&#39;", "'")
        retry = await client.post(f"/ui/assessments/{finished}/retry", data={"csrf_token": token})
        assert retry.status_code == 409 and "nothing left to retry" in retry.text
        unknown_domain = {"csrf_token": token, "agent_url": green.oracle_url, "domain": "nope"}
        refused = await client.post("/ui/assessments/new", data=unknown_domain)
        assert refused.status_code == 422
        assert "unknown domain &#39;nope&#39;; this service runs" in refused.text
        assert 'id="domain-error"' in refused.text
        missing = "00000000-0000-0000-0000-000000000000"
        assert (
            await client.post(f"/ui/assessments/{missing}/rerun-failed", data={"csrf_token": token})
        ).status_code == 404
    lines = [r.getMessage() for r in caplog.records if r.name == "api.web.actions"]
    who = "tenant 'default' (open mode, admin)"
    assert any(f"assessment {finished} started for {who} via rest" in line for line in lines)
    assert f"cancel of {finished} refused for {who} via rest: {reason}" in lines
    assert f"cancel of {finished} refused for {who} via ui: {reason}" in lines
    assert any(f"rerun-failed of {missing} refused for {who} via ui" in line for line in lines)


# -- tenants -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tenants:
    url: str
    key_a: str
    key_b: str
    key_admin: str
    key_public: str  # may not reach loopback or private networks
    a_flaky: str
    b_flaky: str


@pytest.fixture(scope="module")
async def tenants(tmp_path_factory: pytest.TempPathFactory, ui_data: RetailData) -> AsyncIterator[Tenants]:
    database_url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('ui-actions-keys') / 'green_agent.db'}"
    async with (
        serve_executor(FlakyOracle(ui_data, failure_rate=0.5, salt="ui-actions")) as flaky_url,
        serve_green(database_url, tenant_quotas={"public": {"queued_trials": 1}}) as url,
    ):
        engine = create_engine(database_url)
        try:
            keys = KeyRepository(engine)
            _, key_a = await keys.create("a", admin=False, allow_private_agents=True)
            _, key_b = await keys.create("b", admin=False, allow_private_agents=True)
            _, key_admin = await keys.create("ops", admin=True, allow_private_agents=True)
            _, key_public = await keys.create("public", admin=False, allow_private_agents=False)
        finally:
            await engine.dispose()

        async def run_as(key: str) -> str:
            headers = {"Authorization": f"Bearer {key}"}
            body = {"agent_url": flaky_url, "tasks": {"task_ids": FLAKY_TASKS}, "trials": 2}
            async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as client:
                return await run_assessment(client, body)

        yield Tenants(url, key_a, key_b, key_admin, key_public, await run_as(key_a), await run_as(key_b))


async def signed_in(browser: Browser, tenants: Tenants, key: str) -> Page:
    context = await browser.new_context(base_url=tenants.url, viewport={"width": 1280, "height": 900})
    page = await context.new_page()
    await page.goto("/ui/login")
    await page.locator("#key").fill(key)
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.locator("h1")).to_contain_text("Assessments")
    return page


async def test_another_tenants_assessment_has_no_buttons_and_refuses_its_posts(
    browser: Browser, tenants: Tenants
) -> None:
    page = await signed_in(browser, tenants, tenants.key_a)
    try:
        await page.goto(f"/ui/assessments/{tenants.a_flaky}")
        await expect(page.locator("#rerun-form")).to_be_visible()  # a's own: a acts on it
        token = next(c["value"] for c in await page.context.cookies() if c["name"] == CSRF_COOKIE)

        response = await page.goto(f"/ui/assessments/{tenants.b_flaky}")
        assert response is not None and response.status == 404
        assert await page.locator("main form, main button").count() == 0
        # Posted with a's session and a valid form token, b's assessment is as unknown as over REST.
        origin = tenants.url.rstrip("/")
        for action in ("cancel", "retry", "rerun-failed"):
            ui = await page.request.post(
                f"/ui/assessments/{tenants.b_flaky}/{action}",
                form={"csrf_token": token},
                headers={"Origin": origin},
            )
            async with httpx.AsyncClient(base_url=tenants.url, timeout=30) as client:
                rest = await client.post(
                    f"/assessments/{tenants.b_flaky}/{action}",
                    headers={"Authorization": f"Bearer {tenants.key_a}"},
                )
            assert ui.status == rest.status_code == 404, action
            assert f"no assessment with id {tenants.b_flaky}" in await ui.text()
        # A POST without the key cookie (another site's form: SameSite=Strict keeps it home) is not signed in.
        async with httpx.AsyncClient(base_url=tenants.url, timeout=30) as stranger:
            answer = await stranger.post(
                f"/ui/assessments/{tenants.a_flaky}/rerun-failed", data={"csrf_token": token}
            )
            assert answer.status_code == 401
        async with httpx.AsyncClient(
            base_url=tenants.url, headers={"Authorization": f"Bearer {tenants.key_admin}"}, timeout=30
        ) as admin:
            b = (await admin.get(f"/assessments/{tenants.b_flaky}")).json()
            assert b["attempt"] == 1 and b["status"] == "completed"
            assert (await admin.get("/assessments")).json()["count"] == 2  # no rerun was started
    finally:
        await page.context.close()


async def test_the_admin_acts_on_every_tenants_assessment(browser: Browser, tenants: Tenants) -> None:
    page = await signed_in(browser, tenants, tenants.key_admin)
    try:
        await page.goto(f"/ui/assessments/{tenants.b_flaky}")
        await page.locator("#rerun-form").get_by_role("button", name="Rerun failed tasks").click()
        await expect(page.locator("#rerun-of a")).to_have_attribute(
            "href", f"/ui/assessments/{tenants.b_flaky}"
        )
        rerun = assessment_id_of(page)
        async with httpx.AsyncClient(
            base_url=tenants.url, headers={"Authorization": f"Bearer {tenants.key_b}"}, timeout=30
        ) as b:
            # As over REST, a rerun belongs to whoever started it: the admin's tenant, not b.
            assert (await b.get(f"/assessments/{rerun}")).status_code == 404
            await poll(b, f"/assessments/{tenants.b_flaky}", lambda body: body["status"] == "completed")
    finally:
        await page.context.close()


async def test_a_private_address_and_a_full_quota_are_refused_as_rest_refuses_them(
    browser: Browser, tenants: Tenants
) -> None:
    page = await signed_in(browser, tenants, tenants.key_public)
    try:
        await page.goto("/ui/assessments/new")
        await expect(page.locator("#agent_url-hint")).to_contain_text(
            "loopback and private networks are refused"
        )
        for url in ("http://10.1.2.3:9009", "http://127.0.0.1:9009/"):
            await page.locator("#agent_url").fill(url)
            await page.locator("#task_ids").fill("0")
            async with page.expect_response(re.compile("/ui/assessments/new$")) as answer:
                await page.get_by_role("button", name="Start assessment").click()
            assert (await answer.value).status == 422
            await expect(page.locator("#agent_url-error")).to_contain_text("agent_url is refused")
            await expect(page.locator("#agent_url-error")).to_contain_text("private")
        # A quota (one trial waiting at most, for this tenant) is the REST 429, with its Retry-After.
        await page.locator("#agent_url").fill("http://agent.example.com")
        await page.locator("#task_ids").fill("0 1")
        async with page.expect_response(re.compile("/ui/assessments/new$")) as answer:
            await page.get_by_role("button", name="Start assessment").click()
        response = await answer.value
        assert response.status == 429 and response.headers["retry-after"] == "30"
        await expect(page.locator("#form-error")).to_contain_text("adds 2 (limit 1); retry later")
        assert await page.locator("#agent_url-error").count() == 0
        cookie = next(c for c in await page.context.cookies() if c["name"] == UI_SESSION_COOKIE)
        assert cookie["sameSite"] == "Strict"
    finally:
        await page.context.close()
