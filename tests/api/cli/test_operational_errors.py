"""Expected operational failures, as a user meets them on the command line (real subprocesses): one or two
lines saying what to do, the exit code of api/cli/exit_codes.py, no traceback unless --debug. And an
assessment whose LLM endpoint does not answer or refuses the key fails before any trial is queued."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest

from api.cli.exit_codes import ExitCode
from tests.api.cli.test_cli import green_agent
from tests.api.servers import serve_green
from tests.conftest import pg_url
from tests.support.fake_llm import FakeReply, serve_fake_llm

UNREACHABLE_PG = "postgresql+asyncpg://postgres@127.0.0.1:1/test"


def _lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.strip()]


@pytest.mark.parametrize(
    ("args", "expected", "code"),
    [
        (["db", "upgrade", "--database-url", pg_url("no_such_database_i19")], "does not exist; create it", 1),
        (["db", "upgrade", "--database-url", UNREACHABLE_PG], "cannot connect to the database", 1),
        (["db", "upgrade", "--database-url", "sqlite:////no/such/dir/x.db"], "dir does not exist", 1),
        (["demo", "--database-url", "sqlite:////no/such/dir/x.db"], "dir does not exist", 1),
        (["demo", "--database-url", "green_agent.db"], "is not supported; use sqlite", 2),
        (["db", "upgrade", "--database-url", "green_agent.db"], "is not supported; use sqlite", 2),
        (
            ["run", "--agent-url", "http://127.0.0.1:9/", "--database-url", UNREACHABLE_PG],
            "cannot connect",
            1,
        ),
        (["serve", "--port", "0", "--database-url", UNREACHABLE_PG], "cannot connect to the database", 1),
        (["keys", "list", "--database-url", UNREACHABLE_PG], "cannot connect to the database", 1),
    ],
)
async def test_database_and_settings_failures_are_one_line(args: list[str], expected: str, code: int) -> None:
    status, output = await green_agent(*args, timeout_s=120)
    assert status == code, output
    assert len(_lines(output)) == 1 and expected in output, output
    assert "Traceback" not in output
    assert output.startswith(f"green-agent {args[0]}: ")


async def test_debug_shows_the_traceback() -> None:
    status, output = await green_agent("db", "upgrade", "--database-url", UNREACHABLE_PG, "--debug")
    assert status == 1 and "Traceback" in output and "ConnectionRefusedError" in output


async def test_a_bad_flag_prints_the_subcommands_usage(tmp_path: Path) -> None:
    status, output = await green_agent("run", "--agent-url", "http://127.0.0.1:9/", "--trails", "3")
    assert status == ExitCode.USAGE
    assert (
        "usage: green-agent run " in output
        and "green-agent run: error: unrecognized arguments: --trails 3" in output
    )
    status, output = await green_agent("keys", "list", "--bogus")
    assert status == ExitCode.USAGE and "usage: green-agent keys list" in output
    status, output = await green_agent("run", "--agent-url", "http://127.0.0.1:9/", "--trials", "0")
    assert status == ExitCode.USAGE and _lines(output) == [
        "green-agent run: invalid options: trials: Input should be greater than or equal to 1"
    ]


async def _run_with_user_model(
    tmp_path: Path, oracle_url: str, model: dict[str, str]
) -> tuple[int, str, float]:
    started = time.monotonic()
    status, output = await green_agent(
        *("run", "--agent-url", oracle_url, "--user-model", "sim", "--quiet"),
        *(
            "--database-url",
            f"sqlite+aiosqlite:///{tmp_path / 'llm.db'}",
            "--output",
            str(tmp_path / "r.json"),
        ),
        env={"GREEN_AGENT_USER_MODELS": json.dumps({"sim": model}), "GREEN_AGENT_LLM_MAX_RETRIES": "3"},
    )
    return status, output, time.monotonic() - started


async def test_an_unreachable_user_model_fails_the_run_before_any_trial(
    tmp_path: Path, oracle_url: str
) -> None:
    status, output, took = await _run_with_user_model(
        tmp_path, oracle_url, {"model": "m", "base_url": "http://127.0.0.1:9/v1"}
    )
    assert status == ExitCode.FAILED, output
    assert "assessment failed: LLM 'm' at http://127.0.0.1:9/v1 is unreachable" in output
    saved = json.loads((tmp_path / "r.json").read_text())
    assert saved["status"] == "failed" and saved["progress"]["trials_done"] == 0
    assert took < 60, took  # 114 trials of retries would take many minutes
    assert "Traceback" not in output


async def test_a_refused_key_fails_the_run_before_any_trial(tmp_path: Path, oracle_url: str) -> None:
    async with serve_fake_llm(lambda body: FakeReply(content="hi"), api_key="right") as fake:
        model = {"model": "m", "base_url": fake.base_url, "api_key": "wrong"}
        status, output, _ = await _run_with_user_model(tmp_path, oracle_url, model)
        assert fake.requests == []  # not one completion was asked for
    assert status == ExitCode.FAILED, output
    assert "refused the API key (HTTP 401)" in output
    assert json.loads((tmp_path / "r.json").read_text())["progress"]["trials_done"] == 0


async def test_rest_answers_an_unreachable_judge_with_a_failed_assessment(
    database_url: str, oracle_url: str
) -> None:
    judge = {"model": "j", "base_url": "http://127.0.0.1:9/v1"}
    async with (
        serve_green(database_url, judge_model=judge, llm_max_retries=3) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        created = await client.post("/assessments", json={"agent_url": oracle_url})
        assert created.status_code == 202, created.text
        body = created.json()  # failed already in the answer to the POST: no trial was queued
        assert body["status"] == "failed" and body["progress"]["trials_done"] == 0
        assert body["error"].startswith("LLM 'j' at http://127.0.0.1:9/v1 is unreachable")
        assert (await client.get(f"/assessments/{body['id']}/trials")).json()["count"] == 0
