"""A hostile white agent that writes its JSON-RPC answers byte by byte, for the scoring-integrity tests and
the hostile benchmark.

It plays the tasks it has no plan for honestly (the task's gold actions, one per turn, in the text dialect,
then a closing text), and for each planned task sends the planned replies in order, then gives up politely.
With an empty plan for a task it gives up at once: that is the "honest twin" a gaming agent is compared with.

A `HostileReply` is whatever an adversary can put on the wire: message parts given as raw JSON text (so that
they may nest 100,000 deep, hold NaN, 1e999 or lone surrogates), or a raw body (truncated, duplicated, not
JSON at all). The builders below make the usual suspects; the tests draw their sizes with hypothesis.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from a2a.server.routes import create_agent_card_routes
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from domain_kit import DomainData
from green_agent.reference_agents.server import agent_card

GIVE_UP_TEXT = "I'm sorry, I cannot help with that request."
DONE_TEXT = "All done. Is there anything else?"
_TASK_NAMED = re.compile(r"scripted customer for task ([^\s.]+)")


@dataclass(frozen=True)
class HostileReply:
    """One answer: `parts_json` (a JSON array of A2A parts, as raw text) inside a well-formed JSON-RPC
    envelope, or `body` sent as it is. With `history_json` (raw text too) the parts come as the status message
    of a completed task carrying that history: what a server that echoes every message it saw would send."""

    parts_json: str | None = None
    body: bytes | None = None
    label: str = ""
    history_json: str | None = None

    def render(self, request_id: str, context_id: str) -> bytes:
        if self.body is not None:
            return self.body
        head = json.dumps({"jsonrpc": "2.0", "id": request_id})[:-1]
        message = json.dumps({"messageId": str(uuid.uuid4()), "contextId": context_id, "role": "ROLE_AGENT"})
        message = f'{message[:-1]}, "parts": {self.parts_json}}}'
        if self.history_json is None:
            return f'{head}, "result": {{"message": {message}}}}}'.encode()
        task = json.dumps({"id": str(uuid.uuid4()), "contextId": context_id})[:-1]
        status = f'{{"state": "TASK_STATE_COMPLETED", "message": {message}}}'
        task = f'{task}, "status": {status}, "history": {self.history_json}}}'
        return f'{head}, "result": {{"task": {task}}}}}'.encode()


# -- builders -------------------------------------------------------------------------------------------


def text_reply(text: str, label: str = "text") -> HostileReply:
    """A text part; `json.dumps` escapes NUL and lone surrogates, so the body stays ASCII."""
    return HostileReply(parts_json=json.dumps([{"text": text}]), label=label)


def data_reply(raw_json: str, label: str = "data") -> HostileReply:
    """A DataPart whose value is `raw_json`, inserted verbatim (it may be deep, invalid, or hold NaN)."""
    return HostileReply(parts_json=f'[{{"data": {raw_json}}}]', label=label)


def echoing(reply: HostileReply, history_json: str) -> HostileReply:
    """`reply` as the status message of a task whose history is `history_json`."""
    return HostileReply(
        parts_json=reply.parts_json, label=f"{reply.label} with history", history_json=history_json
    )


def raw_reply(body: bytes, label: str = "raw") -> HostileReply:
    return HostileReply(body=body, label=label)


def truncated(reply: HostileReply, fraction: float) -> HostileReply:
    body = reply.render("1", "c")
    return raw_reply(body[: int(len(body) * fraction)], label=f"truncated {reply.label}")


def duplicated(reply: HostileReply) -> HostileReply:
    body = reply.render("1", "c")
    return raw_reply(body + body, label=f"duplicated {reply.label}")


def nested_json(depth: int, opener: str = "[") -> str:
    """Arrays (`[`) or objects (`{`) nested `depth` deep."""
    if opener == "[":
        return "[" * depth + "]" * depth
    return '{"a":' * depth + "1" + "}" * depth


def call_json(name: str, arguments_json: str = "{}", call_id: str | None = None) -> str:
    parts = [f'"name": {json.dumps(name)}', f'"arguments": {arguments_json}']
    if call_id is not None:
        parts.insert(0, f'"id": {json.dumps(call_id)}')
    return "{" + ", ".join(parts) + "}"


def many_keys_json(keys: int) -> str:
    return "{" + ", ".join(f'"k{i}": {i}' for i in range(keys)) + "}"


WEIRD_NUMBERS_JSON = (
    '{"a": NaN, "b": Infinity, "c": -Infinity, "d": 1e999, "e": -1e999, "f": ' + "7" * 5000 + "}"
)
"""Numbers JSON has no place for (Python reads them all but the last, an int longer than it accepts)."""


# -- the agent ------------------------------------------------------------------------------------------


@dataclass
class _Session:
    task_id: str
    turn: int = 0


@dataclass
class HostileAgent:
    """Plays honestly except on the planned tasks; see the module docstring."""

    data: DomainData
    plan: Mapping[str, Sequence[HostileReply]]
    sessions: dict[str, _Session] = field(default_factory=dict)

    async def endpoint(self, request: Request) -> Response:
        try:
            rpc = json.loads(await request.body())
            message = rpc["params"]["message"]
            context_id = message.get("contextId") or str(uuid.uuid4())
        except (ValueError, KeyError, TypeError):
            return Response(b'{"jsonrpc": "2.0", "id": null, "error": {"code": -32700}}', status_code=400)
        session = self.sessions.get(context_id)
        if session is None:
            text = " ".join(p.get("text", "") for p in message.get("parts", []) if isinstance(p, dict))
            named = _TASK_NAMED.search(text)
            session = _Session(task_id=named.group(1) if named else "")
            self.sessions[context_id] = session
        reply = self._next(session)
        session.turn += 1
        body = reply.render(str(rpc.get("id")), context_id)
        return Response(body, media_type="application/json")

    def _next(self, session: _Session) -> HostileReply:
        if session.task_id in self.plan:
            planned = self.plan[session.task_id]
            return planned[session.turn] if session.turn < len(planned) else _respond(GIVE_UP_TEXT)
        task = self.data.tasks.get(session.task_id)
        actions = task.gold_actions if task is not None else ()
        if session.turn < len(actions):
            action = actions[session.turn]
            return text_reply(json.dumps({"name": action.name, "arguments": action.arguments}), "gold")
        return _respond(DONE_TEXT)

    def app(self, url: str) -> Starlette:
        card = agent_card(name="hostile", description="writes its answers byte by byte", url=url)
        return Starlette(
            routes=[*create_agent_card_routes(card), Route("/", self.endpoint, methods=["POST"])]
        )


def _respond(text: str) -> HostileReply:
    return text_reply(json.dumps({"name": "respond", "arguments": {"content": text}}), "respond")


# -- the benchmark's plan: each hostile kind at the size that costs the green agent most ----------------

KIB = 1024


def worst_cases() -> list[tuple[str, list[HostileReply]]]:
    """Named hostile programs sized at (or just past) the default bounds, where they cost the most."""
    fat_calls = (
        "[" + ", ".join([call_json("calculate", json.dumps({"expression": "1." + "0" * 7 * KIB}))] * 16) + "]"
    )
    tiny_values = '{"tool_calls": [' + ", ".join(['{"name": "x", "arguments": {}}'] * 500) + "]}"
    echo_json = "[" + ",".join(["[]"] * 340 * KIB) + "]"  # 1,020 KiB
    return [
        ("100,000 nested brackets", [text_reply("[" * 100_000 + "]" * 100_000)]),
        ("objects nested 5,000 deep", [data_reply(nested_json(5_000, "{"))]),
        ("12,000 argument keys", [text_reply(call_json("calculate", many_keys_json(12_000)))]),
        ("600 tool calls", [text_reply("[" + ", ".join([call_json("calculate")] * 600) + "]")]),
        ("NUL, surrogates, 20 KiB", [text_reply(("a\x00\ud800é" * 5 * KIB)[: 20 * KIB])] * 3),
        (
            "NaN, 1e999, 5,000 digits",
            [data_reply('{"tool_calls": [' + call_json("x", WEIRD_NUMBERS_JSON) + "]}")],
        ),
        ("5,000-character id", [data_reply('{"tool_calls": [' + call_json("x", "{}", "i" * 5_000) + "]}")]),
        ("120 KiB of braces", [text_reply("{" * 120 * KIB)]),
        ("2,000 braces and 100 KiB of prose", [text_reply(("{" * 2_000 + "word " * 20 * KIB)[: 100 * KIB])]),
        ("18,000 strings in one brace", [text_reply("{" + '"ab" ' * 18_000)]),
        ("2,000 tiny values in a DataPart", [data_reply(tiny_values)] * 3),
        # Past the reply bounds, up to the echo allowance (max_echo_bytes, 1 MiB): read whole, then split.
        ("1 MiB of echoed history, 350,000 values, every turn", [echoing(_respond("hi"), echo_json)] * 3),
        ("1.1 MiB of text, no echo", [text_reply("x" * 1_100 * KIB)]),
        ("16 calls of 7 KiB, until the transcript is full", [text_reply(fat_calls)] * 24),
        (
            "truncated and duplicated bodies",
            [truncated(text_reply(fat_calls), 0.5), duplicated(_respond("hi"))],
        ),
    ]


def worst_case_plan(task_ids: Sequence[str]) -> dict[str, list[HostileReply]]:
    """Every task gets one of `worst_cases()`, in turn."""
    cases = worst_cases()
    return {task: cases[i % len(cases)][1] for i, task in enumerate(task_ids)}
