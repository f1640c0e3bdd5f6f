"""The vendor's loop in Debian's Chromium: from "my agent fails trials" to "this is what to fix".

A buggy agent (tests.support.agents.BuggyExecutor, its card named by a hostile string) is assessed twice on
four tasks x 2 trials, each task with its own bug (a missing write, a wrong argument, an extra write, a loop
until the step limit); between the runs the vendor fixes the first bug. Two oracles (one over another subset
of tasks) and a partial run share the leaderboard. The pages must say what went wrong per trial, filter and
list the failures, follow a task across runs, name the agent by its card everywhere, download CSV, tau2 and
trial JSON, and rank on the leaderboard only what is comparable."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from a2a.server.agent_execution import RequestContext
from a2a.server.events import EventQueue
from playwright.async_api import Browser, Locator, expect

from green_agent.core.limits import AgentLimits, display_name
from green_agent.reference_agents import serve_reference_agent
from green_agent.reference_agents.replies import Incoming
from retail_domain import RetailData
from tests.api.servers import poll, serve_green, serve_green_app
from tests.support.agents import BuggyExecutor, serve_executor
from tests.ui.conftest import PHONE, Tab, no_clipped_table, no_sideways_scroll, run_assessment

TASKS = ["0", "1", "5", "6"]
BUGS = {"0": "skip_write", "1": "wrong_payment", "5": "extra_write", "6": "loop"}
HOSTILE_CARD_NAME = (
    "<script>window.__pwned=1</script><b>bold</b>\u202eevil\u2066 agent\x00\x1b[31m\n\tname " + "A" * 5000
)
SHOWN_NAME = display_name(HOSTILE_CARD_NAME, AgentLimits().max_card_name_chars)


@dataclass(frozen=True)
class Runs:
    url: str
    buggy_agent: str
    first: str  # the buggy agent, every bug
    second: str  # the buggy agent after fixing task 0's missing write
    partial: str  # the buggy agent on a task needing the judge (none configured): partial
    oracle: str
    oracle_subset: str  # another oracle, over two tasks x 1 trial


@pytest.fixture(scope="module")
async def runs(tmp_path_factory: pytest.TempPathFactory, ui_data: RetailData) -> AsyncIterator[Runs]:
    database_url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('ui-vendor') / 'green_agent.db'}"
    buggy = BuggyExecutor(ui_data, dict(BUGS))
    async with (
        serve_executor(buggy, name=HOSTILE_CARD_NAME) as buggy_url,
        serve_reference_agent("oracle", data=ui_data) as oracle_url,
        serve_reference_agent("oracle", data=ui_data) as other_oracle_url,
        serve_green(database_url) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        body = {"agent_url": buggy_url, "tasks": {"task_ids": TASKS}, "trials": 2, "max_steps": 40}
        first = await run_assessment(client, body)
        del buggy.bugs["0"]
        second = await run_assessment(client, body)
        partial = await run_assessment(client, {**body, "tasks": {"task_ids": ["2"]}, "trials": 1})
        oracle = await run_assessment(client, {**body, "agent_url": oracle_url})
        subset = {"agent_url": other_oracle_url, "tasks": {"task_ids": ["0", "1"]}, "trials": 1}
        oracle_subset = await run_assessment(client, subset)
        yield Runs(url, buggy_url.rstrip("/"), first, second, partial, oracle, oracle_subset)


@pytest.fixture
async def vendor(browser: Browser, runs: Runs, artifacts: Path) -> AsyncIterator[Tab]:
    """A desktop tab on this module's service that records console errors."""
    context = await browser.new_context(base_url=runs.url, viewport={"width": 1280, "height": 900})
    page = await context.new_page()
    tab = Tab(page, artifacts)
    page.on("console", lambda m: tab.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: tab.errors.append(str(e)))
    try:
        yield tab
    finally:
        await context.close()


