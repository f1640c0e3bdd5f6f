"""The web UI with API keys: the login form, the session cookie (on /ui only), and tenants seeing only their
own assessments, in Debian's Chromium and over plain HTTP.

The service holds three one-trial assessments: two of tenant a (the oracle and the failing agent) and one of
tenant b (another oracle, on its own URL so the leaderboard can tell the tenants apart)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx
import pytest
from playwright.async_api import Browser, Page, expect

from api.db.engine import create_engine
from api.db.keys import KeyRepository
from api.security.auth import UI_SESSION_COOKIE
from green_agent.reference_agents import serve_reference_agent
from retail_domain import RetailData
from tests.api.servers import serve_green
from tests.support.agents import SloppyExecutor, serve_executor
from tests.ui.conftest import run_assessment

SELECTION = {"tasks": {"task_ids": ["0"]}, "trials": 1}


@dataclass(frozen=True)
class TenantService:
    url: str
    database_url: str
    key_a: str
    key_b: str
    key_admin: str
    a_oracle: str  # assessment ids
    a_sloppy: str
    b_oracle: str
    agents_a: frozenset[str]
    agent_b: str


@pytest.fixture(scope="module")
async def tenants(
    tmp_path_factory: pytest.TempPathFactory, ui_data: RetailData
) -> AsyncIterator[TenantService]:
    database_url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('ui-keys') / 'green_agent.db'}"
    async with (
        serve_reference_agent("oracle", data=ui_data) as oracle_a,
        serve_reference_agent("oracle", data=ui_data) as oracle_b,
        serve_executor(SloppyExecutor(ui_data)) as sloppy_a,
        serve_green(database_url) as url,
    ):
        engine = create_engine(database_url)
        try:
            keys = KeyRepository(engine)
            _, key_a = await keys.create("a", admin=False, allow_private_agents=True)
            _, key_b = await keys.create("b", admin=False, allow_private_agents=True)
            _, key_admin = await keys.create("ops", admin=True, allow_private_agents=False)
        finally:
            await engine.dispose()

        async def run_as(key: str, agent_url: str) -> str:
            headers = {"Authorization": f"Bearer {key}"}
            async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as client:
                return await run_assessment(client, {"agent_url": agent_url, **SELECTION})

        yield TenantService(
            url=url,
            database_url=database_url,
            key_a=key_a,
            key_b=key_b,
            key_admin=key_admin,
            a_oracle=await run_as(key_a, oracle_a),
            a_sloppy=await run_as(key_a, sloppy_a),
            b_oracle=await run_as(key_b, oracle_b),
            agents_a=frozenset(u.rstrip("/") for u in (oracle_a, sloppy_a)),
            agent_b=oracle_b.rstrip("/"),
        )


@pytest.fixture
async def page(browser: Browser, tenants: TenantService) -> AsyncIterator[Page]:
    context = await browser.new_context(base_url=tenants.url, viewport={"width": 1280, "height": 900})
    page = await context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(f"page error: {error}"))
    # A 404 page is the expected answer for another tenant's assessment; any other console error is not.
    page.on(
        "console",
        lambda m: errors.append(m.text) if m.type == "error" and "status of 404" not in m.text else None,
    )
    try:
        yield page
        assert errors == []
    finally:
        await context.close()


async def sign_in(page: Page, key: str) -> None:
    await page.goto("/ui")
    await expect(page).to_have_url(re.compile(r"/ui/login\?next=%2Fui$"))  # no cookie: to the login form
    await page.locator("#key").fill(key)
    await page.get_by_role("button", name="Sign in").click()
    await expect(page).to_have_url(re.compile("/ui$"))
    await expect(page.locator("h1")).to_have_text("Assessments")


async def test_a_tenant_sees_only_its_own_assessments(page: Page, tenants: TenantService) -> None:
    await sign_in(page, tenants.key_a)
    cookie = next(c for c in await page.context.cookies() if c["name"] == UI_SESSION_COOKIE)
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/ui"
    assert await page.evaluate("document.cookie") == ""  # scripts cannot read it

    rows = page.locator("tr[data-assessment]")
    await expect(rows).to_have_count(2)
    assert {await r.get_attribute("data-assessment") for r in await rows.all()} == {
        tenants.a_oracle,
        tenants.a_sloppy,
    }
    agents = page.locator('select[name="agent"] option')
    values = [await option.get_attribute("value") for option in await agents.all()]
    assert set(values) == {"", *tenants.agents_a}  # the agent filter offers a's agents only

    await page.locator(f'tr[data-assessment="{tenants.a_oracle}"] a').first.click()
    await expect(page).to_have_url(re.compile(f"/ui/assessments/{tenants.a_oracle}$"))
    # Each signal's rate says how many trials it covers (task 0 is scored on the DB alone).
    db_signal = page.locator("tr", has_text="DB_STATE_MATCH")
    await expect(db_signal).to_contain_text("1.000")
    await expect(db_signal).to_contain_text("of 1 trial")
    await page.locator('#trial-grid a.cell[href$="/trials/0/0"]').click()
    await expect(page.locator("h1")).to_contain_text("Task 0, trial 0")
    await expect(page.locator("#trial-outcome")).to_have_text("passed")

    # Tenant b's assessment, its trial and its downloads read as if they did not exist.
    for path in (
        f"/ui/assessments/{tenants.b_oracle}",
        f"/ui/assessments/{tenants.b_oracle}/trials/0/0",
        f"/ui/compare?id={tenants.a_oracle}&id={tenants.b_oracle}",
        f"/ui/compare?id={tenants.b_oracle}&id={tenants.a_oracle}",
    ):
        response = await page.goto(path)
        assert response is not None and response.status == 404, path
        await expect(page.locator("h1")).to_have_text("Not found")
        await expect(page.locator("body")).to_contain_text(f"no assessment with id {tenants.b_oracle}")
    for path in (
        f"/ui/assessments/{tenants.b_oracle}/report.json",
        f"/ui/assessments/{tenants.b_oracle}/leaderboard.json",
        f"/ui/assessments/{tenants.b_oracle}/tau2.json",
        f"/ui/assessments/{tenants.b_oracle}/trials.csv",
        f"/ui/assessments/{tenants.b_oracle}/trials/0/0/trial.json",
        f"/ui/live?id={tenants.b_oracle}",
    ):
        download = await page.request.get(path)  # the page's cookie goes along
        assert download.status == 404 and tenants.b_oracle in await download.text(), path
    own = await page.request.get(f"/ui/assessments/{tenants.a_oracle}/report.json")
    assert own.status == 200 and (await own.json())["id"] == tenants.a_oracle
    own_csv = await page.request.get(f"/ui/assessments/{tenants.a_oracle}/trials.csv")
    assert own_csv.status == 200 and (await own_csv.text()).startswith("task_id,trial,")

    await page.goto(f"/ui/compare?id={tenants.a_oracle}&id={tenants.a_sloppy}")
    await expect(page.locator("#change-summary")).to_be_visible()  # two of a's own: compared

    await page.goto("/ui/leaderboard")
    board = page.locator("table td.agent")
    await expect(board).to_have_count(2)
    assert {await cell.get_attribute("data-agent-url") for cell in await board.all()} == tenants.agents_a

    await page.get_by_role("button", name="Sign out").click()
    await expect(page).to_have_url(re.compile("/ui/login$"))
    assert [c for c in await page.context.cookies() if c["name"] == UI_SESSION_COOKIE] == []
    await page.goto(f"/ui/assessments/{tenants.a_oracle}")
    await expect(page).to_have_url(re.compile(r"/ui/login\?next="))


async def test_an_admin_sees_every_tenant(page: Page, tenants: TenantService) -> None:
    await sign_in(page, tenants.key_admin)
    await expect(page.locator("tr[data-assessment]")).to_have_count(3)
    await page.goto(f"/ui/compare?id={tenants.a_oracle}&id={tenants.b_oracle}")
    await expect(page.locator("#change-summary")).to_be_visible()
    await page.goto("/ui/leaderboard")
    board = page.locator("table td.agent")
    await expect(board).to_have_count(3)
    urls = {await cell.get_attribute("data-agent-url") for cell in await board.all()}
    assert urls == {*tenants.agents_a, tenants.agent_b}


def cookie_of(key: str) -> dict[str, str]:
    return {"Cookie": f"{UI_SESSION_COOKIE}={key}"}


async def test_the_cookie_opens_the_ui_only(tenants: TenantService) -> None:
    async with httpx.AsyncClient(base_url=tenants.url, timeout=30) as client:
        assert (await client.get("/ui", headers=cookie_of(tenants.key_admin))).status_code == 200
        # Never on REST or A2A: a cookie rides along with cross-site requests, a header does not.
        for path in (
            "/assessments",
            f"/assessments/{tenants.a_oracle}",
            f"/assessments/{tenants.a_oracle}/trials",
        ):
            response = await client.get(path, headers=cookie_of(tenants.key_admin))
            assert response.status_code == 401, (path, response.text)
        rpc = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": tenants.a_oracle}}
        assert (await client.post("/", json=rpc, headers=cookie_of(tenants.key_admin))).status_code == 401
        created = await client.post(
            "/assessments",
            json={"agent_url": "http://127.0.0.1:9/", **SELECTION},
            headers=cookie_of(tenants.key_a),
        )
        assert created.status_code == 401

        # Without a key: the login form and the assets are open; pages redirect to the form, other
        # requests get a plain 401.
        browser_root = await client.get("/", headers={"Accept": "text/html"})
        assert browser_root.status_code == 303 and browser_root.headers["location"] == "/ui/login?next=%2Fui"
        assert (await client.get("/", headers={"Accept": "application/json"})).status_code == 401
        assert (await client.get("/ui/login")).status_code == 200
        assert (await client.get("/ui/static/ui.css")).status_code == 200
        page = await client.get("/ui/leaderboard", params={"sort": "agent"})
        assert page.status_code == 303
        assert page.headers["location"] == "/ui/login?next=%2Fui%2Fleaderboard%3Fsort%3Dagent"
        assert (await client.get("/ui", headers=cookie_of("not-a-key"))).status_code == 303
        assert (await client.post("/ui/not-a-form")).status_code == 401


async def test_a_revoked_keys_cookie_stops_working_at_once(tenants: TenantService) -> None:
    engine = create_engine(tenants.database_url)
    try:
        keys = KeyRepository(engine)
        record, key = await keys.create("a", admin=False, allow_private_agents=False)
        async with httpx.AsyncClient(base_url=tenants.url, timeout=30) as client:
            signed = await client.post("/ui/login", data={"key": key})
            assert signed.status_code == 303 and signed.headers["location"] == "/ui"
            assert (await client.get(f"/ui/assessments/{tenants.a_oracle}")).status_code == 200
            await keys.revoke(record.id)
            after = await client.get(f"/ui/assessments/{tenants.a_oracle}")
            assert after.status_code == 303 and after.headers["location"].startswith("/ui/login?next=")
            # Signing out still works (and clears the cookie) with a key that no longer does.
            out = await client.post("/ui/logout")
            assert out.status_code == 303 and out.headers["location"] == "/ui/login"
            assert UI_SESSION_COOKIE not in client.cookies
    finally:
        await engine.dispose()


async def test_login_sets_a_strict_cookie_and_refuses_other_origins(tenants: TenantService) -> None:
    origin = tenants.url.rstrip("/")
    async with httpx.AsyncClient(base_url=tenants.url, timeout=30) as client:
        for headers in (
            {"Origin": "http://evil.example"},
            {"Origin": "null"},
            {"Sec-Fetch-Site": "cross-site"},
        ):
            # Login CSRF: another site posting a key of its own must not sign this browser in.
            refused = await client.post("/ui/login", data={"key": tenants.key_a}, headers=headers)
            assert refused.status_code == 403 and "set-cookie" not in refused.headers, headers
            assert "Sign in from this service" in refused.text
        logout = await client.post("/ui/logout", headers={"Origin": "http://evil.example"})
        assert logout.status_code == 403 and "set-cookie" not in logout.headers

        wrong = await client.post("/ui/login", data={"key": "not-a-key"}, headers={"Origin": origin})
        assert wrong.status_code == 401 and "not valid" in wrong.text and "set-cookie" not in wrong.headers
        signed = await client.post(
            "/ui/login?next=/ui/leaderboard", data={"key": tenants.key_a}, headers={"Origin": origin}
        )
        assert signed.status_code == 303 and signed.headers["location"] == "/ui/leaderboard"
        attributes = [a.strip().lower() for a in signed.headers["set-cookie"].split(";")]
        assert attributes[0] == f"{UI_SESSION_COOKIE}={tenants.key_a}".lower()
        assert {"httponly", "samesite=strict", "path=/ui"} <= set(attributes)
        assert "secure" not in attributes  # served over http here; over https the cookie is Secure
