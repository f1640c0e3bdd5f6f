"""The compare page in Chromium when the difference is inside the noise (one task broke, and the page says
that this is not a result), and pages of a report stored before error bars existed. Its own module, so that
the assessments it adds do not change the other pages' lists."""

from __future__ import annotations

import json
import re

import httpx
import sqlalchemy as sa
from playwright.async_api import expect

from api.db.engine import create_engine
from green_agent.reference_agents import serve_app
from green_agent.reference_agents.hostile import HostileAgent
from retail_domain import RetailData
from tests.engine.test_uncertainty import STORED_V2
from tests.ui.conftest import TASKS, TRIALS, Service, Tab, run_assessment


async def test_a_difference_inside_the_noise_is_not_presented_as_a_result(
    tab: Tab, service: Service, ui_data: RetailData
) -> None:
    # The oracle's tasks 0-3 score 1, 1, 1, 0 (the judge fails task 3). This agent gives up on task 0 only:
    # 0, 1, 1, 0. B - A per task: -1, 0, 0, 0: mean -0.25, sd 0.5, stderr 0.25; ci95 -0.25 +- 0.49 =
    # [-0.740, +0.240]; p = 2 (1 - Phi(1)) = 0.32; detectable 2.8 x 0.25 = 0.700.
    async with (
        serve_app(HostileAgent(ui_data, {"0": []}).app) as one_off_url,
        httpx.AsyncClient(base_url=service.url, timeout=30) as client,
    ):
        selection = {"tasks": {"task_ids": TASKS}, "trials": TRIALS, "concurrency": 8}
        one_off = await run_assessment(client, {"agent_url": one_off_url, **selection})
    page = tab.page
    await page.goto(f"/ui/compare?id={service.oracle_id}&id={one_off}")
    verdict = page.locator("#verdict")
    await expect(verdict).to_have_text(
        "no difference in mean reward this comparison can detect (smaller than ±0.700; "
        "B - A = -0.250 ± 0.490, p = 0.32, 4 tasks)"
    )
    await expect(verdict).to_have_class(re.compile("noise"))
    row = page.locator('tr[data-row="average reward"]')
    await expect(row.locator(".diff")).to_have_text("-0.250")
    await expect(row).to_contain_text("[-0.740, +0.240]")
    await expect(row.locator(".verdict-cell")).to_contain_text("within the noise")
    await expect(row.locator(".verdict-cell")).not_to_contain_text("real")
    await expect(page.locator('tr[data-row="pass^2"] .verdict-cell')).to_contain_text("within the noise")
    # The task that broke is listed, but not as a finding.
    await expect(page.locator("#change-summary")).to_contain_text("1 task broke")
    await expect(page.locator("#noise-note")).to_contain_text("not evidence that B is better or worse")
    await tab.shot("compare-noise")
    assert tab.errors == []


async def test_a_report_stored_before_error_bars_still_renders(tab: Tab, service: Service) -> None:
    """An assessment whose stored report is schema version 2 (no `stats`): its page shows the bare numbers
    and says why there are no error bars; comparing it still works (the comparison reads the trials)."""
    async with httpx.AsyncClient(base_url=service.url, timeout=30) as client:
        body = {"agent_url": (await client.get(f"/assessments/{service.oracle_id}")).json()["agent_url"]}
        old = await run_assessment(client, {**body, "tasks": {"task_ids": ["0", "1"]}})
    stored = {**STORED_V2, "task_rewards": {"0": 1.0, "1": 1.0}, "avg_reward": 1.0, "pass_hat_k": {"1": 1.0}}
    engine = create_engine(service.database_url)
    try:
        async with engine.begin() as connection:
            await connection.execute(
                sa.text("UPDATE assessments SET report = :report WHERE id = :id"),
                {"report": json.dumps(stored), "id": old},
            )
    finally:
        await engine.dispose()
    page = tab.page
    await page.goto(f"/ui/assessments/{old}")
    await expect(page.locator("#avg-reward .big")).to_have_text("1.000")
    await expect(page.locator("#error-bars")).to_contain_text("stored before they existed")
    await page.goto(f"/ui/compare?id={old}&id={service.oracle_id}")
    await expect(page.locator('tr[data-row="average reward"] td').nth(1)).to_have_text("1.000")
    await expect(page.locator("#verdict")).to_contain_text("2 tasks")
    assert tab.errors == []
