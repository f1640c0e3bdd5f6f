"""Issue 24 end to end: one hostile trial, then one honest trial, in the same run, on the same pooled client.

The white agent is the oracle reference agent (real a2a-sdk server on loopback) behind the hostile HTTP server
of tests/support/hostile_http.py, which forwards every request to it and frames the oracle's answers itself:
honestly, or, for the hostile trial's replies, with the attack under test. For each mode:

* the Python memory allocated during the whole run (tracemalloc's peak) stays small (the compressed bodies
  inflate to 64 MiB, the floods are endless);
* the hostile trial is charged (`agent_error`, reward 0, never excluded), or, for the forms that merely leave
  bytes on the connection, gains nothing;
* the honest trial that follows scores 1 against the oracle, as if nothing had happened;
* the connection a hostile reply came on carries no further request after an error or an out-of-turn byte;
* a serve holds no idle connection to the agent past `agent_keepalive_s` once the run is over.
"""

from __future__ import annotations

import asyncio
import json
import re
import tracemalloc
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from green_agent import AssessmentConfig, Engine, EngineSettings, TaskSelection, TrialResult
from green_agent.reference_agents import build_reference_agent_app, serve_app
from retail_domain import RetailData
from tests.engine.conftest import Collector
from tests.support import hostile_http as h

HOSTILE, HONEST = "0", "1"
"""Two tasks the oracle solves without a judge; the hostile one runs first (concurrency 1, report order)."""
KEEPALIVE_S = 0.3
TURN_TIMEOUT_S = 2.0
MEMORY_BOUND = 24 * 1024 * 1024
"""Peak Python allocations over the whole run (engine, oracle, hostile server; about 10 MiB honestly)."""
_TASK_NAMED = re.compile(r"scripted customer for task ([^\s.]+)")


def rewritten(change: Any) -> h.Mode:
    """The oracle's answer with its JSON changed by `change(reply_json)`, framed honestly."""

    def mode(reply: h.Reply) -> list[h.Step]:
        body = json.loads(reply.body)
        change(body)
        return [h.Reply(json.dumps(body).encode()).framed()]

    return mode


def answered_item(body: dict[str, Any]) -> dict[str, Any]:
    """The message (or task) of a JSON-RPC result, A2A 1.x or 0.3."""
    result = body["result"]
    return result.get("message") or result.get("task") or result


def other_context(body: dict[str, Any]) -> None:
    answered_item(body)["contextId"] = "3f0c0d52-another-trial"


def other_context_snake_case(body: dict[str, Any]) -> None:
    item = answered_item(body)
    item.pop("contextId", None)
    item["context_id"] = "3f0c0d52-another-trial"


def other_rpc_id(body: dict[str, Any]) -> None:
    body["id"] = "an-earlier-request"


@dataclass(frozen=True)
class Mode:
    play: h.Mode
    charged: bool
    """The hostile trial must end `agent_error` (else: it may complete, but gains nothing)."""
    every_reply: bool = False
    """Played on each of the hostile trial's replies, not only its first."""
    dirties: bool = False
    """Leaves bytes on the connection: it must not carry another request."""
    error: str = ""


