"""The web UI in Debian's Chromium against the real service: navigation, the grid, transcripts, the DB diff,
hostile text, compare, leaderboard, downloads, live progress."""

from __future__ import annotations

import re

from playwright.async_api import expect

from tests.ui.conftest import TASKS, TRIALS, Service, Tab


async def test_list_to_assessment_to_trial(tab: Tab, service: Service) -> None:
    page = tab.page
    await page.goto("/ui")
    await expect(page.locator("h1")).to_have_text("Assessments")
    rows = page.locator("table.list tbody tr")
    await expect(rows).to_have_count(2)
    await tab.shot("list")

    await page.locator(f'tr[data-assessment="{service.oracle_id}"] a').first.click()
    await expect(page).to_have_url(re.compile(f"/ui/assessments/{service.oracle_id}$"))
    grid = page.locator("#trial-grid")
    await expect(grid.locator("a.cell")).to_have_count(len(TASKS) * TRIALS)
    await tab.shot("assessment-oracle")

    await grid.locator("a.cell.o-passed").first.click()
    await expect(page.locator("#trial-outcome")).to_have_text("passed")
    await tab.shot("trial-oracle")
    assert tab.errors == []
