"""Text a requester chooses that is logged or shown (agent URLs, task ids, model names, A2A participants,
Idempotency-Key, path and query parameters) refuses control, format and bidi characters with a one-line 422
(a rejected task over A2A, the form again from the web UI, a usage error from the CLI), on SQLite and
PostgreSQL; nothing is stored. The probe of issue 37: `POST /assessments` with
`"http://127.0.0.1:19402/\\r\\nX-Injected: 1"` was a 202 and its raw value landed in the log (`urlsplit`
drops CR and LF, so the URL check passed)."""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.helpers import get_message_text
from a2a.types import TaskState

from api.cli.exit_codes import ExitCode
from tests.api.servers import GREEN_AGENT_BIN, a2a_final_task, serve_green

PROBE = "http://127.0.0.1:19402/\r\nX-Injected: 1"
FORGED = (
    "http://127.0.0.1:9/\n2026-01-01 12:00:00,000 WARNING api.security.auth: key d107 revoked by operator"
)
HOSTILE_URLS = {
    PROBE: "U+000D",
    FORGED: "U+000A",
    "http://127.0.0.1:9/\u202egnp.exe": "U+202E RIGHT-TO-LEFT OVERRIDE",
    "http://127.0.0.1:9/a\x1b[31mred": "U+001B",
    "http://127.0.0.1:9/a\tb": "U+0009",
    "http://127.0.0.1:9/a\u2028b": "U+2028 LINE SEPARATOR",
    "http://127.0.0.1:9/a\u200bb": "U+200B ZERO WIDTH SPACE",
    "http://127.0.0.1:9/a\x85b": "U+0085",
    "http://127.0.0.1:9/a\u2066b": "U+2066 LEFT-TO-RIGHT ISOLATE",
}
TASK = {"tasks": {"task_ids": ["0"]}}


