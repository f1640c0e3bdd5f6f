"""Telecom through the whole service, over real HTTP, on SQLite and PostgreSQL: the built-in oracle and the
scripted customer solve all 114 base tasks (upstream's evaluator gives the gold trajectory 1 on each), each
party making its own calls; the trial JSON shows who made each call; the export is named for telecom; an
AgentBeats request for telecom ends in a Result whose domain is telecom."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from a2a.helpers import get_data_parts
from a2a.types import TaskState

from tests.api.servers import poll, serve_green
from tests.api.web.test_a2a import a2a_client, agentbeats, collect

TELECOM_BASE_TASKS = 114
PAYMENT_TASK = "[service_issue]airplane_mode_on|overdue_bill_suspension[PERSONA:None]"
"""Gold: the customer toggles airplane mode, the agent sends a payment request, the customer pays, the agent
resumes the line, the customer reboots."""


@pytest.fixture
async def client(database_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with serve_green(database_url) as url, httpx.AsyncClient(base_url=url, timeout=60) as http:
        yield http


async def finished(client: httpx.AsyncClient, body: dict[str, Any]) -> dict[str, Any]:
    created = await client.post("/assessments", json=body)
    assert created.status_code == 202, created.text
    assessment_id = created.json()["id"]
    return await poll(
        client, f"/assessments/{assessment_id}", lambda b: b["status"] in ("completed", "failed"), 300
    )


async def test_the_oracle_solves_every_base_telecom_task_through_the_service(
    client: httpx.AsyncClient, oracle_url: str
) -> None:
    done = await finished(client, {"agent_url": oracle_url, "domain": "telecom", "concurrency": 16})
    assert done["status"] == "completed", done["error"]
    report = done["report"]
    assert done["domain"] == report["domain"] == "telecom" and report["complete"] is True
    assert report["num_tasks"] == report["trials_scored"] == TELECOM_BASE_TASKS
    assert report["avg_reward"] == 1.0 and report["pass_hat_k"] == {"1": 1.0}
    # Telecom scores env assertions (and ACTION on the 20 transfer tasks); both hold on every trial.
    assert report["signal_rates"]["ENV_ASSERTION"] == 1.0 and report["signal_rates"]["ACTION_MATCH"] == 1.0
    assert report["signal_applicable"]["ENV_ASSERTION"] == TELECOM_BASE_TASKS

    trial = (await client.get(f"/assessments/{done['id']}/trials/{PAYMENT_TASK}/0")).json()
    assert trial["domain"] == "telecom" and trial["reward"] == 1.0 and trial["failures"] == []
    calls = [(m["role"], c["name"]) for m in trial["transcript"] for c in m["tool_calls"] or ()]
    assert calls == [
        ("user", "toggle_airplane_mode"),
        ("assistant", "send_payment_request"),
        ("user", "make_payment"),
        ("assistant", "resume_line"),
        ("user", "reboot_device"),
    ]
    results = [m["requestor"] for m in trial["transcript"] if m["role"] == "tool"]
    assert results == ["user", None, "user", None, "user"]
    # The phone at the task's start and at the trial's end, rebuilt from both parties' stored calls.
    phone = trial["customer_state"]
    assert phone["before"]["device"]["airplane_mode"] is True and phone["omitted"] is None
    assert phone["after"]["device"]["network_connection_status"] == "connected"
    assert {"path": "surroundings.line_active", "before": False, "after": True} in phone["changes"]
    assert [(c["func_name"], c["actual"]) for c in trial["env_assertion_checks"]] == [
        ("assert_service_status", True),
        ("assert_no_overdue_bill", True),
    ]

    exported = await client.get(f"/assessments/{done['id']}/export")
    assert exported.status_code == 200
    disposition = exported.headers["content-disposition"]
    assert disposition == f'attachment; filename="{done["id"]}_telecom_tau2.json"'
    assert exported.json()["info"]["environment_info"]["domain_name"] == "telecom"
    assert (await client.get("/readyz")).json()["domains"]["telecom"] == 2285


async def test_an_agentbeats_request_for_telecom_returns_a_telecom_result(
    database_url: str, oracle_url: str
) -> None:
    tasks = [PAYMENT_TASK, "[mobile_data_issue]data_mode_off|data_usage_exceeded[PERSONA:None]"]
    async with serve_green(database_url) as green_url, httpx.AsyncClient(timeout=60) as http:
        client = await a2a_client(green_url, http)
        _, task = await collect(client, agentbeats(oracle_url, domain="telecom", task_ids=tasks))
        assert task.status.state == TaskState.TASK_STATE_COMPLETED
        parts = list(task.artifacts[0].parts)
        assert parts[0].text.startswith("tau2 telecom assessment"), parts[0].text
        (data,) = get_data_parts(parts)
        assert data["domain"] == "telecom" and data["complete"] is True
        assert data["task_rewards"] == dict.fromkeys(tasks, 1.0) and data["pass_rate"] == 100.0
        stored = (await http.get(f"{green_url}assessments/{data['assessment_id']}")).json()
        assert stored["domain"] == "telecom" and stored["source"] == "a2a"


async def test_the_customers_side_past_its_bound_lists_only_the_changes(
    database_url: str, oracle_url: str
) -> None:
    """GREEN_AGENT_MAX_CUSTOMER_STATE_BYTES at its smallest (256): the phone's two states (2,416 bytes of
    JSON) are left out, the five fields that changed (239 bytes) are listed, and the trial says so."""
    async with (
        serve_green(database_url, max_customer_state_bytes=256) as url,
        httpx.AsyncClient(base_url=url, timeout=60) as client,
    ):
        body = {"agent_url": oracle_url, "domain": "telecom", "tasks": {"task_ids": [PAYMENT_TASK]}}
        done = await finished(client, body)
        trial = (await client.get(f"/assessments/{done['id']}/trials/{PAYMENT_TASK}/0")).json()
    phone = trial["customer_state"]
    assert phone["before"] is None and phone["after"] is None and len(phone["changes"]) == 5
    assert phone["omitted"] == (
        "the customer's DB at the start and at the end hold 2416 bytes of JSON, over "
        "max_customer_state_bytes=256: only the fields that changed are shown"
    )
