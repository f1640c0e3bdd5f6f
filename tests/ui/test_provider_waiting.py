"""The assessment page while our LLM provider is down, in Chromium (issue 27): the live line says
"waiting for fake at HOST: down since HH:MM:SS" and clears once the endpoint answers; a cancelled
assessment's page says how to continue it, and after a retry its page lists both attempts. The service runs
with the customer on the fake provider (tests/support/fake_llm.py), which answers 503 for a few seconds."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Browser, expect

from green_agent.reference_agents import serve_reference_agent
from retail_domain import RetailData, load_retail_data
from tests.api.servers import poll, serve_green
from tests.support.fake_llm import FakeLLM, ProviderRules, scenario_customer, serve_fake_llm

TASKS = ["0", "1", "5", "6", "7", "8"]
"""Scored on the DB alone: no judge."""


@dataclass(frozen=True)
class Green:
    url: str
    agent_url: str
    llm: FakeLLM


@pytest.fixture(scope="module")
async def green(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Green]:
    data: RetailData = load_retail_data()
    database_url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('ui-waiting') / 'green_agent.db'}"
    rules = ProviderRules(outage_from_s=1.0, outage_s=4.0)
    async with (
        serve_fake_llm(scenario_customer(data), rules=rules) as llm,
        serve_reference_agent("oracle", data=data, delay_s=0.05) as agent_url,
    ):
        model = {"model": "fake", "base_url": llm.base_url}
        settings = {"user_models": {"fake": model}, "default_user_model": "fake", "llm_retry_backoff_s": 0.1}
        async with serve_green(database_url, **settings) as url:
            yield Green(url, agent_url, llm)


async def test_the_page_says_what_the_run_waits_for_and_how_to_continue(
    browser: Browser, green: Green, tmp_path: Path
) -> None:
    context = await browser.new_context(base_url=green.url, viewport={"width": 1280, "height": 900})
    page = await context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        async with httpx.AsyncClient(base_url=green.url, timeout=30) as client:
            body = {"agent_url": green.agent_url, "tasks": {"task_ids": TASKS}, "concurrency": 2}
            green.llm.started_at = time.monotonic()  # the outage: from a second into the run, for 4 s
            assessment_id = (await client.post("/assessments", json=body)).json()["id"]
            await page.goto(f"/ui/assessments/{assessment_id}")
            waiting = page.locator(f'[data-waiting-for="{assessment_id}"]')
            await expect(waiting).to_contain_text("waiting for fake at 127.0.0.1:", timeout=20_000)
            await expect(waiting).to_contain_text(" down since ")
            await page.screenshot(path=str(tmp_path / "waiting.png"))
            await expect(waiting).to_be_hidden(timeout=30_000)  # it answers again, and the line goes
            await expect(page.locator(".headline")).to_contain_text("average reward", timeout=60_000)
            assert await page.locator("#attempts").count() == 0  # one attempt: no history to show

            # A cancelled one says how to continue it; after the retry its page lists both attempts.
            cancelled_id = (await client.post("/assessments", json=body)).json()["id"]
            path = f"/assessments/{cancelled_id}"
            await poll(client, path, lambda b: b["progress"]["trials_done"] >= 1, timeout_s=60)
            await client.post(f"{path}/cancel")
            await page.goto(f"/ui{path}")
            await expect(page.locator("#retry-hint")).to_contain_text(f"green-agent retry {cancelled_id}")
            assert (await client.post(f"{path}/retry")).status_code == 202
            await poll(client, path, lambda b: b["status"] == "completed", timeout_s=60)
            await page.goto(f"/ui{path}")
            rows = page.locator("#attempts tbody tr")
            await expect(rows).to_have_count(2)
            await expect(rows.nth(0)).to_contain_text("cancelled")
            await expect(rows.nth(1)).to_contain_text("never run")
            await expect(rows.nth(1)).to_contain_text("completed")
            assert await page.locator("#retry-hint").count() == 0  # nothing left to retry
    finally:
        await context.close()
    assert errors == []
