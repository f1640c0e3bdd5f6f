"""Agent headers never reach a stored A2A task history, whichever message carries them and however: a first
request, a second message to the same task, a DataPart next to a text part, duplicate `config` keys, JSON too
deep for the parser, or a request that is rejected. Real service and real a2a-sdk client; every column of the
whole database is searched for the secret afterwards (SQLite and PostgreSQL)."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest
from a2a.client import Client
from a2a.helpers import new_data_part
from a2a.types import GetTaskRequest, Message, Part, Role, SendMessageConfiguration, SendMessageRequest, Task
from sqlalchemy.ext.asyncio import AsyncEngine

from api.web.a2a.request import redact_text
from tests.api.servers import serve_green
from tests.api.web.test_a2a import a2a_client, agentbeats
from tests.api.web.test_egress_api import columns_holding
from tests.support.agents import FunctionExecutor, answer_done, serve_agent

SECRET = "Bearer white-agent-secret-77f3a"


async def send(client: Client, parts: list[Part], task_id: str | None = None) -> Task | None:
    message = Message(role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=parts, task_id=task_id or "")
    request = SendMessageRequest(message=message, configuration=SendMessageConfiguration())
    seen: str | None = task_id
    try:
        async for response in client.send_message(request):
            if response.HasField("task"):
                seen = response.task.id
            elif response.HasField("status_update"):
                seen = response.status_update.task_id
    except Exception:  # a message to a finished task is refused by the SDK: what matters is what is stored
        pass
    if seen is None:
        return None
    return await client.get_task(GetTaskRequest(id=seen, history_length=100))


def with_headers(agent_url: str) -> str:
    return agentbeats(agent_url, task_ids=["0"], agent_headers={"Authorization": SECRET})


def deep(levels: int, inner: object) -> object:
    for _ in range(levels):
        inner = {"x": inner}
    return inner


async def test_no_message_stores_agent_headers_in_a_task_history(
    database_url: str, database: AsyncEngine
) -> None:
    async with (
        serve_agent(FunctionExecutor(answer_done)) as (agent_url, _, recorder),
        serve_green(database_url) as url,
        httpx.AsyncClient(timeout=60) as http,
    ):
        client = await a2a_client(url, http, streaming=False)
        first = await send(client, [Part(text=with_headers(agent_url))])
        assert first is not None
        tasks: list[Task | None] = [first]
        # A second message to the same task, with headers of its own.
        tasks.append(await send(client, [Part(text=with_headers(agent_url))], task_id=first.id))
        # A DataPart carrying the request next to a text part (the text is what is read).
        request = json.loads(with_headers(agent_url))
        tasks.append(await send(client, [Part(text="hello"), new_data_part(request)]))
        # The request as a DataPart only.
        tasks.append(await send(client, [new_data_part(request)]))
        # Two `config` keys: the first holds the headers, a parser keeping the last one would not see them.
        duplicate = with_headers(agent_url)[:-1] + ', "config": {"domain": "retail"}}'
        tasks.append(await send(client, [Part(text=duplicate)]))
        # Too deep for any JSON parser's recursion (rejected), the headers before the deep part.
        too_deep = with_headers(agent_url)[:-1] + ', "pad": ' + "[" * 100_000 + "]" * 100_000 + "}"
        tasks.append(await send(client, [Part(text=too_deep)]))
        # Not JSON at all, mentioning the field.
        tasks.append(
            await send(client, [Part(text=f'"agent_headers": {{"Authorization": "{SECRET}"}} oops')])
        )
        listed = (await http.get(url + "assessments")).text
    assert any(seen.get("authorization") == SECRET for seen in recorder.seen)  # the header was used
    stored = [str(task) for task in tasks if task is not None]
    assert len(stored) >= 6
    assert all(SECRET not in text for text in [*stored, listed])
    assert await columns_holding(database, SECRET) == {"assessments.agent_headers"}


@pytest.mark.parametrize(
    "text",
    [
        '{"config": {"agent_headers": {"A": "s3cret"}}}',
        '{"config": {"Agent_Headers": {"A": "s3cret"}}}',
        '{"config": {"agent_headers": {"A": "s3cret"}}, "config": {}}',
        '{"x": [{"agent_headers": "s3cret"}]}',
        '{"config": {"\\u0061gent_headers": {"A": "s3cret"}}}',
        '{"agent_headers": ' + "[" * 5000 + '"s3cret"' + "]" * 5000 + "}",
        'not json "agent_headers": "s3cret"',
    ],
)
def test_redact_text_removes_every_form(text: str) -> None:
    redacted = redact_text(text)
    assert redacted is not None and "s3cret" not in redacted


def test_redact_text_leaves_other_requests_alone() -> None:
    assert redact_text('{"config": {"domain": "retail"}}') is None
    assert redact_text("hello") is None
    assert redact_text(json.dumps(deep(10, "agent"))) is None
