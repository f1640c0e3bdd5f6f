"""What went wrong, over REST on SQLite and PostgreSQL: the trial JSON's `failures` (classified afresh, the DB
fields included), the copy stored with each trial (what the CSV counts), the CSV of trials with its cells
escaped against formula injection, and the agent's card name kept with the assessment."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime

import httpx

from api.db.repository import TrialSummary
from api.web.trials_csv import COLUMNS, cell, trials_csv
from retail_domain import RetailData
from tests.api.servers import poll, serve_green
from tests.support.agents import SloppyExecutor, serve_executor

EXCHANGE = "exchange_delivered_order_items"


async def test_failures_in_the_trial_json_and_the_csv(database_url: str, retail_data: RetailData) -> None:
    async with (
        serve_executor(
            SloppyExecutor(retail_data, complete_tasks=frozenset({"1"})), name="Acme\u202e support\x00 bot"
        ) as agent_url,
        serve_green(database_url) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        body = {"agent_url": agent_url, "tasks": {"task_ids": ["0", "1"]}, "trials": 1}
        assessment_id = (await client.post("/assessments", json=body)).json()["id"]
        done = await poll(
            client, f"/assessments/{assessment_id}", lambda b: b["status"] == "completed", timeout_s=120
        )
        # The agent's card name is kept with the assessment, bidi override and NUL removed.
        assert done["agent_name"] == "Acme support bot"

        # Task 0: the agent skipped the exchange (the last gold write) and looked up an order that does not
        # exist.
        trial = (await client.get(f"/assessments/{assessment_id}/trials/0/0")).json()
        failures = trial["failures"]
        assert [(f["kind"], f["action"]) for f in failures] == [
            ("missing_action", EXCHANGE),
            ("tool_errors", "get_order_details"),
        ]
        assert failures[0]["expected"] == retail_data.tasks["0"].gold_actions[-1].arguments
        assert failures[1]["got"].startswith("Error")
        assert set(failures[0]) == {"kind", "action", "argument", "expected", "got", "detail"}
        listed = (await client.get(f"/assessments/{assessment_id}/trials")).json()["data"]
        assert {t["task_id"]: t["failure_kinds"] for t in listed} == {
            "0": ["missing_action", "tool_errors"],
            "1": [],
        }
        passed = (await client.get(f"/assessments/{assessment_id}/trials/1/0")).json()
        assert passed["reward"] == 1.0 and passed["failures"] == []

        download = await client.get(f"/assessments/{assessment_id}/trials.csv")
        assert download.status_code == 200
        assert download.headers["content-type"] == "text/csv; charset=utf-8"
        assert "attachment" in download.headers["content-disposition"]
        rows = list(csv.DictReader(io.StringIO(download.text)))
        assert [(r["task_id"], r["trial"]) for r in rows] == [("0", "0"), ("1", "0")]
        # The stored classification (made when the trial was scored) has the same kinds.
        assert rows[0]["failure_kinds"] == "missing_action;tool_errors"
        assert rows[0]["failures"] == f"missing {EXCHANGE} | tool error in get_order_details"
        assert (rows[0]["reward"], rows[0]["success"], rows[0]["DB_STATE_MATCH"]) == (
            "0.0",
            "false",
            "failed",
        )
        assert rows[0]["link"] == f"/assessments/{assessment_id}/trials/0/0"
        assert rows[1]["failure_kinds"] == "" and rows[1]["CLEAN_EXIT"] == "passed"

        missing = await client.get("/assessments/00000000-0000-0000-0000-000000000000/trials.csv")
        assert missing.status_code == 404


def test_csv_cells_that_would_run_as_formulas_start_with_an_apostrophe() -> None:
    for hostile in ('=HYPERLINK("http://x")', "+1", "-1+1", "@SUM(A1)", "\tx", "\rx"):
        assert cell(hostile) == "'" + hostile
    assert cell("ended by max_steps") == "ended by max_steps" and cell(None) == "" and cell(False) == "false"
    summary = TrialSummary(
        task_id="0",
        trial=0,
        termination_reason="agent_error",
        reward=0.0,
        is_successful=False,
        nl_status="not_required",
        steps=1,
        error='=cmd|" /C calc"!A0\nsecond line',
        finished_at=datetime(2026, 1, 1, tzinfo=UTC),
        failures=({"kind": "termination", "got": "agent_error", "detail": "the agent failed"},),
    )
    rows = list(csv.reader(io.StringIO(trials_csv([summary], "/ui/assessments/x/trials"))))
    assert rows[0] == list(COLUMNS)
    record = dict(zip(COLUMNS, rows[1], strict=True))
    assert record["error"] == '\'=cmd|" /C calc"!A0'  # the first line only, made text
    assert record["failures"] == "ended by agent_error"
