"""Every reply matched to its request (threat model, principle 9).

HTTP/1.1 has no request ids: a response that an agent writes late, or twice, is read as the answer to
whatever was sent next on that connection. Two rules keep such a response from scoring anything:

* connections are never shared between trials (`ReplyExpectation.affinity` is the trial's A2A context id;
  the transport reuses a connection only for the same affinity), so a stray response can only land in the
  trial of the agent that wrote it;
* each reply is checked against its request before the connection is reused: its JSON-RPC `id` must be the
  request's, and the A2A context id of the message or task it carries, when it names one, the trial's; the
  task id, when the request named a task (a continued task, a task polled), that task's. Both A2A dialects are
  read: 1.x (`{"message": {...}}` / `{"task": {...}}`), 0.3 (`{"kind": "message", ...}`), and a polled task
  (the task itself), with the camelCase and snake_case spellings the SDK's parsers both accept. A mismatch
  is an `AgentProtocolError` of that trial (the agent's fault), and the connection is closed.

Where the check sits. a2a-sdk 1.3.0 reads every non-streaming reply in `send_http_request`
(a2a/client/transports/http_helpers.py: `response.json()`), for the 1.x JSON-RPC transport
(`JsonRpcTransport._send_request`, then `_check_jsonrpc_response`, which never compares ids), the 0.3 one
(`CompatJsonRpcTransport._send_request`, then `JSONRPC20Response(**data)`, neither) and REST alike; our client
sees the result as a `StreamResponse` in `Conversation._send_once` and as a `Task` in `_reply_from_task`
(client.py). The check runs below both, in the transport, on the JSON that `json()` then returns (http1.py
`_ParsedResponse`: the body is parsed once), so it can close the connection before anyone reuses it; a
streamed reply (`send_http_stream_request`) is read whole by the transport too, and checked the same way.
The conversation names the trial around each SDK call (`expecting`); the SDK carries no per-call data down to
the HTTP client, so a context variable does, and `DirectClient.build_request` (http1.py) picks it up together
with the JSON-RPC id of the payload it is given.

Before the check, the body is read by wire.py (the history a server echoes back and unread fields dropped,
the agent's bounds counted without the echo); a stream of server-sent events is checked event by event (each
message, task or task update in it must match), then handed to the SDK re-encoded.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from green_agent.core.errors import AgentProtocolError
from green_agent.white_agent.wire import WireLimits, encode_sse, read_json, read_sse

_CONTEXT_KEYS = ("contextId", "context_id")
_TASK_ID_IN_MESSAGE = ("taskId", "task_id")


@dataclass(frozen=True)
class Trial:
    """The trial a request is sent for: its context id, and the task the request names (if any)."""

    context_id: str
    task_id: str | None = None
    polls_task: bool = False
    """The request is GetTask: its reply is the task itself."""
    limits: WireLimits = field(default_factory=WireLimits)
    """The bounds its replies are read within (wire.py)."""


@dataclass(frozen=True)
class Reading:
    """A reply read and matched (http1.Reading): its JSON, or the body that replaces it (an event stream)."""

    parsed: Any = None
    content: bytes | None = None


_current: ContextVar[Trial | None] = ContextVar("green_agent_a2a_trial", default=None)


@contextlib.contextmanager
def expecting(trial: Trial) -> Iterator[None]:
    """Requests made in this block are the trial's: their replies are matched to it."""
    token = _current.set(trial)
    try:
        yield
    finally:
        _current.reset(token)


@dataclass(frozen=True)
class ReplyExpectation:
    """What one reply must match (http1.Expectation)."""

    trial: Trial
    rpc_id: Any = None
    """The JSON-RPC id of the request; None for the REST binding, which has none."""

    @property
    def affinity(self) -> str:
        return self.trial.context_id

    async def check(
        self, status: int, body: bytes, content_type: str = "", framing: int = 0
    ) -> Reading | None:
        if not 200 <= status < 300:
            return None  # the SDK reports the HTTP error; the transport closes the connection
        if "text/event-stream" in content_type:
            events = await read_sse(body, self.trial.limits, framing)
            for event in events:
                self._check_reply(event)
            return Reading(content=encode_sse(events))
        reply = await read_json(body, self.trial.limits, framing)
        self._check_reply(reply)
        return Reading(parsed=reply)

    def _check_reply(self, reply: Any) -> None:
        if self.rpc_id is not None:
            self._check_rpc(reply)
            result = reply.get("result")
        else:
            result = reply
        for kind, item in _carried(result, self.trial.polls_task):
            self._check_item(kind, item)

    def _check_rpc(self, reply: Any) -> None:
        if not isinstance(reply, dict):
            raise AgentProtocolError("the agent's reply is not a JSON-RPC response object")
        replied = reply.get("id")
        if replied is None and "error" in reply:
            return  # an error the agent could not tie to a request (JSON-RPC allows a null id there)
        if replied != self.rpc_id:
            raise AgentProtocolError(
                f"the agent's reply answers JSON-RPC request {_shown(replied)}, not {_shown(self.rpc_id)} "
                "(a reply to another request)"
            )

    def _check_item(self, kind: str, item: dict[str, Any]) -> None:
        expected = self.trial
        for key in _CONTEXT_KEYS:
            if key in item and item[key] != expected.context_id:
                raise AgentProtocolError(
                    f"the agent's {kind} is in A2A context {_shown(item[key])}, not this trial's "
                    f"{_shown(expected.context_id)}"
                )
        if expected.task_id is None:
            return
        keys = ("id",) if kind == "task" else _TASK_ID_IN_MESSAGE  # a message or a task update
        for key in keys:
            if key in item and item[key] != expected.task_id:
                raise AgentProtocolError(
                    f"the agent's {kind} belongs to task {_shown(item[key])}, not "
                    f"{_shown(expected.task_id)}, the task this request named"
                )
        if kind == "task" and "id" not in item:
            raise AgentProtocolError(
                f"the agent's task names no id; this message continued {expected.task_id}"
            )


_UPDATES = ("statusUpdate", "status_update", "artifactUpdate", "artifact_update")


def _carried(result: Any, polled: bool) -> Iterator[tuple[str, dict[str, Any]]]:
    """The messages, tasks and task updates (of a stream) a result carries, in either dialect."""
    if not isinstance(result, dict):
        return
    if polled:
        yield "task", result
        return
    found = False
    for key in ("message", "task", *_UPDATES):  # 1.x: SendMessageResponse, StreamResponse
        item = result.get(key)
        if isinstance(item, dict):
            found = True
            yield ("task update" if key in _UPDATES else key), item
    if found:
        return
    kind = result.get("kind")  # 0.3: the item itself (old servers omit kind)
    if kind == "message" or (kind is None and "messageId" in result):
        yield "message", result
    elif kind in ("status-update", "artifact-update") or (kind is None and "taskId" in result):
        yield "task update", result
    elif kind == "task" or (kind is None and "id" in result):
        yield "task", result


def expectation_for(payload: Any) -> ReplyExpectation | None:
    """What the reply to a request with this JSON payload must match; None outside a trial (card fetches)."""
    trial = _current.get()
    if trial is None:
        return None
    rpc_id = payload.get("id") if isinstance(payload, dict) and "jsonrpc" in payload else None
    return ReplyExpectation(trial, rpc_id)


def _shown(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 80 else text[:80] + "…"
