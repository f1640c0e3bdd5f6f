"""The web UI at desktop and phone widths (Debian's Chromium): failed and cancelled runs in red with their
reason, rows named by short id and agent, no sideways scrolling and no clipped table at 390 px, compare by
picking from lists, "nothing to check" shown one way for every signal, empty sections left out, tool results
folded."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx
import pytest
from playwright.async_api import Browser, expect

from tests.api.servers import poll
from tests.ui.conftest import PHONE, Service, Tab, no_clipped_table, no_sideways_scroll


@dataclass(frozen=True)
class Ended:
    failed_id: str
    cancelled_id: str
    single_id: str  # completed, one trial per task: pass^1 only


@pytest.fixture(scope="module")
async def ended(service: Service) -> Ended:
    async with httpx.AsyncClient(base_url=service.url, timeout=30) as client:
        failed = await client.post(
            "/assessments", json={"agent_url": "http://127.0.0.1:9/", "tasks": {"task_ids": ["0"]}}
        )
        failed_id = failed.json()["id"]
        await poll(client, f"/assessments/{failed_id}", lambda b: b["status"] == "failed", timeout_s=60)
        slow = {"agent_url": service.slow_agent_url, "tasks": {"task_ids": ["5", "6"]}, "trials": 4}
        cancelled_id = (await client.post("/assessments", json=slow)).json()["id"]
        await poll(client, f"/assessments/{cancelled_id}", lambda b: b["progress"]["trials_done"] >= 1)
        assert (await client.post(f"/assessments/{cancelled_id}/cancel")).status_code == 200
        single = {"agent_url": service.slow_agent_url, "tasks": {"task_ids": ["1"]}, "trials": 1}
        single_id = (await client.post("/assessments", json=single)).json()["id"]
        await poll(client, f"/assessments/{single_id}", lambda b: b["status"] == "completed", timeout_s=120)
    return Ended(failed_id, cancelled_id, single_id)


@pytest.fixture
async def phone(browser: Browser, service: Service, tab: Tab) -> AsyncIterator[Tab]:
    context = await browser.new_context(base_url=service.url, viewport=PHONE, is_mobile=True)
    page = await context.new_page()
    try:
        yield Tab(page, tab.artifacts)
    finally:
        await context.close()


async def test_failed_and_cancelled_runs_are_red_with_their_reason(tab: Tab, ended: Ended) -> None:
    page = tab.page
    await page.goto("/ui")
    failed = page.locator(f'tr[data-assessment="{ended.failed_id}"]')
    await expect(failed).to_have_class("ended-badly")
    await expect(failed.locator(".progress")).to_have_class(re.compile("p-failed"))
    await expect(failed.locator(".reason")).to_contain_text("could not be reached")
    cancelled = page.locator(f'tr[data-assessment="{ended.cancelled_id}"]')
    await expect(cancelled.locator(".progress")).to_have_class(re.compile("p-cancelled"))
    await expect(cancelled.locator(".reason")).to_have_text("cancelled on request")
    red = await failed.locator("progress").evaluate("bar => getComputedStyle(bar).accentColor")
    assert red == "rgb(214, 69, 69)", red  # --failed-db

    await page.goto(f"/ui/assessments/{ended.failed_id}")
    await expect(page.locator("#end-reason")).to_contain_text(
        "Failed: the white agent at http://127.0.0.1:9 could not be reached"
    )
    await expect(page.locator("h1 .badge.muted")).to_have_count(0)  # no "no report": the reason says it
    await page.goto(f"/ui/assessments/{ended.cancelled_id}")
    await expect(page.locator("#end-reason")).to_have_text("Cancelled: cancelled on request")
    assert tab.errors == []


async def test_rows_are_named_by_short_id_and_agent(tab: Tab, service: Service) -> None:
    page = tab.page
    await page.goto("/ui")
    row = page.locator(f'tr[data-assessment="{service.oracle_id}"]')
    await expect(row.locator(".name code")).to_have_text(service.oracle_id[:8])
    agent = (await row.locator(".agent").get_attribute("data-agent-url")) or ""
    await expect(row.locator(".agent .agent-url")).to_have_text(agent.split("://", 1)[1].rstrip("/"))
    await expect(row.locator(".agent .agent-name")).to_have_text("reference-oracle")  # its card's name


@pytest.mark.parametrize("width", ["desktop", "phone"])
async def test_no_page_scrolls_sideways_nor_clips_a_table_on_a_phone(
    width: str, tab: Tab, phone: Tab, service: Service, ended: Ended
) -> None:
    viewer = phone if width == "phone" else tab
    pages = {
        "list": "/ui",
        "assessment": f"/ui/assessments/{service.sloppy_id}",
        "assessment-failed": f"/ui/assessments/{ended.failed_id}",
        "trial": f"/ui/assessments/{service.sloppy_id}/trials/0/0",
        "trial-judged": f"/ui/assessments/{service.oracle_id}/trials/3/1",
        "trial-excluded": f"/ui/assessments/{service.sloppy_id}/trials/2/0",
        "compare": f"/ui/compare?id={service.oracle_id}&id={service.sloppy_id}",
        "compare-pick": "/ui/compare",
        "leaderboard": "/ui/leaderboard?partial=true",
        "login": "/ui/login",
        "new-assessment": "/ui/assessments/new",
    }
    for name, path in pages.items():
        await viewer.page.goto(path)
        await no_sideways_scroll(viewer)
        if width == "phone":
            await no_clipped_table(viewer)
        await viewer.shot(f"{width}-{name}")
    if width == "phone":  # the agent URL is not broken mid-word when it fits the card
        await viewer.page.goto("/ui")
        agent = viewer.page.locator(f'tr[data-assessment="{service.oracle_id}"] .agent')
        assert (await agent.evaluate("cell => cell.getClientRects().length")) == 1
        box = await agent.bounding_box()
        assert box is not None and box["height"] < 30, box


async def test_compare_by_picking_from_lists(tab: Tab, service: Service) -> None:
    page = tab.page
    await page.goto("/ui/compare")
    options = page.locator("#pick-0 option")
    await expect(options.filter(has_text=service.oracle_id[:8])).to_have_count(1)
    await page.locator("#pick-0").select_option(service.oracle_id)
    await page.locator("#pick-1").select_option(service.sloppy_id)
    await page.get_by_role("button", name="Compare").click()
    await expect(page).to_have_url(re.compile("/ui/compare\\?id="))
    await expect(page.locator("#change-summary")).to_contain_text("2 tasks broke")
    await expect(page.locator("#pick-0")).to_have_value(service.oracle_id)  # the choice stays shown
    assert tab.errors == []


async def test_nothing_to_check_reads_the_same_for_every_signal(tab: Tab, service: Service) -> None:
    page = tab.page
    await page.goto(f"/ui/assessments/{service.oracle_id}/trials/1/0")  # no NL assertion, no facts to say
    for name in ("NL_ASSERTION", "COMMUNICATE"):
        await expect(page.locator(f'tr[data-signal="{name}"] td').nth(1)).to_have_text("not applicable")
    await expect(page.locator('tr[data-signal="DB_STATE_MATCH"] td').nth(1)).to_have_text("passed")
    await page.goto(f"/ui/assessments/{service.oracle_id}/trials/3/1")  # judged and failed
    await expect(page.locator('tr[data-signal="NL_ASSERTION"] td').nth(1)).to_have_text("failed")


async def test_empty_sections_are_left_out(tab: Tab, service: Service, ended: Ended) -> None:
    page = tab.page
    await page.goto(f"/ui/assessments/{service.oracle_id}/trials/1/0")  # scripted customer, no judge call
    await expect(page.locator("#usage")).to_have_count(0)
    await page.goto(f"/ui/assessments/{service.oracle_id}/trials/3/1")  # the judge was called
    await expect(page.locator("#usage")).to_have_count(1)
    await page.goto(f"/ui/assessments/{ended.single_id}")  # one trial per task: pass^1 as a number, no chart
    await expect(page.locator("svg.chart")).to_have_count(0)
    await expect(page.locator(".headline")).to_contain_text("pass^1")


async def test_tool_results_are_folded_and_pretty_printed(tab: Tab, service: Service) -> None:
    page = tab.page
    await page.goto(f"/ui/assessments/{service.oracle_id}/trials/1/0")
    # The user's details come back as a JSON object (the first result, a bare user id, is plain text).
    result = page.locator("#transcript .msg.tool details.tool-result").filter(has_text="{").first
    await expect(result).not_to_have_attribute("open", "")
    body = result.locator("pre")
    await expect(body).to_be_hidden()
    summary = (await result.locator("summary").text_content()) or ""
    assert len(summary) <= 80 and "\n" not in summary, summary  # one line stands for it while folded
    await result.locator("summary").click()
    await expect(body).to_be_visible()
    text = await body.text_content()
    assert text is not None and text.startswith("{") and '\n  "' in text, text  # indented
    assert tab.errors == []
