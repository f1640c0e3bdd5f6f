"""Fixtures of the browser tests: the real service (uvicorn on loopback, SQLite) holding a finished oracle
run and a failing agent's run, and Debian's Chromium driven by Playwright.

Chromium is the system one (/usr/bin/chromium, or $CHROMIUM_PATH): Playwright never downloads a browser
here. Screenshots go to $GREEN_AGENT_UI_ARTIFACTS (default: a folder under pytest's temporary directory).
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Browser, ConsoleMessage, Error, Page, ViewportSize, async_playwright

from green_agent.reference_agents import serve_reference_agent
from retail_domain import RetailData, load_retail_data
from tests.api.servers import poll, serve_green
from tests.support.agents import SloppyExecutor, serve_executor
from tests.support.fake_llm import FakeReply, serve_fake_llm

CHROMIUM = Path(os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"))
PHONE: ViewportSize = {"width": 390, "height": 844}  # an iPhone 12 to 15

# Tables that need more room than they have: a box that scrolls sideways (`.wide`) hides part of its table,
# and a cell squeezed below its words' widths breaks them ("delive" / "red"). Both are listed as text.
CLIPPED_TABLES = """() => {
  const problems = [];
  for (const box of document.querySelectorAll("main .wide")) {
    const hidden = box.scrollWidth - box.clientWidth;
    if (hidden > 1) problems.push(`scrolls: ${box.querySelector("table")?.className} by ${hidden}px`);
  }
  for (const table of document.querySelectorAll("main table")) {
    const right = table.getBoundingClientRect().right;
    if (right > document.documentElement.clientWidth + 1) problems.push(`overflows: ${table.className}`);
    const walker = document.createTreeWalker(table, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (node.parentElement.closest(".sr")) continue;
      for (const match of node.data.matchAll(/[A-Za-z]{2,14}/g)) {
        const range = document.createRange();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        const rects = [...range.getClientRects()].filter((r) => r.width > 0);
        const lines = new Set(rects.map((r) => Math.round(r.top)));
        if (lines.size > 1) problems.push(`broken word: ${match[0]} in ${table.className}`);
      }
    }
  }
  return problems;
}"""

TASKS = ["0", "1", "2", "3"]  # 0 and 1 are scored on the DB alone; 2 and 3 carry one NL assertion each
TRIALS = 2
HOSTILE_REASON = '<img src="x" onerror="window.__pwned = \'judge\'">the agent never said so'


def judge(body: dict[str, Any]) -> FakeReply:
    """The NL judge of the UI's service: passes task 2, fails task 3 (with a hostile reason), and is down
    (HTTP 503, so the trial is an excluded infrastructure error) whenever it judges the failing agent: on
    tasks 2 and 3 alike, whatever their DB check said (task 3's failed: it is left out all the same)."""
    conversation = json.dumps(body["messages"])
    if "__pwned" in conversation:
        return FakeReply(status=503)
    if "scripted customer for task 2" in conversation:
        return FakeReply('{"results": [{"index": 0, "reasoning": "it was said", "metExpectation": true}]}')
    verdict = {"index": 0, "reasoning": HOSTILE_REASON, "metExpectation": False}
    return FakeReply(json.dumps({"results": [verdict]}))


@dataclass(frozen=True)
class Service:
    url: str
    database_url: str
    oracle_id: str
    sloppy_id: str
    slow_agent_url: str


async def run_assessment(client: httpx.AsyncClient, body: dict[str, Any]) -> str:
    created = await client.post("/assessments", json=body)
    assert created.status_code == 202, created.text
    assessment_id = str(created.json()["id"])
    await poll(client, f"/assessments/{assessment_id}", lambda b: b["status"] == "completed", timeout_s=120)
    return assessment_id


@pytest.fixture(scope="module")
def ui_data() -> RetailData:
    return load_retail_data()


@pytest.fixture(scope="module")
async def service(tmp_path_factory: pytest.TempPathFactory, ui_data: RetailData) -> AsyncIterator[Service]:
    database_url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('ui-db') / 'green_agent.db'}"
    async with (
        serve_reference_agent("oracle", data=ui_data) as oracle_url,
        serve_reference_agent("oracle", data=ui_data, delay_s=0.15) as slow_url,
        serve_executor(SloppyExecutor(ui_data, complete_tasks=frozenset({"2"}))) as sloppy_url,
        serve_fake_llm(judge) as fake_judge,
        serve_green(
            database_url,
            judge_model={"model": "fake-judge", "base_url": fake_judge.base_url},
            llm_max_retries=0,
            llm_breaker_failures=1000,  # each 503 is one judge failure, not an outage to wait out
        ) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        selection = {"tasks": {"task_ids": TASKS}, "trials": TRIALS, "concurrency": 8}
        oracle_id = await run_assessment(client, {"agent_url": oracle_url, **selection})
        sloppy_id = await run_assessment(client, {"agent_url": sloppy_url, **selection})
        yield Service(
            url=url,
            database_url=database_url,
            oracle_id=oracle_id,
            sloppy_id=sloppy_id,
            slow_agent_url=slow_url,
        )


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    configured = os.environ.get("GREEN_AGENT_UI_ARTIFACTS")
    folder = Path(configured) if configured else tmp_path_factory.mktemp("ui-screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _require_chromium() -> None:
    if not CHROMIUM.exists():
        pytest.fail(
            f"Chromium not found at {CHROMIUM}: apt-get install chromium (.ci/run does), "
            "or set CHROMIUM_PATH",
            pytrace=False,
        )


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[Browser]:
    _require_chromium()
    async with async_playwright() as playwright:
        # --no-sandbox: CI runs as root, where Chromium's sandbox cannot start.
        browser = await playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            yield browser
        finally:
            await browser.close()


@dataclass
class Tab:
    """A browser page that records console errors and uncaught exceptions, and saves screenshots."""

    page: Page
    artifacts: Path
    errors: list[str] = field(default_factory=list)

    async def shot(self, name: str, *, full_page: bool = True) -> Path:
        path = self.artifacts / f"{name}.png"
        await self.page.screenshot(path=str(path), full_page=full_page)
        assert path.stat().st_size > 0
        return path


@pytest.fixture
async def tab(browser: Browser, service: Service, artifacts: Path) -> AsyncIterator[Tab]:
    context = await browser.new_context(base_url=service.url, viewport={"width": 1280, "height": 900})
    page = await context.new_page()
    tab = Tab(page, artifacts)

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error":
            tab.errors.append(f"console: {message.text}")

    def on_page_error(error: Error) -> None:
        tab.errors.append(f"page error: {error}")

    page.on("console", on_console)
    page.on("pageerror", on_page_error)
    try:
        yield tab
    finally:
        await context.close()


async def no_sideways_scroll(tab: Tab) -> None:
    """The page is no wider than the window."""
    overflow = await tab.page.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow <= 0, f"{tab.page.url} is {overflow}px wider than the window"


async def no_clipped_table(tab: Tab) -> None:
    """No table of the page is cut off by a box scrolling sideways, or squeezed until its words break."""
    problems = await tab.page.evaluate(CLIPPED_TABLES)
    assert problems == [], f"{tab.page.url}: {problems}"
