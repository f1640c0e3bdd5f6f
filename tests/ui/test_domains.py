"""Domains in the web UI, in Debian's Chromium against the real service: every assessment shows its domain
(the list, its page, a trial's page), the list filters by domain, the leaderboard shows one domain at a time
with tabs to switch, compare refuses two assessments of different domains in one line, and an airline
trial's failures and DB differences come from airline's data."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Browser, expect

from domain_kit import DomainData
from green_agent.domains import load_domain
from green_agent.reference_agents import serve_reference_agent
from tests.api.servers import serve_green
from tests.support.agents import SloppyExecutor, serve_executor
from tests.ui.conftest import Tab, no_clipped_table, no_sideways_scroll, run_assessment


@dataclass(frozen=True)
class Domains:
    url: str
    retail_id: str
    airline_id: str
    sloppy_airline_id: str


@pytest.fixture(scope="module")
def airline() -> DomainData:
    return load_domain("airline")


@pytest.fixture(scope="module")
async def service(tmp_path_factory: pytest.TempPathFactory, airline: DomainData) -> AsyncIterator[Domains]:
    """A service holding a retail and an airline run of the oracle, and an airline run of an agent that
    leaves out each task's last write (task 7: the second cancellation)."""
    database_url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('ui-domains') / 'green_agent.db'}"
    async with (
        serve_reference_agent("oracle") as oracle_url,
        serve_executor(SloppyExecutor(airline)) as sloppy_url,
        serve_green(database_url) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        tasks = {"tasks": {"task_ids": ["7", "8"]}, "concurrency": 4}
        retail_id = await run_assessment(client, {"agent_url": oracle_url, **tasks})
        airline_id = await run_assessment(client, {"agent_url": oracle_url, "domain": "airline", **tasks})
        sloppy_id = await run_assessment(client, {"agent_url": sloppy_url, "domain": "airline", **tasks})
        yield Domains(url, retail_id, airline_id, sloppy_id)


@pytest.fixture
async def tab(browser: Browser, service: Domains, artifacts: Path) -> AsyncIterator[Tab]:
    context = await browser.new_context(base_url=service.url, viewport={"width": 1280, "height": 900})
    page = await context.new_page()
    tab = Tab(page, artifacts)
    page.on("console", lambda message: tab.errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: tab.errors.append(str(error)))
    try:
        yield tab
    finally:
        await context.close()


async def test_the_list_shows_and_filters_by_domain(tab: Tab, service: Domains) -> None:
    page = tab.page
    await page.goto("/ui")
    rows = page.locator("tbody tr[data-assessment]")
    await expect(rows).to_have_count(3)
    await expect(page.locator(f'tr[data-assessment="{service.retail_id}"] td.domain')).to_have_text("retail")
    await expect(page.locator(f'tr[data-assessment="{service.airline_id}"] td.domain')).to_have_text(
        "airline"
    )
    await no_sideways_scroll(tab)
    await no_clipped_table(tab)

    await page.select_option('select[name="domain"]', "airline")
    await page.get_by_role("button", name="Filter").click()
    await expect(page).to_have_url(re.compile(r"/ui\?.*domain=airline"))
    await expect(rows).to_have_count(2)
    await expect(page.locator("td.domain")).to_have_text(["airline", "airline"])
    await expect(page.locator('select[name="domain"]')).to_have_value("airline")
    await tab.shot("list-airline")

    await page.goto("/ui?domain=retail")
    await expect(rows).to_have_count(1)
    await expect(page.locator(f'tr[data-assessment="{service.retail_id}"]')).to_be_visible()
    assert tab.errors == []


async def test_an_airline_assessment_and_trial_show_their_domain_and_airline_failures(
    tab: Tab, service: Domains
) -> None:
    page = tab.page
    # "Compare with..." offers this domain's assessments only: the oracle's retail run (same agent, created
    # before) is neither offered nor preselected on its airline run's page.
    await page.goto(f"/ui/assessments/{service.airline_id}")
    options = page.locator("#compare-other option")
    await expect(options).to_have_count(1)
    await expect(options).to_have_attribute("value", service.sloppy_airline_id)
    await expect(options).to_contain_text("airline")

    await page.goto(f"/ui/assessments/{service.sloppy_airline_id}")
    await expect(page.locator("#assessment-domain")).to_have_text("airline")
    grid = page.locator("#trial-grid")
    await expect(grid.locator("a.cell")).to_have_count(2)
    await grid.locator('a.cell[href$="/trials/7/0"]').click()
    await expect(page.locator("h1")).to_contain_text("Task 7, trial 0")
    await expect(page.locator("#trial-domain")).to_have_text("airline")
    # Classified with airline's writes and replayed on airline's data.
    missing = page.locator('#failures li[data-kind="missing_action"]')
    await expect(missing).to_contain_text("cancel_reservation was never called")
    await expect(page.locator("#db-diff")).to_contain_text("reservations/59XX6W.status")
    await expect(page.locator("#task-history h2")).to_contain_text("Airline task 7 across runs")
    await tab.shot("trial-airline")

    # The same task id in retail is another task: the retail run's page says retail.
    await page.goto(f"/ui/assessments/{service.retail_id}/trials/7/0")
    await expect(page.locator("#trial-domain")).to_have_text("retail")
    await expect(page.locator("#trial-outcome")).to_have_text("passed")
    assert tab.errors == []


async def test_the_leaderboard_shows_one_domain_at_a_time(tab: Tab, service: Domains) -> None:
    page = tab.page
    await page.goto("/ui/leaderboard")
    tabs = page.locator("#domain-tabs a")
    await expect(tabs).to_have_text(["retail", "airline", "telecom", "mock"])  # every domain the service runs
    await expect(page.locator("#domain-tabs a.current")).to_have_text("retail")  # the first with runs
    await expect(page.locator("#leaderboard tbody tr")).to_have_count(1)
    await expect(page.locator(f'#leaderboard tr[data-assessment="{service.retail_id}"]')).to_be_visible()

    await tabs.filter(has_text="airline").click()
    await expect(page).to_have_url(re.compile(r"/ui/leaderboard\?domain=airline$"))
    await expect(page.locator("h1")).to_contain_text("airline")
    # Both airline agents ranked together, each on the same two airline tasks; no retail run among them.
    board = page.locator("#leaderboard tbody tr")
    await expect(board).to_have_count(2)
    await expect(board.first).to_have_attribute("data-assessment", service.airline_id)
    await expect(page.locator("section.board h2")).to_contain_text("2 tasks (7–8)")
    await no_sideways_scroll(tab)
    await tab.shot("leaderboard-airline")

    # Sorting keeps the domain.
    await page.locator("#leaderboard thead a").filter(has_text="Avg reward").click()
    await expect(page).to_have_url(re.compile(r"domain=airline"))
    await expect(board).to_have_count(2)
    assert tab.errors == []


async def test_compare_refuses_two_domains_in_one_line(tab: Tab, service: Domains) -> None:
    page = tab.page
    await page.goto("/ui/compare")
    await page.select_option("#pick-0", service.retail_id)
    await page.select_option("#pick-1", service.airline_id)
    await page.get_by_role("button", name="Compare").click()
    error = page.locator("p.error")
    await expect(error).to_have_text(
        f"assessments {service.retail_id} (retail) and {service.airline_id} (airline) assess different "
        "domains; compare two assessments of the same domain"
    )
    await expect(page.locator("#verdict")).to_have_count(0)
    await expect(page.locator("#pick-0")).to_have_value(service.retail_id)  # the picks are kept
    await tab.shot("compare-two-domains")

    # Two airline runs compare as before.
    await page.select_option("#pick-0", service.sloppy_airline_id)
    await page.select_option("#pick-1", service.airline_id)
    await page.get_by_role("button", name="Compare").click()
    await expect(page.locator("#verdict")).to_be_visible()
    await expect(page.locator("p.error")).to_have_count(0)
    assert tab.errors == []
