"""The image as an operator runs it: healthy by its own HEALTHCHECK, as uid 10001, with a read-only root file
system and only /data writable; an assessment of the reference oracle through the REST API on the published
port; SIGTERM; a restart on the same volume; and PostgreSQL on the host (`green-agent db upgrade` from the
image, then an assessment)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import httpx
import pytest

from tests.api.servers import poll
from tests.conftest import PG_HOST, PG_PORT, PG_USER, create_pg_database, drop_pg_database
from tests.container.podman import (
    HOST_FROM_POD,
    STOP_GRACE_S,
    BuiltImage,
    GreenContainer,
    Pod,
    green_container,
    podman,
    volume,
)

pytestmark = pytest.mark.container

# The reference agents listen on the pod's loopback: a private destination, which the service reaches only
# when private agents are allowed (the default without API keys; spelt out since the test relies on it).
PRIVATE_AGENTS = {"GREEN_AGENT_ALLOW_PRIVATE_AGENTS": "true"}
FINISHED = ("completed", "failed", "cancelled")
# A sort larger than SQLite's cache spills to a temporary file: with the root file system read-only, it
# works only because the image points SQLITE_TMPDIR at /data.
SQLITE_SPILL = """
import sqlite3
db = sqlite3.connect("/data/spill-probe.db")
db.execute("PRAGMA cache_size = -64")
db.execute("CREATE TABLE t (x TEXT)")
db.executemany("INSERT INTO t VALUES (?)", ((str(i) * 20,) for i in range(200_000)))
print("sorted", len(db.execute("SELECT x FROM t ORDER BY x DESC").fetchall()))
db.close()
"""


async def start_assessment(
    client: httpx.AsyncClient, agent_url: str, task_ids: list[str], **config: Any
) -> str:
    body = {"agent_url": agent_url, "tasks": {"task_ids": task_ids}, **config}
    created = await client.post("/assessments", json=body)
    assert created.status_code == 202, created.text
    return str(created.json()["id"])


async def finished(client: httpx.AsyncClient, assessment_id: str, green: GreenContainer) -> dict[str, Any]:
    try:
        return await poll(
            client, f"/assessments/{assessment_id}", lambda b: b["status"] in FINISHED, timeout_s=240
        )
    except TimeoutError as exc:
        raise AssertionError(f"{exc}\n{await green.logs()}") from None


async def stop_with_sigterm(green: GreenContainer) -> None:
    code, took = await green.sigterm()
    assert code == 0 and took < STOP_GRACE_S, f"exit {code} after {took:.1f} s:\n{await green.logs()}"


def assert_oracle_report(body: dict[str, Any], trials: int) -> None:
    assert body["status"] == "completed", body
    assert body["progress"] == {"trials_done": trials, "trials_total": trials}
    report = body["report"]
    assert report["complete"] is True and report["trials_scored"] == trials
    assert report["avg_reward"] == 1.0  # the oracle replays the gold actions


async def test_the_service_runs_read_only_as_non_root_and_loses_nothing_to_sigterm(
    image: BuiltImage, agents_pod: Pod
) -> None:
    oracle, slow_oracle = agents_pod.agents["oracle"], agents_pod.agents["slow_oracle"]
    async with volume() as data:
        async with green_container(agents_pod, image.id, volume_name=data, env=PRIVATE_AGENTS) as green:
            await green.wait_healthy()
            assert (await green.exec("id", "-u")).stdout.strip() == "10001"
            version = await green.exec("python3", "-c", "import sys; print(*sys.version_info[:2])")
            assert version.stdout.split() == ["3", "11"]  # what the Dockerfile's base promises
            service = (await green.exec("cat", "/proc/1/status", "/proc/1/cmdline")).stdout
            assert "Uid:\t10001\t10001\t10001\t10001" in service and "green-agent\0serve" in service
            for path in ("/tmp/probe", "/var/tmp/probe", "/home/green/probe", "/app/probe"):
                refused = await green.exec("touch", path, check=False)
                assert refused.returncode != 0 and "Read-only file system" in refused.stderr, path
            spill = await green.exec("python3", "-c", SQLITE_SPILL)
            assert spill.stdout.strip() == "sorted 200000"
            await green.exec("rm", "/data/spill-probe.db")

            async with httpx.AsyncClient(base_url=agents_pod.url, timeout=30) as client:
                assert (await client.get("/readyz")).status_code == 200
                done_id = await start_assessment(client, oracle, ["0", "1", "5"], trials=2)
                done = await finished(client, done_id, green)
                assert_oracle_report(done, trials=6)

                # Stopped in the middle of an assessment: its finished trials are stored, the rest resume.
                running_id = await start_assessment(
                    client, slow_oracle, ["0", "1", "5", "7"], trials=2, concurrency=2
                )
                running = await poll(
                    client, f"/assessments/{running_id}", lambda b: b["progress"]["trials_done"] >= 1
                )
                assert running["status"] == "running"
            await stop_with_sigterm(green)

        async with green_container(agents_pod, image.id, volume_name=data, env=PRIVATE_AGENTS) as green:
            await green.wait_healthy()
            async with httpx.AsyncClient(base_url=agents_pod.url, timeout=30) as client:
                again = (await client.get(f"/assessments/{done_id}")).json()
                assert again["status"] == "completed" and again["report"] == done["report"]
                resumed = (await client.get(f"/assessments/{running_id}")).json()
                assert resumed["progress"]["trials_done"] >= running["progress"]["trials_done"]
                assert_oracle_report(await finished(client, running_id, green), trials=8)
                trials = (await client.get(f"/assessments/{running_id}/trials")).json()
                assert sorted((t["task_id"], t["trial"]) for t in trials["data"]) == [
                    (task, trial) for task in ("0", "1", "5", "7") for trial in (0, 1)
                ]
            await stop_with_sigterm(green)


@pytest.fixture
async def host_pg_database() -> AsyncIterator[tuple[str, str]]:
    """A fresh database on the host's PostgreSQL: (its name, its URL as the pod reaches it)."""
    name = await create_pg_database()
    host = HOST_FROM_POD if PG_HOST in ("127.0.0.1", "localhost") else PG_HOST
    try:
        yield name, f"postgresql+asyncpg://{PG_USER}@{host}:{PG_PORT}/{name}"
    finally:
        await drop_pg_database(name)


