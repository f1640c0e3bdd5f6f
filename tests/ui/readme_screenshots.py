"""Retake the README's screenshots (docs/ui-assessment.png, docs/ui-trial.png, docs/ui-phone.png,
docs/ui-new-assessment.png): a failing agent (the tests' SloppyExecutor) over all 114 tasks x 2 trials with no
NL judge configured (so the report is partial), then its assessment page and one failed trial, in Debian's
Chromium, the assessment page at a phone's width, and the new-assessment form refusing the cloud metadata
address next to the agent URL.

    .venv/bin/python -m tests.ui.readme_screenshots [OUT_DIR]   # default: docs/

Not a test (pytest does not collect it); it only makes pictures.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

import httpx
from playwright.async_api import ViewportSize, async_playwright

from retail_domain import load_retail_data
from tests.api.servers import serve_green
from tests.support.agents import SloppyExecutor, serve_executor
from tests.ui.conftest import CHROMIUM, run_assessment

VIEWPORT: ViewportSize = {"width": 1200, "height": 980}
PHONE: ViewportSize = {"width": 400, "height": 860}


async def main(out: Path) -> None:
    data = load_retail_data()
    with tempfile.TemporaryDirectory() as folder:
        database_url = f"sqlite+aiosqlite:///{Path(folder) / 'screens.db'}"
        async with (
            serve_executor(SloppyExecutor(data)) as agent_url,
            serve_green(database_url) as url,
            httpx.AsyncClient(base_url=url, timeout=30) as client,
        ):
            assessment = await run_assessment(
                client, {"agent_url": agent_url, "trials": 2, "concurrency": 16}
            )
            async with async_playwright() as playwright:
                browser = await playwright.chromium.launch(
                    executable_path=str(CHROMIUM), args=["--no-sandbox"]
                )
                page = await browser.new_page(base_url=url, viewport=VIEWPORT)
                await page.goto(f"/ui/assessments/{assessment}")
                await page.screenshot(path=str(out / "ui-assessment.png"))
                await page.goto(f"/ui/assessments/{assessment}/trials/0/0")
                await page.screenshot(path=str(out / "ui-trial.png"))
                phone = await browser.new_page(base_url=url, viewport=PHONE, is_mobile=True)
                await phone.goto(f"/ui/assessments/{assessment}")
                await phone.screenshot(path=str(out / "ui-phone.png"))
                form = await browser.new_page(base_url=url, viewport={"width": 1000, "height": 900})
                await form.goto("/ui/assessments/new")
                await form.locator("#agent_url").fill("http://169.254.169.254/")
                await form.locator("#num_tasks").fill("20")
                await form.locator("#trials").fill("4")
                await form.get_by_role("button", name="Start assessment").click()
                await form.locator("#agent_url-error").wait_for()
                await form.screenshot(path=str(out / "ui-new-assessment.png"), full_page=True)
                await browser.close()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("docs")))
