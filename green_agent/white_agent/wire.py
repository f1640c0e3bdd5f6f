"""What a white agent's reply says, read before the A2A SDK reads it: the history a server echoes back and
the fields nobody reads are dropped, the agent's own bytes and values are counted, server-sent events framed.

Why here, below the SDK (the transport calls this through matching.py, on every reply of a trial):

* Echoes. A task may come back with its history: every message of the conversation, our own first message
  (policy and tool schemas) included. The client asks for the smallest history each protocol version honours
  (`history_length` 0 in A2A 1.x; 1 in 0.3, where a2a-sdk 0.3 and @a2a-js/sdk 0.3 read 0 as "no limit"),
  but a server may send more all the same. What we sent is not the agent's reply: `history` is dropped, and
  never counts against `max_reply_bytes` or `max_reply_values`. It is bounded all the same: a response may be
  at most `max_echo_bytes` larger than `max_reply_bytes` (the transport stops reading there), and a body past
  the agent's bounds is split with msgspec, which skips the history in C (~2 ms per MiB, however it nests)
  without building it, so no echo can hold the event loop or be parsed by the SDK.
* Unread fields. Of a task the client reads its id, context, state, artifacts and status message; of a message
  its ids, role, parts and metadata; of a part its text or data. Everything else is dropped before the
  SDK's parsers see it, so a field the score never depends on cannot fail a reply: status timestamps without
  a time zone (fasta2a 2.1 writes `2026-12-01T21:14:01.505735`, which the protobuf parser refuses), metadata
  of tasks, artifacts and parts, extensions, file parts; a message role or id the 0.3 parser would refuse is
  set to one it accepts. The rest is the SDK's to judge.
* Streams. A streaming agent's answer (`SendStreamingMessage`, `message/stream`) is a body of server-sent
  events, read whole by the transport within the same byte cap. Its events are framed here, each read as above
  (and matched to its request, matching.py), and handed to the SDK re-encoded. The bounds count the whole
  stream as one reply, and each event as one more value, so a stream costs what one reply of its size costs,
  however finely it is chunked.

Bodies within the agent's bounds (nearly all) are parsed once with `json.loads`, as before this module; only a
body past them that holds a `"history"` key is split with msgspec first, to find out whether what is past them
is an echo. Every step is linear in the body, and no Python loop here runs per byte or per value of the body,
only per event and per part kept; each split of a large body is a loop callback of its own (the loop rule of
client.py: ~2-3 ms per MiB each).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from green_agent.core.errors import AgentProtocolError
from green_agent.core.limits import AgentLimits, reply_values

_DEFAULTS = AgentLimits()


@dataclass(frozen=True)
class WireLimits:
    """The bounds of one reply (green_agent/core/limits.py has their descriptions)."""

    max_reply_bytes: int = _DEFAULTS.max_reply_bytes
    max_reply_values: int = _DEFAULTS.max_reply_values
    max_echo_bytes: int = _DEFAULTS.max_echo_bytes

    @property
    def max_response_bytes(self) -> int:
        """Where the transport stops reading a trial's response: the agent's bytes plus an echo."""
        return self.max_reply_bytes + self.max_echo_bytes


# -- one JSON document ------------------------------------------------------------------------------------


async def read_json(body: bytes, limits: WireLimits, framing: int = 0) -> Any:
    """The reply's JSON without echoed history and unread fields. Raises `AgentProtocolError` past a bound
    (counted without the echo; `framing` is the response's bytes around the body, which count too) or when
    the body is not JSON."""
    (document,) = await _read_documents(body, [body], 0, limits, framing)
    return document


async def read_sse(body: bytes, limits: WireLimits, framing: int = 0) -> list[Any]:
    """The JSON of each event of a server-sent-events body, read as `read_json` reads one reply; the bounds
    count the whole body, plus one value per event. An `error` event, or an event that is not JSON, is an
    `AgentProtocolError`."""
    text = body.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    fields = text.count(b"\ndata") + text.count(b"\nevent") + int(text.startswith((b"data", b"event")))
    if fields > limits.max_reply_values:  # checked first: the loop below runs once per field line
        raise _too_many_values(limits)
    events = _sse_events(text)
    return await _read_documents(body, events, len(events), limits, framing)


_SSE_FIELD = re.compile(rb"^(data|event)(?::\x20?([^\n]*))?$", re.MULTILINE)


def _sse_events(text: bytes) -> list[bytes]:
    """The data of each event (its data lines joined by newlines), as the SSE specification frames them;
    comments, `id` and `retry` lines are skipped by the regular expression, in C."""
    events: list[bytes] = []
    name, data = b"message", list[bytes]()
    end = 0
    for field in _SSE_FIELD.finditer(text):
        if text.find(b"\n\n", end, field.start()) != -1:  # a blank line before this field: dispatch
            _dispatch(events, name, data)
            name, data = b"message", []
        value = field.group(2) or b""
        if field.group(1) == b"data":
            data.append(value)
        else:
            name = value
        end = field.end()
    _dispatch(events, name, data)  # a last event without its blank line is read too
    return events


def _dispatch(events: list[bytes], name: bytes, data: list[bytes]) -> None:
    if not data:
        return
    payload = b"\n".join(data)
    if name == b"error":
        shown = " ".join(payload[:200].decode("utf-8", "replace").split()) + (
            "…" if len(payload) > 200 else ""
        )
        raise AgentProtocolError(f"the agent's stream sent an error event: {shown}")
    events.append(payload)


def encode_sse(documents: list[Any]) -> bytes:
    """Events for the SDK's SSE reader, one data line each (JSON with ASCII escapes has no line break)."""
    return b"".join(b"data: " + json.dumps(d).encode("ascii") + b"\n\n" for d in documents)


# -- bounds, echo, parse ----------------------------------------------------------------------------------


async def _read_documents(
    body: bytes, documents: list[bytes], events: int, limits: WireLimits, framing: int
) -> list[Any]:
    size, values = framing + len(body), reply_values(body) + events
    if size > limits.max_reply_bytes or values > limits.max_reply_values:
        # Past the agent's bounds: is what is past them an echo of our own messages? Counted without it.
        stripped = []
        echo_bytes = echo_values = 0
        for document in documents:
            kept, echoed = await _without_history(document) if _HISTORY in document else (document, [])
            stripped.append(kept)
            echo_bytes += len(document) - len(kept)
            echo_values += sum(reply_values(history) for history in echoed)
        size, values = size - echo_bytes, values - echo_values
        echo = f", not counting {echo_bytes} bytes of echoed task history" if echo_bytes else ""
        if size > limits.max_reply_bytes:
            raise AgentProtocolError(
                f"the agent's response is larger than {limits.max_reply_bytes} bytes (max_reply_bytes){echo}"
            )
        if values > limits.max_reply_values:
            raise _too_many_values(limits, echo)
        documents = stripped
    parsed = []
    for document in documents:
        try:
            reply = json.loads(document)
        except (ValueError, RecursionError):
            what = "an event of the agent's stream" if events else "the agent's reply"
            raise AgentProtocolError(f"{what} is not JSON") from None
        parsed.append(prune_response(reply))
    return parsed


def _too_many_values(limits: WireLimits, echo: str = "") -> AgentProtocolError:
    return AgentProtocolError(
        f"the agent's response holds more than {limits.max_reply_values} JSON values (max_reply_values){echo}"
    )


_OBJECT = msgspec.json.Decoder(dict[str, msgspec.Raw])
_HISTORY = b'"history"'
_HOLDS_TASK = ("result", "task")
"""Where a task (the only object with a history) sits: JSON-RPC `result` (0.3, a polled task), `task` in
it (1.x) or at the top (REST)."""
_LARGE = 64 * 1024
"""A split of more than this is a loop callback of its own."""


async def _without_history(document: bytes, depth: int = 0) -> tuple[bytes, list[bytes]]:
    """`document` with every `history` member of the objects that may be tasks removed, re-assembled from the
    untouched bytes of the other members, and the histories removed; `document` itself when it holds none or
    is not a JSON object (its bounds then count it whole). msgspec reads the members as raw spans: a history
    is skipped, never built."""
    if len(document) > _LARGE:
        await asyncio.sleep(0)
    try:
        members = _OBJECT.decode(document)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return document, []
    history = members.pop("history", None)
    echoed = [] if history is None else [bytes(memoryview(history))]
    if depth < 2:
        for key in _HOLDS_TASK:
            raw = members.get(key)
            if raw is not None:
                inner = bytes(memoryview(raw))
                if _HISTORY in inner:
                    stripped, deeper = await _without_history(inner, depth + 1)
                    if deeper:
                        members[key] = msgspec.Raw(stripped)
                        echoed += deeper
    if not echoed:
        return document, []
    kept = (json.dumps(k).encode() + b":" + bytes(memoryview(v)) for k, v in members.items())
    return b"{" + b",".join(kept) + b"}", echoed


# -- what the client reads --------------------------------------------------------------------------------

Pruner = Callable[[dict[str, Any]], dict[str, Any]]
_IDS = ("contextId", "context_id", "taskId", "task_id")


def prune_response(reply: Any) -> Any:
    """A response (JSON-RPC envelope or REST body) reduced to what the client reads, in either A2A dialect."""
    if not isinstance(reply, dict):
        return reply
    if "jsonrpc" in reply or "error" in reply:
        result = reply.get("result")
        if isinstance(result, dict):
            reply["result"] = _prune_result(result)
        return reply
    return _prune_result(reply)


def _prune_result(result: dict[str, Any]) -> dict[str, Any]:
    wrapped = {key: prune for key, prune in _WRAPPED.items() if isinstance(result.get(key), dict)}
    if wrapped:  # 1.x: SendMessageResponse, StreamResponse
        return {key: prune(result[key]) for key, prune in wrapped.items()}
    prune = _BY_KIND.get(_kind(result))  # 0.3: the item itself, named by its kind
    return prune(result) if prune is not None else result


def _kind(item: dict[str, Any]) -> str | None:
    """The item's 0.3 kind, guessed as the SDK guesses it when a server leaves it out."""
    kind = item.get("kind")
    if isinstance(kind, str):
        return kind
    if "taskId" in item and "final" in item:
        return "status-update"
    if "artifact" in item:
        return "artifact-update"
    if "messageId" in item:
        return "message"
    return "task" if "id" in item else None


def _keep(item: dict[str, Any], names: frozenset[str]) -> dict[str, Any]:
    return {k: v for k, v in item.items() if k in names}


def _part(part: Any) -> bool:
    return isinstance(part, dict) and ("text" in part or "data" in part)


def _parts(item: dict[str, Any]) -> None:
    parts = item.get("parts")
    if isinstance(parts, list):
        item["parts"] = [_keep(p, _PART) for p in parts if _part(p)]


def _message(message: dict[str, Any]) -> dict[str, Any]:
    kept = _keep(message, _MESSAGE)
    if not isinstance(kept.get("metadata", {}), dict):
        del kept["metadata"]  # read for the agent's usage, which is optional: malformed, it is not there
    # Never read, but required by the 0.3 parser: a role it does not know, or a message id that is not a
    # string, is set to what it would accept rather than fail the reply.
    legacy = "kind" in kept
    if kept.get("role") not in _ROLES:
        kept["role"] = "agent" if legacy else "ROLE_AGENT"
    if not isinstance(kept.get("messageId", kept.get("message_id")), str):
        kept.pop("message_id", None)
        kept["messageId"] = ""
    _parts(kept)
    return kept


def _artifact(artifact: dict[str, Any]) -> dict[str, Any]:
    kept = _keep(artifact, _ARTIFACT)
    _parts(kept)
    return kept


def _status(status: dict[str, Any]) -> dict[str, Any]:
    kept = _keep(status, _STATUS)
    if isinstance(kept.get("message"), dict):
        kept["message"] = _message(kept["message"])
    return kept


def _task(task: dict[str, Any]) -> dict[str, Any]:
    kept = _keep(task, _TASK)
    if isinstance(kept.get("status"), dict):
        kept["status"] = _status(kept["status"])
    artifacts = kept.get("artifacts")
    if isinstance(artifacts, list):
        kept["artifacts"] = [_artifact(a) if isinstance(a, dict) else a for a in artifacts]
    return kept


def _status_update(update: dict[str, Any]) -> dict[str, Any]:
    kept = _keep(update, _STATUS_UPDATE)
    if isinstance(kept.get("status"), dict):
        kept["status"] = _status(kept["status"])
    return kept


def _artifact_update(update: dict[str, Any]) -> dict[str, Any]:
    kept = _keep(update, _ARTIFACT_UPDATE)
    if isinstance(kept.get("artifact"), dict):
        kept["artifact"] = _artifact(kept["artifact"])
    return kept


# Both spellings the SDK's parsers accept (1.x protobuf JSON: camelCase or the field's name; 0.3: camelCase).
_PART = frozenset({"kind", "text", "data"})
_ROLES = frozenset({"agent", "user", "ROLE_AGENT", "ROLE_USER"})
_MESSAGE = frozenset({"kind", "messageId", "message_id", "role", "parts", "metadata", *_IDS})
_ARTIFACT = frozenset({"artifactId", "artifact_id", "parts"})
_STATUS = frozenset({"state", "message"})
_TASK = frozenset({"kind", "id", "contextId", "context_id", "status", "artifacts"})
_STATUS_UPDATE = frozenset({"kind", "status", "final", *_IDS})
_ARTIFACT_UPDATE = frozenset({"kind", "artifact", "append", "lastChunk", "last_chunk", *_IDS})
_WRAPPED: dict[str, Pruner] = {
    "task": _task,
    "message": _message,
    "statusUpdate": _status_update,
    "status_update": _status_update,
    "artifactUpdate": _artifact_update,
    "artifact_update": _artifact_update,
}
_BY_KIND: dict[str | None, Pruner] = {
    "task": _task,
    "message": _message,
    "status-update": _status_update,
    "artifact-update": _artifact_update,
}
