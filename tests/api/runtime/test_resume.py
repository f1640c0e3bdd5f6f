"""Resume after a crash: a real `green-agent serve` subprocess is SIGKILLed mid-assessment and restarted on
the same database (SQLite and PostgreSQL). Finished trials are kept as they were, the rest run, nothing is
counted twice, and the final report has the same counts as an uninterrupted run of the same config."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import httpx
from a2a.client import ClientConfig, create_client
from a2a.helpers import get_data_parts
from a2a.types import (
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    TaskState,
)

from tests.api.servers import GreenProcess, free_port, poll

COUNTED = ("num_tasks", "num_trials", "trials_total", "trials_scored", "excluded", "termination_counts")


async def start_over_a2a(url: str, agent_url: str) -> str:
    """Send an AgentBeats request without waiting for the result; return the A2A task id."""
    text = json.dumps(
        {
            "participants": {"agent": agent_url},
            "config": {
                "domain": "retail",
                "task_ids": [0, 1, 5, 6, 7, 8],  # none needs a judge (this service has none)
                "num_trials": 2,
                "max_concurrent": 1,
                "user_llm": "scripted",
            },
        }
    )
    message = Message(role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=[Part(text=text)])
    request = SendMessageRequest(
        message=message, configuration=SendMessageConfiguration(return_immediately=True)
    )
    async with httpx.AsyncClient(timeout=30) as http:
        client = await create_client(url, ClientConfig(httpx_client=http, streaming=False))
        (first,) = [r async for r in client.send_message(request)]
    return first.task.id


async def test_killed_server_resumes_unfinished_assessment(
    database_url: str, slow_oracle_url: str, tmp_path: Path
) -> None:
    # A short heartbeat: on PostgreSQL the killed process's running trials go back to the queue once its
    # heartbeat is missed for `worker_stalled_after_s`.
    fast_failover = {"GREEN_AGENT_WORKER_HEARTBEAT_S": "0.5", "GREEN_AGENT_WORKER_STALLED_AFTER_S": "3"}
    green = GreenProcess(database_url, free_port(), tmp_path / "green.log", env=fast_failover)
    config: dict[str, Any] = {
        "agent_url": slow_oracle_url,
        "tasks": {"num_tasks": 10},
        "trials": 2,
        "concurrency": 2,
    }
    try:
        green.start()
        await green.wait_ready()
        async with httpx.AsyncClient(base_url=green.url, timeout=30) as client:
            assessment_id = (await client.post("/assessments", json=config)).json()["id"]
            a2a_task_id = await start_over_a2a(green.url, slow_oracle_url)
            path = f"/assessments/{assessment_id}"
            before = await poll(client, path, lambda b: b["progress"]["trials_done"] >= 4, timeout_s=120)
            assert before["status"] == "running"
            kept = (await client.get(f"{path}/trials")).json()["data"]
            a2a_page = (await client.get("/assessments", params={"status": "running"})).json()
        green.kill()
        a2a_assessment = next(a for a in a2a_page["data"] if a["a2a_task_id"] == a2a_task_id)

        green.start()  # same port, same database
        await green.wait_ready()
        async with httpx.AsyncClient(base_url=green.url, timeout=30) as client:
            final = await poll(client, path, lambda b: b["status"] == "completed", timeout_s=180)
            trials = (await client.get(f"{path}/trials")).json()
            baseline_id = (await client.post("/assessments", json=config)).json()["id"]
            baseline = await poll(
                client, f"/assessments/{baseline_id}", lambda b: b["status"] == "completed", timeout_s=180
            )
            # The A2A-started one resumed too, and its A2A task was completed with the Result artifact.
            await poll(
                client,
                f"/assessments/{a2a_assessment['id']}",
                lambda b: b["status"] == "completed",
                timeout_s=180,
            )
            a2a = await create_client(green.url, ClientConfig(httpx_client=client, streaming=False))
            a2a_task = await a2a.get_task(GetTaskRequest(id=a2a_task_id))
    finally:
        green.stop()

    assert 4 <= len(kept) < 20, "the kill must land mid-assessment"
    keys = [(t["task_id"], t["trial"]) for t in trials["data"]]
    assert trials["count"] == 20 and len(set(keys)) == 20
    assert final["progress"] == {"trials_done": 20, "trials_total": 20}
    # Trials finished before the kill were kept, not re-run.
    after = {(t["task_id"], t["trial"]): t["finished_at"] for t in trials["data"]}
    assert all(after[(t["task_id"], t["trial"])] == t["finished_at"] for t in kept)
    report, expected = final["report"], baseline["report"]
    assert {k: report[k] for k in COUNTED} == {k: expected[k] for k in COUNTED}
    assert report["task_rewards"] == expected["task_rewards"]
    assert report["pass_hat_k"] == expected["pass_hat_k"]
    assert report["trials_total"] == 20

    assert a2a_task.status.state == TaskState.TASK_STATE_COMPLETED
    assert [a.name for a in a2a_task.artifacts] == ["Result"]
    (data,) = get_data_parts(list(a2a_task.artifacts[0].parts))
    assert data["assessment_id"] == a2a_assessment["id"] and data["trials_total"] == 12