async def test_grid_colours_filter_and_failing_tasks(vendor: Tab, runs: Runs) -> None:
    page = vendor.page
    await page.goto(f"/ui/assessments/{runs.first}")
    grid = page.locator("#trial-grid")
    for task, kind in (
        ("0", "missing_action"),
        ("1", "wrong_arguments"),
        ("5", "extra_write"),
        ("6", "termination"),
    ):
        await expect(grid.locator(f'.task[data-task="{task}"] a.cell.o-{kind}')).to_have_count(2)
    filters = page.locator("#kind-filter")
    # Task 6's loop never made its write either: its squares say termination (the first kind), and it
    # counts among the missing writes.
    missing = filters.locator('[data-kind="missing_action"]')
    await expect(missing).to_have_text(re.compile(r"missing action \(4\)"))
    await expect(filters.locator('[data-kind="tool_errors"]')).to_contain_text("tool errors (2)")  # task 1's
    failing = page.locator("#failing-tasks tbody tr")
    await expect(failing).to_have_count(4)
    await expect(failing.filter(has_text="missing exchange_delivered_order_items")).to_have_count(2)  # 0, 6
    await expect(page.locator('#failing-tasks tr[data-task="1"]')).to_contain_text(
        "wrong payment_method_id to exchange_delivered_order_items"
    )
    await expect(page.locator('#failing-tasks tr[data-task="6"]')).to_contain_text("ended by max_steps")
    await expect(page.locator("#common-failures")).to_contain_text("extra write modify_user_address")
    await vendor.shot("vendor-assessment")

    await filters.locator('[data-kind="wrong_arguments"]').click()
    await expect(page).to_have_url(re.compile(r"\?kind=wrong_arguments"))
    await expect(grid.locator("a.cell.dim")).to_have_count(6)  # every square but task 1's two
    await expect(grid.locator('.task[data-task="1"] a.cell.dim')).to_have_count(0)
    await expect(failing).to_have_count(1)
    await expect(page.locator("#common-failures")).not_to_contain_text("missing exchange")

    # From the filtered list to the trials of that kind, one after the other.
    await page.locator('#failing-tasks tr[data-task="1"] a', has_text="trial 0").click()
    await expect(page.locator("h1")).to_contain_text("Task 1, trial 0")
    nav = page.locator("#failed-nav")
    await expect(nav).to_contain_text("no failed trial before this one with wrong arguments")
    await nav.get_by_role("link", name=re.compile("next failed trial")).click()
    await expect(page.locator("h1")).to_contain_text("Task 1, trial 1")
    await expect(nav).to_contain_text("no failed trial after this one with wrong arguments")
    await nav.get_by_role("link", name="any failure").click()  # leave the filter: on to task 5
    await nav.get_by_role("link", name=re.compile("next failed trial")).click()
    await expect(page.locator("h1")).to_contain_text("Task 5, trial 0")
    assert vendor.errors == []


async def test_each_failed_trial_says_what_went_wrong_and_what_the_customer_wanted(
    vendor: Tab, runs: Runs, ui_data: RetailData
) -> None:
    page = vendor.page
    base = f"/ui/assessments/{runs.first}/trials"
    await page.goto(f"{base}/0/0")
    failures = page.locator("#failures li")
    await expect(failures).to_have_count(1)
    await expect(failures.first).to_have_attribute("data-kind", "missing_action")
    await expect(failures.first).to_contain_text("exchange_delivered_order_items was never called")
    await expect(failures.first).to_contain_text('"new_item_ids":["7706410293","7747408585"]')
    scenario = ui_data.tasks["0"].user_scenario.instructions
    reason = scenario if isinstance(scenario, str) else scenario.reason_for_call
    await expect(page.locator("#scenario")).to_contain_text(reason.split("\n")[0][:60])
    await expect(page.locator("#failed-nav")).to_contain_text("no failed trial before this one")
    await vendor.shot("vendor-trial-missing")

    await page.goto(f"{base}/1/0")
    wrong = page.locator('#failures li[data-kind="wrong_arguments"]')
    await expect(wrong).to_contain_text(
        'payment_method_id = "gift_card_0000000"; gold has "credit_card_9513926"'
    )
    await expect(page.locator('#failures li[data-kind="tool_errors"]')).to_contain_text("returned an error")

    await page.goto(f"{base}/5/1")
    await expect(page.locator('#failures li[data-kind="extra_write"]')).to_contain_text("modify_user_address")
    await page.goto(f"{base}/6/0")
    await expect(page.locator('#failures li[data-kind="termination"]')).to_contain_text("step limit")

    # The trial as JSON, from its page: the REST shape, failures included.
    await page.goto(f"{base}/1/0")
    async with page.expect_download() as download:
        await page.get_by_role("link", name="this trial as JSON").click()
    trial = json.loads((await (await download.value).path()).read_text())
    assert trial["task_id"] == "1" and trial["trial"] == 0
    wrong_json = [f for f in trial["failures"] if f["kind"] == "wrong_arguments"]
    assert [(f["action"], f["argument"], f["expected"], f["got"]) for f in wrong_json] == [
        ("exchange_delivered_order_items", "payment_method_id", "credit_card_9513926", "gift_card_0000000")
    ]
    assert vendor.errors == []