@pytest.fixture
async def client(database_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with serve_green(database_url) as url, httpx.AsyncClient(base_url=url, timeout=30) as http:
        yield http


def one_line_422(response: httpx.Response, code_point: str) -> dict[str, Any]:
    """The single error of a 422, which names the character and holds no line break or bidi control."""
    assert response.status_code == 422, response.text
    (error,) = response.json()["detail"]
    assert code_point in error["msg"], error
    assert error["msg"].isprintable(), error  # nothing that breaks or reorders a line, as sent back
    return dict(error)


async def test_rest_refuses_hostile_agent_urls_and_names(client: httpx.AsyncClient) -> None:
    for url, code_point in HOSTILE_URLS.items():
        created = await client.post("/assessments", json={"agent_url": url, **TASK})
        error = one_line_422(created, code_point)
        assert error["loc"] == ["body", "agent_url"]
        # A rerun's agent URL too, before the source assessment is looked up.
        rerun = await client.post("/assessments/any/rerun-failed", json={"agent_url": url})
        one_line_422(rerun, code_point)

    task_id = await client.post(
        "/assessments",
        json={"agent_url": "http://127.0.0.1:9", **TASK} | {"tasks": {"task_ids": ["0", "1\n2"]}},
    )
    assert one_line_422(task_id, "U+000A")["loc"] == ["body", "tasks", "task_ids", 1]
    model = await client.post(
        "/assessments", json={"agent_url": "http://127.0.0.1:9", "user_model": "scripted\u202e", **TASK}
    )
    assert one_line_422(model, "U+202E")["loc"] == ["body", "user_model"]
    rerun_model = await client.post("/assessments/any/rerun-failed", json={"user_model": "a\x1bb"})
    one_line_422(rerun_model, "U+001B")
    # A header value may carry obs-text, which the server reads as Latin-1: 0x85 is NEL, a line break.
    keyed = await client.post(
        "/assessments",
        json={"agent_url": "http://127.0.0.1:9", **TASK},
        headers={b"Idempotency-Key": b"key\x85forged"},
    )
    assert one_line_422(keyed, "U+0085")["loc"] == ["header", "Idempotency-Key"]
    assert (await client.get("/assessments")).json()["count"] == 0

    # Not every non-ASCII character: a path in another script is a URL like any other.
    accepted = await client.post("/assessments", json={"agent_url": "http://127.0.0.1:9/agént/代理", **TASK})
    assert accepted.status_code == 202, accepted.text
    assert accepted.json()["agent_url"] == "http://127.0.0.1:9/agént/代理"


@pytest.mark.parametrize(
    ("path", "where", "code_point"),
    [
        ("/assessments?agent_url=http%3A%2F%2Fa%0D%0AX-Injected%3A%201", "query", "U+000D"),
        ("/assessments?agent_url=http://a/%E2%80%AEfdp.exe", "query", "U+202E"),
        ("/assessments/a%E2%80%AEb", "path", "U+202E"),
        ("/assessments/x/trials/0%0A1/0", "path", "U+000A"),
        ("/ui?agent=http://a/%1B%5B31m", "query", "U+001B"),
        ("/ui/assessments/x/trials/%E2%80%A8/0", "path", "U+2028"),
        ("/ui/compare?id=a%C2%85b&id=c", "query", "U+0085"),
    ],
)
async def test_path_and_query_parameters_refuse_them_before_any_route(
    client: httpx.AsyncClient, path: str, where: str, code_point: str
) -> None:
    error = one_line_422(await client.get(path), code_point)
    assert error["loc"] == [where]


async def test_an_agentbeats_request_with_them_is_a_rejected_task(client: httpx.AsyncClient) -> None:
    a2a = await create_client(str(client.base_url), ClientConfig(httpx_client=client, streaming=False))
    config = {"domain": "retail", "task_ids": ["0"]}
    requests = {
        "U+000D": {"participants": {"agent": PROBE}, "config": config},
        "U+202E": {"participants": {"agent": "http://127.0.0.1:9", "judge\u202e": "x"}, "config": config},
        "U+001B": {
            "participants": {"agent": "http://127.0.0.1:9"},
            "config": {**config, "user_llm": "m\x1b"},
        },
        "U+2029": {
            "participants": {"agent": "http://127.0.0.1:9"},
            "config": {**config, "task_ids": ["\u2029"]},
        },
        "U+200F": {
            "participants": {"agent": "http://127.0.0.1:9"},
            "config": {**config, "split": "base\u200f"},
        },
    }
    for code_point, request in requests.items():
        task = await a2a_final_task(a2a, json.dumps(request))
        assert task.status.state == TaskState.TASK_STATE_REJECTED, code_point
        reply = get_message_text(task.status.message)
        assert code_point in reply and reply.isprintable(), reply
    assert (await client.get("/assessments")).json()["count"] == 0


async def test_the_ui_form_refuses_them_next_to_the_field(client: httpx.AsyncClient) -> None:
    form = await client.get("/ui/assessments/new")
    token = re.search(r'name="csrf_token" value="([^"]+)"', form.text)
    assert token is not None
    origin = {"Origin": str(client.base_url).rstrip("/")}
    for url, code_point in HOSTILE_URLS.items():
        fields = {"csrf_token": token.group(1), "agent_url": url, "task_ids": "0"}
        answer = await client.post("/ui/assessments/new", data=fields, headers=origin)
        assert answer.status_code == 422, (url, answer.status_code)
        assert "agent_url is refused: the URL holds" in answer.text and code_point in answer.text
    assert (await client.get("/assessments")).json()["count"] == 0


async def test_the_cli_refuses_them_in_one_line(database_url: str) -> None:
    for url, code_point in ((PROBE, "U+000D"), ("http://127.0.0.1:9/\u202e", "U+202E")):
        process = await asyncio.create_subprocess_exec(
            *[str(GREEN_AGENT_BIN), "run", "--agent-url", url, "--task-ids", "0"],
            *["--database-url", database_url],
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "NO_COLOR": "1"},
        )
        _, stderr = await asyncio.wait_for(process.communicate(), timeout=120)
        assert process.returncode == ExitCode.USAGE, stderr
        (line,) = stderr.decode().splitlines()
        assert code_point in line and "agent_url is refused" in line and line.isprintable(), line
