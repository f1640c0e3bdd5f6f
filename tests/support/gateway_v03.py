"""The AgentBeats gateway's side of an assessment, on a2a-sdk 0.3, for tests (run as a script).

It does what RDI-Foundation/agentbeats-gateway does with the green agent (written anew from its behaviour, no
code of it): wait until every agent's card parses as an a2a-sdk 0.3 AgentCard (2 s per try, 30 s in all),
then send `{"participants", "config"}` as one text message with a streaming 0.3 client (httpx timeout 300 s,
the card's `url` replaced by the green's base URL, as the gateway does), follow the stream to its end, and
collect what the gateway publishes: `{"status": <final state>, "results": [every DataPart of every artifact,
and every text part that parses as JSON]}`. It also records each event (seconds since the send, kind, state,
text), so a test can check the lifecycle and the longest gap between events.

a2a-sdk 0.3 cannot share an environment with the project's 1.x, so this file imports only the 0.3 SDK and
the standard library and runs under a throwaway venv's python (tests/support/gateway_venv.py). mypy leaves it
out (pyproject.toml): its imports are 0.3's, not the project's SDK.

    python gateway_v03.py '{"green": URL, "agents": [URL, ...], "participants": {...}, "config": {...}}'

prints one JSON object on stdout. Without "green" it only reads the agents' cards.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any
from uuid import uuid4

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import (
    DataPart,
    Message,
    Part,
    Role,
    TaskArtifactUpdateEvent,
    TaskStatusUpdateEvent,
    TextPart,
)

CARD_WAIT_S = 30.0
CARD_TRY_TIMEOUT_S = 2.0
STREAM_TIMEOUT_S = 300.0


async def card_problem(url: str) -> str | None:
    """None when the agent's card at `url` parses as a 0.3 AgentCard, else why not."""
    try:
        async with httpx.AsyncClient(timeout=CARD_TRY_TIMEOUT_S) as http:
            await A2ACardResolver(httpx_client=http, base_url=url).get_agent_card()
        return None
    except Exception as exc:  # the gateway counts any failure as "not ready"
        return f"{type(exc).__name__}: {exc}"[:2000]


async def wait_for_agents(urls: list[str]) -> dict[str, str | None]:
    deadline = time.monotonic() + CARD_WAIT_S
    problems: dict[str, str | None] = {}
    while True:
        problems = {url: await card_problem(url) for url in urls}
        if all(p is None for p in problems.values()) or time.monotonic() > deadline:
            return problems
        await asyncio.sleep(1.0)


def parts_text_and_data(parts: list[Part]) -> tuple[list[str], list[Any]]:
    texts, data = [], []
    for part in parts:
        root = part.root
        if isinstance(root, TextPart):
            try:
                data.append(json.loads(root.text))
            except ValueError:
                texts.append(root.text)
        elif isinstance(root, DataPart):
            data.append(root.data)
    return texts, data


async def assess(green: str, request: dict[str, Any]) -> dict[str, Any]:
    events: list[dict[str, Any]] = []
    status: str | None = None
    artifacts: list[Any] = []
    async with httpx.AsyncClient(timeout=STREAM_TIMEOUT_S) as http:
        card = await A2ACardResolver(httpx_client=http, base_url=green).get_agent_card()
        card.url = green
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=True)).create(card)
        message = Message(
            kind="message",
            role=Role.user,
            parts=[Part(root=TextPart(kind="text", text=json.dumps(request)))],
            message_id=uuid4().hex,
        )
        started = time.monotonic()
        async for event in client.send_message(message):
            seen: dict[str, Any] = {"t": round(time.monotonic() - started, 3)}
            if isinstance(event, Message):
                seen.update(kind="message", text=parts_text_and_data(event.parts)[0])
            else:
                task, update = event
                if isinstance(update, TaskStatusUpdateEvent):
                    state = update.status.state.value
                    parts = update.status.message.parts if update.status.message else []
                    seen.update(kind="status", state=state, final=update.final)
                    seen["text"] = parts_text_and_data(parts)[0]
                elif isinstance(update, TaskArtifactUpdateEvent):
                    seen.update(kind="artifact", name=update.artifact.name)
                    seen["data"] = parts_text_and_data(update.artifact.parts)[1]
                else:
                    state = task.status.state.value
                    seen.update(kind="task", state=state)
                status = task.status.state.value
                if status == "completed":
                    artifacts = list(task.artifacts or [])
            events.append(seen)
    results: list[Any] = []
    for artifact in artifacts:
        results.extend(parts_text_and_data(artifact.parts)[1])
    return {"status": status, "results": results, "events": events}


async def main(spec: dict[str, Any]) -> dict[str, Any]:
    if "green" not in spec:  # only read the cards, once each
        return {"cards": {url: await card_problem(url) for url in spec["agents"]}}
    problems = await wait_for_agents([spec["green"], *spec["agents"]])
    if any(p is not None for p in problems.values()):
        return {"status": "failed", "error": "Timeout: agents not ready", "cards": problems}
    request = {"participants": spec["participants"], "config": spec["config"]}
    try:
        return {**await assess(spec["green"], request), "cards": problems}
    except Exception as exc:
        return {"status": "failed", "error": f"{type(exc).__name__}: {exc}", "cards": problems}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(json.loads(sys.argv[1])))))