async def test_csv_and_tau2_downloads_are_linked(vendor: Tab, runs: Runs) -> None:
    page = vendor.page
    await page.goto(f"/ui/assessments/{runs.first}")
    async with page.expect_download() as download:
        await page.get_by_role("link", name=re.compile("trials \\(CSV")).click()
    rows = list(csv.DictReader(io.StringIO((await (await download.value).path()).read_text())))
    assert [(r["task_id"], r["trial"]) for r in rows] == [(t, str(k)) for t in TASKS for k in range(2)]
    kinds = {r["task_id"]: r["failure_kinds"] for r in rows}
    assert kinds == {
        "0": "missing_action",
        "1": "wrong_arguments;tool_errors",
        "5": "extra_write",
        "6": "termination;missing_action",
    }
    assert rows[0]["link"] == f"/ui/assessments/{runs.first}/trials/0/0"
    async with page.expect_download() as download:
        await page.get_by_role("link", name=re.compile("tau2 results file")).click()
    document = json.loads((await (await download.value).path()).read_text())
    assert len(document["simulations"]) == len(TASKS) * 2
    assert vendor.errors == []


async def test_a_task_across_runs_of_the_agent(vendor: Tab, runs: Runs) -> None:
    page = vendor.page
    await page.goto(f"/ui/assessments/{runs.second}/trials/0/0")  # fixed in the second run
    await expect(page.locator("#trial-outcome")).to_have_text("passed")
    history = page.locator("#task-history tbody tr")
    await expect(history).to_have_count(2)  # the partial run never ran task 0; the oracle is another agent
    now, before = history.nth(0), history.nth(1)
    await expect(now).to_have_class("current")
    await expect(now.locator("td.num")).to_have_text("2/2")
    await expect(before.locator("td.num")).to_have_text("0/2")
    await expect(before.locator("a.cell.o-missing_action")).to_have_count(2)
    await before.locator("a.cell").first.click()
    await expect(page).to_have_url(re.compile(f"/ui/assessments/{runs.first}/trials/0/0$"))
    await expect(page.locator("#task-history tr.current")).to_have_attribute("data-assessment", runs.first)
    assert vendor.errors == []


async def test_the_agent_is_named_by_its_card_and_a_hostile_name_stays_inert(vendor: Tab, runs: Runs) -> None:
    assert SHOWN_NAME is not None and len(SHOWN_NAME) == AgentLimits().max_card_name_chars
    assert SHOWN_NAME.startswith("<script>window.__pwned=1</script><b>") and SHOWN_NAME.endswith("…")
    assert "evil agent [31m name" in SHOWN_NAME  # bidi controls dropped, control characters made spaces
    page = vendor.page
    pages = {
        "list": "/ui",
        "assessment": f"/ui/assessments/{runs.first}",
        "compare": f"/ui/compare?id={runs.first}&id={runs.second}",
        "leaderboard": "/ui/leaderboard",
    }
    for name, path in pages.items():
        await page.goto(path)
        names = page.locator(f'.agent[data-agent-url="{runs.buggy_agent}"] bdi.agent-name')
        assert await names.count() >= 1, name
        for shown in await names.all_text_contents():
            assert shown == SHOWN_NAME, (name, shown)
        assert await page.locator("main script, main b").count() == 0, name
        text = await page.locator("main").text_content() or ""
        assert "\u202e" not in text and "\x00" not in text and "A" * 100 not in text, name
        assert await page.evaluate("window.__pwned") is None, name
    # Pickers name it too (as text: an <option> holds no markup).
    await page.goto("/ui")
    option = page.locator(f'select[name="agent"] option[value="{runs.buggy_agent}"]')
    await expect(option).to_have_text(f"{SHOWN_NAME} · {runs.buggy_agent.split('://')[1]}")
    await page.goto("/ui/compare")
    await expect(page.locator("#pick-0 option", has_text=runs.first[:8])).to_contain_text(SHOWN_NAME)
    await expect(page.locator("#pick-0 option", has_text=runs.oracle[:8])).to_contain_text("reference-oracle")
    await vendor.shot("vendor-hostile-name")
    assert vendor.errors == []


