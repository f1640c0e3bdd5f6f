"""Dual control on the trial page, in Debian's Chromium against the real service: a failed telecom trial names
each failed env assertion with what the phone or the provider's records held, lists the gold actions nobody
made, says that the DB is a diagnostic there, and shows the customer's side (the phone and its surroundings)
at the task's start and at the trial's end; the customer's own tool results are marked as the agent never
saw them. The trial's JSON download carries the same states. A task's message history opens the
conversation, marked as the task's."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from playwright.async_api import Browser, expect

from domain_kit import DomainData
from green_agent.domains import load_domain
from green_agent.reference_agents import serve_reference_agent
from tests.api.servers import serve_green
from tests.ui.conftest import Tab, no_sideways_scroll, run_assessment

PAYMENT_TASK = "[service_issue]airplane_mode_on|overdue_bill_suspension[PERSONA:None]"


@dataclass(frozen=True)
class Telecom:
    url: str
    solved_id: str
    talked_id: str
    history_id: str

    def trial_page(self, assessment_id: str) -> str:
        return f"/ui/assessments/{assessment_id}/trials/{quote(PAYMENT_TASK, safe='')}/0"


@pytest.fixture(scope="module")
def telecom() -> DomainData:
    return load_domain("telecom")


@pytest.fixture(scope="module")
async def service(tmp_path_factory: pytest.TempPathFactory, telecom: DomainData) -> AsyncIterator[Telecom]:
    """A service holding the oracle's run of the payment task and the run of an agent that only talks (the
    scripted customer still does its own part: airplane mode off, a payment nobody asked for, a reboot)."""
    database_url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('ui-telecom') / 'green_agent.db'}"
    async with (
        serve_reference_agent("oracle", data=telecom) as oracle_url,
        serve_reference_agent("no_tools", data=telecom) as talker_url,
        serve_green(database_url) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        body = {"domain": "telecom", "tasks": {"task_ids": [PAYMENT_TASK]}}
        solved_id = await run_assessment(client, {"agent_url": oracle_url, **body})
        talked_id = await run_assessment(client, {"agent_url": talker_url, **body})
        history = {"domain": "mock", "tasks": {"task_ids": ["update_task_with_message_history"]}}
        history_id = await run_assessment(client, {"agent_url": oracle_url, **history})
        yield Telecom(url, solved_id, talked_id, history_id)


@pytest.fixture
async def tab(browser: Browser, service: Telecom, artifacts: Path) -> AsyncIterator[Tab]:
    context = await browser.new_context(base_url=service.url, viewport={"width": 1280, "height": 900})
    page = await context.new_page()
    tab = Tab(page, artifacts)
    page.on("console", lambda message: tab.errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: tab.errors.append(str(error)))
    try:
        yield tab
    finally:
        await context.close()


async def test_a_failed_telecom_trial_shows_what_failed_and_the_phone_before_and_after(
    tab: Tab, service: Telecom
) -> None:
    page = tab.page
    await page.goto(service.trial_page(service.talked_id))
    await expect(page.locator("#trial-domain")).to_have_text("telecom")
    await expect(page.locator("#trial-outcome")).to_have_text("missing action")

    failures = page.locator("#failures li")
    await expect(failures.filter(has_text="send_payment_request was never called")).to_have_count(1)
    await expect(failures.filter(has_text="resume_line was never called")).to_have_count(1)
    await expect(failures.filter(has_text="assert_service_status").locator(".detail")).to_contain_text(
        "expected true, found false: service status is no_service"
    )
    overdue = failures.filter(has_text="assert_no_overdue_bill")
    await expect(overdue).to_contain_text("bill B1234321 is Overdue")

    assertions = page.locator("#env-assertions tbody tr")
    await expect(assertions).to_have_count(2)
    await expect(page.locator('#env-assertions tr[data-assertion="assert_service_status"]')).to_contain_text(
        "customer"
    )
    await expect(page.locator("#db-diagnostic")).to_contain_text("a diagnostic")

    # The phone: airplane mode turned off by the customer, still no service (the line stayed suspended).
    side = page.locator("#customer-side")
    await expect(side.locator("h2")).to_contain_text("the phone and its surroundings")
    changes = side.locator("#customer-changes tbody tr")
    await expect(changes).to_have_count(1)
    airplane = side.locator('tr[data-path="device.airplane_mode"] td')
    await expect(airplane).to_have_text(["device.airplane_mode", "true", "false"])
    before, after = side.locator("#customer-before"), side.locator("#customer-after")
    await expect(before.locator("pre")).not_to_be_visible()  # folded until asked for
    await before.locator("summary").click()
    await expect(before.locator("pre")).to_contain_text('"network_connection_status": "no_service"')
    await after.locator("summary").click()
    await expect(after.locator("pre")).to_contain_text('"airplane_mode": false')
    await expect(page.locator("#customer-omitted")).to_have_count(0)

    # The customer's own tool results are marked as such in the conversation.
    customer_results = page.locator("li.msg.customer-tool")
    await expect(customer_results).to_have_count(3)  # toggle, the failed payment, reboot
    await expect(customer_results.first.locator(".who")).to_contain_text("the agent never sees it")
    await no_sideways_scroll(tab)
    await tab.shot("telecom-trial-failed")
    assert tab.errors == []


async def test_a_solved_telecom_trial_shows_the_phone_fixed(tab: Tab, service: Telecom) -> None:
    page = tab.page
    await page.goto(service.trial_page(service.solved_id))
    await expect(page.locator("#trial-outcome")).to_have_text("passed")
    await expect(page.locator("#failures")).to_have_count(0)
    paths = page.locator("#customer-changes tbody tr")
    await expect(paths).to_have_count(5)
    status = page.locator('#customer-changes tr[data-path="device.network_connection_status"] td')
    await expect(status).to_have_text(["device.network_connection_status", '"no_service"', '"connected"'])
    await expect(page.locator('tr[data-path="surroundings.line_active"] td')).to_have_text(
        ["surroundings.line_active", "false", "true"]
    )
    await expect(page.locator("#env-assertions .bad")).to_have_count(0)

    # The trial's JSON download carries the same states.
    async with page.expect_download() as download_info:
        await page.locator("#failed-nav a[download]").click()
    path = await (await download_info.value).path()
    body = json.loads(path.read_text())
    state = body["customer_state"]
    assert state["before"]["device"]["network_connection_status"] == "no_service"
    assert state["after"]["device"]["network_connection_status"] == "connected"
    assert {c["path"] for c in state["changes"]} >= {"device.airplane_mode", "surroundings.line_active"}
    assert tab.errors == []


async def test_a_task_with_a_message_history_shows_it_as_the_conversations_beginning(
    tab: Tab, service: Telecom
) -> None:
    page = tab.page
    await page.goto(f"/ui/assessments/{service.history_id}/trials/update_task_with_message_history/0")
    await expect(page.locator("#trial-outcome")).to_have_text("passed")
    messages = page.locator("#transcript li.msg")
    marked = page.locator("#transcript li.msg:has(.badge.history)")
    await expect(marked).to_have_count(4)
    await expect(messages.first).to_contain_text("I need to create a task for the project review meeting.")
    await expect(messages.nth(4).locator(".badge.history")).to_have_count(0)  # the trial's own first message
    await expect(messages.nth(4)).to_contain_text(
        "scripted customer for task update_task_with_message_history"
    )
    assert tab.errors == []
