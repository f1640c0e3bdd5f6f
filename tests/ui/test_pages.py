"""The web UI in Debian's Chromium against the real service: navigation, the grid, transcripts, the DB diff,
hostile text, compare, leaderboard, downloads and live progress; no page logs a console error (a CSP
violation would be one)."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
from playwright.async_api import expect

from tests.ui.conftest import HOSTILE_REASON, TASKS, TRIALS, Service, Tab


async def test_list_to_assessment_to_trial(tab: Tab, service: Service) -> None:
    page = tab.page
    await page.goto("/")  # a browser asking for / is sent to the UI
    await expect(page).to_have_url(re.compile("/ui$"))
    await expect(page.locator("h1")).to_have_text("Assessments")
    oracle_row = page.locator(f'tr[data-assessment="{service.oracle_id}"]')
    await expect(oracle_row).to_contain_text("completed")
    await expect(oracle_row.locator(".badge.complete")).to_have_text("complete")
    # The judge was down for the failing agent's task 2: those trials are excluded, the report partial.
    await expect(page.locator(f'tr[data-assessment="{service.sloppy_id}"] .badge.partial')).to_have_text(
        "partial"
    )
    await tab.shot("list")

    await page.locator(f'tr[data-assessment="{service.oracle_id}"] a').first.click()
    await expect(page).to_have_url(re.compile(f"/ui/assessments/{service.oracle_id}$"))
    await expect(page.locator(".headline")).to_contain_text("0.750")
    # Task rewards 1, 1, 1, 0: sd 0.5, stderr 0.25 over the 4 tasks, 1.96 x 0.25 = 0.490.
    await expect(page.locator("#avg-reward .big")).to_have_text("0.750 ± 0.490")
    await expect(page.locator("#error-bars")).to_contain_text("95% interval over the 4 tasks scored")
    await expect(page.locator("#error-bars")).to_contain_text("differ by 0.990")  # 2.8 x sqrt(2) x 0.25
    await expect(page.locator("svg.chart rect")).to_have_count(TRIALS)  # pass^1, pass^2
    await expect(page.locator("svg.chart path.whisker")).to_have_count(TRIALS)  # their 95% intervals
    grid = page.locator("#trial-grid")
    await expect(grid.locator("a.cell")).to_have_count(len(TASKS) * TRIALS)
    # The judge fails task 3's assertion: the oracle did the right thing to the DB, but not in its words.
    await expect(grid.locator("a.cell.o-passed")).to_have_count(6)
    await expect(grid.locator('.task[data-task="3"] a.cell.o-nl_assertion')).to_have_count(TRIALS)
    await expect(page.locator("#common-failures")).to_contain_text("NL assertion not met: Agent should tell")
    judge_usage = page.locator("#usage tbody tr").filter(has_text="judge")
    await expect(judge_usage).to_contain_text("fake-judge")
    await expect(judge_usage.locator("td").nth(2)).to_have_text("4")  # one call per trial of tasks 2 and 3
    await tab.shot("assessment-oracle")

    await grid.locator('a.cell[href$="/trials/1/0"]').click()
    await expect(page.locator("h1")).to_contain_text("Task 1, trial 0")
    await expect(page.locator("#trial-outcome")).to_have_text("passed")
    await expect(page.locator("#db-diff")).to_contain_text("equals the gold outcome")
    chat = page.locator("#transcript .msg")
    await expect(chat.first).to_contain_text("Hi! How can I help you today?")
    await expect(page.locator("#transcript .call .tool-name").first).to_have_text("find_user_id_by_name_zip")
    await expect(page.locator("#transcript .msg.tool").first).to_be_visible()
    await tab.shot("trial-oracle")

    await page.goto(f"/ui/assessments/{service.oracle_id}/trials/3/1")
    await expect(page.locator("#trial-outcome")).to_have_text("NL assertion failed")
    unmet = page.locator('#failures li[data-kind="nl_assertion"]')
    await expect(unmet).to_contain_text("NL assertion 1 not met")
    verdict = page.locator("#nl tbody tr")
    await expect(verdict).to_have_count(1)
    await expect(verdict).to_contain_text("failed")
    await expect(verdict).to_contain_text(HOSTILE_REASON)  # the judge's reason, as text
    assert await page.locator("#nl img").count() == 0
    assert await page.evaluate("window.__pwned") is None
    assert tab.errors == []


async def test_failed_trial_shows_db_diff_and_hostile_text_stays_text(tab: Tab, service: Service) -> None:
    page = tab.page
    response = await page.goto(f"/ui/assessments/{service.sloppy_id}")
    assert response is not None
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy
    grid = page.locator("#trial-grid")
    await expect(grid.locator("a.cell.o-missing_action")).to_have_count(4)
    await expect(grid.locator("a.cell.o-excluded")).to_have_count(4)
    await expect(page.locator("#partial")).to_contain_text("4 trials excluded after infrastructure errors")
    # Task 3 needs the judge (down for this agent): its DB check failed, and it is left out all the same,
    # like task 2 whose DB check passed: which trials count never depends on whether they passed.
    await expect(grid.locator('.task[data-task="3"] a.cell.o-excluded')).to_have_count(2)
    await expect(grid.locator('.task[data-task="2"] a.cell.o-excluded')).to_have_count(2)
    await expect(page.locator("#common-failures")).to_contain_text("missing exchange_delivered_order_items")

    await grid.locator('a.cell[href$="/trials/0/0"]').click()
    await expect(page.locator("#trial-outcome")).to_have_text("missing action")
    # The agent skipped the exchange: the order's status is not what gold has.
    diff = page.locator("#db-diff table.diff tbody tr")
    status_row = diff.filter(has_text=re.compile(r"orders/#W\d+\.status"))
    await expect(status_row).to_have_count(1)
    await expect(status_row).to_contain_text("exchange requested")
    await expect(status_row).to_contain_text("delivered")
    await expect(page.locator("#protocol-warnings li")).to_have_count(1)  # the bare-text reply
    # The bogus lookup and its error result are in the conversation, marked.
    await expect(page.locator("#transcript .call").first).to_contain_text("#W0000000")
    await expect(page.locator("#transcript .msg.tool.error").first).to_contain_text("Error")

    # Hostile agent text is shown as text: no script ran, no element was made from it.
    await expect(page.locator("#transcript")).to_contain_text('<script>window.__pwned = "script"</script>')
    await expect(page.locator("#transcript")).to_contain_text("<b>bold?</b>")
    assert await page.evaluate("window.__pwned") is None
    assert await page.locator("#transcript script, #transcript img, #transcript b").count() == 0
    await tab.shot("trial-failed-db-diff")
    assert tab.errors == []


async def test_compare_two_assessments(tab: Tab, service: Service) -> None:
    page = tab.page
    await page.goto("/ui")
    await page.locator(f'input[value="{service.sloppy_id}"]').check()
    await page.locator(f'input[value="{service.oracle_id}"]').check()
    await page.get_by_role("button", name="Compare the two selected").click()
    await expect(page).to_have_url(re.compile("/ui/compare"))
    # Newest first in the list: A is the failing agent, B the oracle, so tasks 0 and 1 got better.
    await expect(page.locator("#change-summary")).to_contain_text("0 tasks broke")
    await expect(page.locator("#change-summary")).to_contain_text("2 got better")
    await expect(page.locator('#task-deltas tr[data-task="0"]')).to_have_class("c-better")
    await expect(page.locator('#task-deltas tr[data-task="2"]')).to_contain_text("not scored")
    # Over the two tasks both scored (0 and 1), B solved both and A neither: a real difference, named.
    verdict = page.locator("#verdict")
    await expect(verdict).to_have_text("B is ahead of A by 1.000 ± 0.000 in mean reward (p < 0.001, 2 tasks)")
    await expect(verdict).to_have_class(re.compile("real"))
    average = page.locator('tr[data-row="average reward"] .verdict-cell')
    await expect(average).to_contain_text("a real difference")
    await expect(page.locator("#noise-note")).to_have_count(0)

    await page.goto(f"/ui/compare?id={service.oracle_id}&id={service.sloppy_id}")
    await expect(page.locator("#change-summary")).to_contain_text("2 tasks broke")
    await expect(page.locator("#task-deltas tbody tr").first).to_have_class("c-worse")
    await tab.shot("compare")

    await page.goto(f"/ui/compare?id={service.oracle_id}")
    await expect(page.locator(".error")).to_contain_text("exactly two")
    assert tab.errors == []


async def test_leaderboard_hides_partial_runs_unless_asked(tab: Tab, service: Service) -> None:
    page = tab.page
    await page.goto("/ui/leaderboard")
    rows = page.locator("#leaderboard tbody tr")
    # The failing agent's run is partial (judge down), so it is hidden unless asked for.
    await expect(page.locator("body")).to_contain_text("1 partial assessment is hidden")
    await expect(rows).to_have_count(1)
    await expect(rows.first).to_contain_text(service.oracle_id[:8])
    await expect(rows.first.locator('[data-column="avg_reward"]')).to_have_text("0.750 ± 0.490")
    await page.get_by_role("link", name="Include partial assessments").click()
    await expect(rows).to_have_count(1)  # never ranked with the complete ones
    partial = page.locator("#partial-runs tbody tr")
    await expect(partial).to_have_count(1)
    await expect(partial).to_contain_text(service.sloppy_id[:8])
    await expect(partial.locator(".covers")).to_contain_text("4 of 8 trials scored, on 2 of 4 tasks (0–1)")
    await expect(page.locator("#leaderboard thead")).to_contain_text("pass^2")
    await tab.shot("leaderboard")
    assert tab.errors == []


async def test_downloads(tab: Tab, service: Service) -> None:
    page = tab.page
    await page.goto(f"/ui/assessments/{service.oracle_id}")
    async with page.expect_download() as report_download:
        await page.get_by_role("link", name="report (JSON)").click()
    path = await (await report_download.value).path()
    report = json.loads(path.read_text())
    assert report["id"] == service.oracle_id and report["report"]["avg_reward"] == 0.75
    async with page.expect_download() as leaderboard_download:
        await page.get_by_role("link", name="leaderboard results file (JSON)").click()
    results = json.loads((await (await leaderboard_download.value).path()).read_text())
    assert results["results"][0]["assessment_id"] == service.oracle_id
    assert results["results"][0]["pass_rate"] == 75.0
    assert tab.errors == []


async def test_live_progress_while_a_run_is_going(tab: Tab, service: Service) -> None:
    tasks = ["0", "1", "5", "6", "7", "8"]
    async with httpx.AsyncClient(base_url=service.url, timeout=30) as client:
        # One trial at a time: the bars have time to move.
        body: dict[str, Any] = {"agent_url": service.slow_agent_url, "tasks": {"task_ids": tasks}}
        body |= {"trials": 1, "concurrency": 1}
        created = await client.post("/assessments", json=body)
        assert created.status_code == 202, created.text
        assessment_id = created.json()["id"]

    page = tab.page
    detail = await page.context.new_page()
    detail.on("console", lambda m: tab.errors.append(f"console: {m.text}") if m.type == "error" else None)
    await page.goto("/ui")
    await detail.goto(f"/ui/assessments/{assessment_id}")
    await expect(detail.locator(".live")).to_contain_text("follows the progress live")
    # Finished trials colour their squares as they come in, before the page reloads.
    await expect(detail.locator("#trial-grid a.cell.o-passed").first).to_be_visible(timeout=30_000)
    await expect(detail.locator("#trial-grid .cell.o-pending").first).to_be_visible()

    bar = f'[data-progress-for="{assessment_id}"] progress'
    start = await page.evaluate(f"document.querySelector('{bar}').value")
    assert start < len(tasks), "the run finished before the page could watch it"
    # The bar moves without a reload (server-sent events), then the badge turns completed.
    await page.wait_for_function(
        "([selector, start]) => document.querySelector(selector).value > start",
        arg=[bar, start],
        timeout=30_000,
    )
    await tab.shot("list-live", full_page=False)
    badge = page.locator(f'[data-status-for="{assessment_id}"]')
    await expect(badge).to_have_text("completed", timeout=60_000)
    await expect(page.locator(f'[data-progress-for="{assessment_id}"] .count')).to_have_text(
        f"{len(tasks)}/{len(tasks)}"
    )
    # The assessment page reloads itself when the run ends, showing the report.
    await expect(detail.locator(".headline")).to_contain_text("average reward", timeout=30_000)
    await expect(detail.locator("#trial-grid a.cell")).to_have_count(len(tasks))
    assert tab.errors == []
