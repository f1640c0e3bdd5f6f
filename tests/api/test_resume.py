"""Resume after a crash: a real `green-agent serve` subprocess is SIGKILLed mid-assessment and restarted on
the same database (SQLite and PostgreSQL). Finished trials are kept as they were, the rest run, nothing is
counted twice, and the final report has the same counts as an uninterrupted run of the same config."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.api.servers import GreenProcess, free_port, poll

COUNTED = ("num_tasks", "num_trials", "trials_total", "trials_scored", "excluded", "termination_counts")


async def test_killed_server_resumes_unfinished_assessment(
    database_url: str, slow_oracle_url: str, tmp_path: Path
) -> None:
    green = GreenProcess(database_url, free_port(), tmp_path / "green.log")
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
            path = f"/assessments/{assessment_id}"
            before = await poll(client, path, lambda b: b["progress"]["trials_done"] >= 4, timeout_s=120)
            assert before["status"] == "running"
            kept = (await client.get(f"{path}/trials")).json()["data"]
        green.kill()

        green.start()  # same port, same database
        await green.wait_ready()
        async with httpx.AsyncClient(base_url=green.url, timeout=30) as client:
            final = await poll(client, path, lambda b: b["status"] == "completed", timeout_s=180)
            trials = (await client.get(f"{path}/trials")).json()
            baseline_id = (await client.post("/assessments", json=config)).json()["id"]
            baseline = await poll(
                client, f"/assessments/{baseline_id}", lambda b: b["status"] == "completed", timeout_s=180
            )
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