async def test_the_service_runs_on_the_hosts_postgresql(
    image: BuiltImage, agents_pod: Pod, host_pg_database: tuple[str, str]
) -> None:
    name, url = host_pg_database
    upgrade = await podman(
        *("run", "--rm", "--pod", agents_pod.name, "--read-only", "--read-only-tmpfs=false"),
        *("--env", f"DATABASE_URL={url}", "--entrypoint", "green-agent", image.id, "db", "upgrade"),
    )
    connection = await asyncpg.connect(host=PG_HOST, port=PG_PORT, user=PG_USER, database=name)
    try:
        revision = await connection.fetchval("SELECT version_num FROM green_agent_schema_version")
        assert revision, upgrade
        assert await connection.fetchval("SELECT count(*) FROM assessments") == 0

        env = {**PRIVATE_AGENTS, "DATABASE_URL": url}
        async with green_container(agents_pod, image.id, env=env) as green:
            await green.wait_healthy()
            async with httpx.AsyncClient(base_url=agents_pod.url, timeout=30) as client:
                oracle = agents_pod.agents["oracle"]
                assessment_id = await start_assessment(client, oracle, ["0", "1"], trials=2)
                assert_oracle_report(await finished(client, assessment_id, green), trials=4)
            await stop_with_sigterm(green)

        # What the API said is what PostgreSQL holds: the service used the host's database, not a file.
        stored = await connection.fetchrow(
            "SELECT status, trials_done FROM assessments WHERE id = $1", assessment_id
        )
        assert dict(stored) == {"status": "completed", "trials_done": 4}
        count = "SELECT count(*) FROM trials WHERE assessment_id = $1"
        assert await connection.fetchval(count, assessment_id) == 4
        assert await connection.fetchval("SELECT version_num FROM green_agent_schema_version") == revision
    finally:
        await connection.close()