async def test_leaderboard_ranks_only_what_is_comparable(vendor: Tab, runs: Runs) -> None:
    page = vendor.page
    await page.goto("/ui/leaderboard")
    boards = page.locator("section.board")
    await expect(boards).to_have_count(2)  # four tasks x 2 trials, and the other oracle's 2 tasks x 1
    wide, narrow = boards.nth(0), boards.nth(1)
    await expect(wide.locator("h2")).to_have_text("Over 4 tasks (0–1, 5–6) × 2 trials, customer scripted")
    await expect(narrow.locator("h2")).to_have_text("Over 2 tasks (0–1) × 1 trial, customer scripted")
    rows = wide.locator("tbody tr")
    await expect(rows).to_have_count(2)
    # One row per agent, from its most recent complete run (the second buggy run, not the first).
    await expect(rows.nth(0)).to_have_attribute("data-assessment", runs.oracle)
    await expect(rows.nth(1)).to_have_attribute("data-assessment", runs.second)
    await expect(page.locator(f'tr[data-assessment="{runs.first}"]')).to_have_count(0)
    # With their error bars: the oracle's four tasks all pass (no spread), the buggy run's 0, 1, 0, 0.
    await expect(rows.nth(0).locator('[data-column="avg_reward"]')).to_have_text("1.000 ± 0.000")
    await expect(rows.nth(1).locator('[data-column="avg_reward"]')).to_have_text("0.250 ± 0.490")
    await expect(narrow.locator("tbody tr")).to_have_count(1)
    await expect(narrow.locator("tbody tr td").first).to_have_text("1")  # ranked within its own coverage
    await expect(page.locator("body")).to_contain_text("1 partial assessment is hidden")
    await expect(page.locator("#partial-runs")).to_have_count(0)

    await page.get_by_role("link", name="Include partial assessments").click()
    partial = page.locator("#partial-runs tbody tr")
    await expect(partial).to_have_count(1)
    await expect(partial).to_have_attribute("data-assessment", runs.partial)
    await expect(partial.locator(".covers")).to_contain_text("partial 0 of 1 trials scored, on 0 of 1 task")
    await expect(partial.locator(".covers")).to_contain_text("not judged")
    await expect(boards.nth(0).locator("tbody tr")).to_have_count(2)  # the ranking is unchanged
    await vendor.shot("vendor-leaderboard")
    assert vendor.errors == []


async def test_every_page_fits_a_phone(browser: Browser, runs: Runs, artifacts: Path) -> None:
    """At 390 px: no sideways scrolling, no table clipped in a scrolling box or squeezed until its words
    break (tests/ui/test_layout.py's checks), over these pages' failure lists, history and leaderboards."""
    context = await browser.new_context(base_url=runs.url, viewport=PHONE, is_mobile=True)
    phone = Tab(await context.new_page(), artifacts)
    try:
        for name, path in {
            "list": "/ui",
            "assessment": f"/ui/assessments/{runs.first}",
            "assessment-filtered": f"/ui/assessments/{runs.first}?kind=missing_action",
            "trial-missing": f"/ui/assessments/{runs.first}/trials/0/0",
            "trial-wrong": f"/ui/assessments/{runs.first}/trials/1/0",
            "trial-extra": f"/ui/assessments/{runs.first}/trials/5/0",
            "trial-loop": f"/ui/assessments/{runs.first}/trials/6/0",
            "trial-history": f"/ui/assessments/{runs.second}/trials/0/1",
            "compare": f"/ui/compare?id={runs.first}&id={runs.second}",
            "leaderboard": "/ui/leaderboard?partial=true",
        }.items():
            await phone.page.goto(path)
            await no_sideways_scroll(phone)
            await no_clipped_table(phone)
            await phone.shot(f"phone-vendor-{name}")
    finally:
        await context.close()


class GatedBuggy(BuggyExecutor):
    """BuggyExecutor whose conversations on each task wait until the test opens that task's gate: the test
    decides which trial finishes when, while the page watches."""

    def __init__(self, data: RetailData, bugs: dict[str, str], tasks: list[str]) -> None:
        super().__init__(data, bugs)
        self.gates = {task: asyncio.Event() for task in tasks}

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        match = re.search(r"scripted customer for task ([^\s.]+)", Incoming.of(context.message).text)
        if match and match.group(1) in self.gates:  # the first message names the task
            await self.gates[match.group(1)].wait()
        await super().execute(context, event_queue)


async def square(cell: Locator) -> tuple[str | None, str | None]:
    """A grid square as the page has it: its classes and its link, as written in the DOM."""
    return await cell.get_attribute("class"), await cell.get_attribute("href")