MODES: dict[str, Mode] = {
    "trailers with Content-Encoding gzip": Mode(h.trailers_gzip, True, error="in a trailer"),
    "gzip body": Mode(h.encoded(b"gzip", h.gzip_bomb), True, error="'gzip'-encoded"),
    "deflate body": Mode(h.encoded(b"deflate", h.deflate_bomb), True, error="'deflate'-encoded"),
    "late second response": Mode(h.late_second_response, True, every_reply=True, error="JSON-RPC request"),
    "late response while idle": Mode(h.late_while_idle, False, every_reply=True),
    "pipelined bare status line": Mode(
        h.pipelined(b"HTTP/1.1 200 OK\r\n"), False, every_reply=True, dirties=True
    ),
    "pipelined status line and a header": Mode(
        h.pipelined(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"), False, every_reply=True, dirties=True
    ),
    "100 Continue flood": Mode(h.continue_flood, True, error="max_reply_bytes"),
    "close-delimited body cut by a reset": Mode(h.close_delimited_reset, True, error="reset"),
    "close-delimited body ended cleanly": Mode(h.close_delimited_fin, False, every_reply=True),
    "harmless trailer": Mode(h.trailer_other, False, every_reply=True),
    "Content-Length and chunked": Mode(
        h.with_head(b"Transfer-Encoding: chunked", body=lambda r: h.chunked(r.body)), True, error="malformed"
    ),
    "duplicate Content-Length": Mode(h.with_head(b"Content-Length: 3"), True, error="Duplicate"),
    "chunk size not hex": Mode(
        h.raw(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"),
        True,
        error="chunk",
    ),
    "oversized header": Mode(h.oversized_header, True, error="max_reply_bytes"),
    "endless body": Mode(h.endless_body, True, error="max_reply_bytes"),
    "drip": Mode(h.drip, True, error="turn timeout"),
    "reply to another JSON-RPC request": Mode(rewritten(other_rpc_id), True, error="not '"),
    "reply in another A2A context": Mode(rewritten(other_context), True, error="A2A context"),
    "reply in another context, snake_case": Mode(
        rewritten(other_context_snake_case), True, error="A2A context"
    ),
}


def context_of(request: h.Request) -> str:
    return str(request.json()["params"]["message"]["contextId"])


class Front:
    """Which trial each request belongs to (by its A2A context), and which requests get the hostile mode."""

    def __init__(self, mode: Mode) -> None:
        self.mode = mode
        self.task_of: dict[str, str] = {}
        self.played = 0

    def mode_for(self, request: h.Request) -> h.Mode | None:
        sent = request.json()
        if not isinstance(sent, dict):
            return None  # the agent card
        message = sent["params"]["message"]
        context = message["contextId"]
        if context not in self.task_of:
            named = _TASK_NAMED.search(json.dumps(message))
            self.task_of[context] = named.group(1) if named else "?"
        if self.task_of[context] != HOSTILE or (self.played and not self.mode.every_reply):
            return None
        self.played += 1
        return self.mode.play


@dataclass
class Outcome:
    results: dict[str, TrialResult]
    server: h.HostileHttpServer
    front: Front
    peak: int
    """tracemalloc's peak over the run."""
    open_after_keepalive: list[h.Connection]
    """Connections to the agent still open `KEEPALIVE_S` after the run, the engine still running."""


async def run_pair(data: RetailData, mode: Mode, protocol_version: str = "1.0") -> Outcome:
    front = Front(mode)
    server = h.HostileHttpServer(h.echo_rpc, front.mode_for)
    await server.start()
    collector = Collector()
    try:
        app = build_reference_agent_app(
            "oracle", data=data, url=server.url, protocol_version=protocol_version
        )
        async with serve_app(lambda _: app) as oracle_url, httpx.AsyncClient(timeout=30) as upstream:
            server.answer = h.forward_to(oracle_url, upstream)
            settings = EngineSettings(longest_first=False, agent_keepalive_s=KEEPALIVE_S)
            config = AssessmentConfig(
                agent_url=server.url,
                tasks=TaskSelection(task_ids=[HOSTILE, HONEST]),
                concurrency=1,
                user_model="scripted",
                turn_timeout_s=TURN_TIMEOUT_S,
            )
            async with Engine(settings, data) as engine:
                tracemalloc.start()
                try:
                    await engine.run(config, on_event=collector)
                    peak = tracemalloc.get_traced_memory()[1]
                finally:
                    tracemalloc.stop()
                await asyncio.sleep(KEEPALIVE_S + 0.4)
                still_open = server.open_connections()
    finally:
        await server.close()
    return Outcome(collector.by_task(), server, front, peak, still_open)


@pytest.mark.parametrize("name", list(MODES))
async def test_a_hostile_trial_is_charged_and_the_next_trial_is_unaffected(
    data: RetailData, name: str
) -> None:
    mode = MODES[name]
    outcome = await run_pair(data, mode)
    server, front = outcome.server, outcome.front
    hostile, honest = outcome.results[HOSTILE], outcome.results[HONEST]
    assert front.played, "the hostile mode was never played"
    assert outcome.peak < MEMORY_BOUND, outcome.peak
    assert honest.reward == 1.0, (honest.termination_reason, honest.error)
    assert hostile.reward is not None, "a trial the agent caused must never be excluded"
    if mode.charged:
        assert (hostile.termination_reason, hostile.reward) == ("agent_error", 0.0), hostile.error
        assert mode.error in (hostile.error or ""), hostile.error
    if mode.charged or mode.dirties:
        # Nothing more on a connection after an error or an out-of-turn byte; a late response is refused by
        # the request it came in front of, the last on its connection.
        allowed = 1 if name == "late second response" else 0
        for connection in server.connections:
            for index in connection.hostile:
                assert len(connection.requests) - 1 - index <= allowed, (connection.index, index)
    trials_on = [{front.task_of[context_of(r)] for r in c.requests if r.body} for c in server.connections]
    assert set().union(*trials_on) == {HOSTILE, HONEST}
    assert all(len(trials) <= 1 for trials in trials_on), trials_on  # a connection never carries two trials
    assert outcome.open_after_keepalive == [], f"connections still open {KEEPALIVE_S} s after the run"


@pytest.mark.parametrize(
    "name", ["reply to another JSON-RPC request", "reply in another A2A context", "late second response"]
)
async def test_replies_are_matched_in_the_a2a_0_3_dialect_too(data: RetailData, name: str) -> None:
    mode = MODES[name]
    outcome = await run_pair(data, mode, protocol_version="0.3")
    hostile, honest = outcome.results[HOSTILE], outcome.results[HONEST]
    assert outcome.front.played
    assert (hostile.termination_reason, hostile.reward) == ("agent_error", 0.0)
    assert mode.error in (hostile.error or "")
    assert honest.reward == 1.0, honest.error