async def test_squares_added_live_follow_the_kind_filter(
    browser: Browser, ui_data: RetailData, artifacts: Path, tmp_path: Path
) -> None:
    """A page opened with ?kind=missing_action while the run goes: each square the event stream adds is
    dimmed unless its trial has a missing write, and links on with the filter, exactly as the page renders
    the same squares once the run ends and it reloads."""
    tasks = ["0", "5", "1"]  # a missing write, an extra write, a pass
    agent = GatedBuggy(ui_data, {"0": "skip_write", "5": "extra_write"}, tasks)
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'green_agent.db'}"
    async with (
        serve_executor(agent) as agent_url,
        serve_green_app(database_url) as (url, app),
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        context = await browser.new_context(base_url=url, viewport={"width": 1280, "height": 900})
        tab = Tab(await context.new_page(), artifacts)
        page = tab.page
        page.on("console", lambda m: tab.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: tab.errors.append(str(e)))
        try:
            body = {"agent_url": agent_url, "tasks": {"task_ids": tasks}, "trials": 1, "concurrency": 3}
            created = await client.post("/assessments", json=body)
            assert created.status_code == 202, created.text
            assessment_id = created.json()["id"]
            await page.goto(f"/ui/assessments/{assessment_id}?kind=missing_action")
            grid = page.locator("#trial-grid")
            await expect(grid.locator(".cell.o-pending")).to_have_count(3)
            # The page's stream is subscribed before any trial ends: no square can miss its event.
            hub = app.state.runtime.service.hub
            for _ in range(200):
                if hub._subscribers.get(assessment_id):
                    break
                await asyncio.sleep(0.05)
            else:
                raise AssertionError("the page never subscribed to the run's progress")

            agent.gates["0"].set()
            missing = grid.locator('.task[data-task="0"] a.cell')
            await expect(missing).to_have_class("cell o-missing_action", timeout=30_000)  # not dimmed
            agent.gates["5"].set()
            extra = grid.locator('.task[data-task="5"] a.cell')
            await expect(extra).to_have_class("cell o-extra_write dim", timeout=30_000)
            live = {"0": await square(missing), "5": await square(extra)}
            assert live["0"][1] == f"/ui/assessments/{assessment_id}/trials/0/0?kind=missing_action"
            await expect(grid.locator(".cell.o-pending")).to_have_count(1)  # task 1 still running
            await tab.shot("vendor-live-filtered", full_page=False)

            agent.gates["1"].set()
            await poll(client, f"/assessments/{assessment_id}", lambda b: b["status"] == "completed")
            # It reloads when the run ends: the server's squares are the ones the stream drew.
            await expect(page.locator(".headline")).to_contain_text("average reward", timeout=30_000)
            for task, drawn in live.items():
                assert await square(grid.locator(f'.task[data-task="{task}"] a.cell')) == drawn
            await expect(grid.locator('.task[data-task="1"] a.cell')).to_have_class("cell o-passed dim")
            assert tab.errors == []
        finally:
            await context.close()


async def test_the_live_stream_opens_with_the_squares_of_trials_already_stored(
    ui_data: RetailData, tmp_path: Path
) -> None:
    """A page drawn before a trial finished, whose stream subscribes after it did: the stream's first events
    carry that trial's square, rather than leaving it pending until the page reloads."""
    tasks = ["0", "1"]
    agent = GatedBuggy(ui_data, {"0": "skip_write"}, tasks)
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'green_agent.db'}"
    async with (
        serve_executor(agent) as agent_url,
        serve_green_app(database_url) as (url, _app),
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        body = {"agent_url": agent_url, "tasks": {"task_ids": tasks}, "trials": 1, "concurrency": 2}
        created = await client.post("/assessments", json=body)
        assert created.status_code == 202, created.text
        assessment_id = created.json()["id"]
        agent.gates["0"].set()
        await poll(client, f"/assessments/{assessment_id}", lambda b: b["progress"]["trials_done"] == 1)
        squares = []
        params = {"id": assessment_id, "trials": "true"}
        async with client.stream("GET", "/ui/live", params=params) as stream, asyncio.timeout(10):
            event = ""
            async for line in stream.aiter_lines():
                if line.startswith("event:"):
                    event = line.removeprefix("event:").strip()
                elif line.startswith("data:") and event == "trial":
                    squares.append(json.loads(line.removeprefix("data:")))
                    break  # task 1 is still held: only a stored trial can have sent this
        agent.gates["1"].set()
        await poll(client, f"/assessments/{assessment_id}", lambda b: b["status"] == "completed")
    assert [(s["task_id"], s["trial"], s["outcome"], s["kinds"]) for s in squares] == [
        ("0", 0, "missing_action", ["missing_action"])
    ]
    assert squares[0]["href"] == f"/ui/assessments/{assessment_id}/trials/0/0"
