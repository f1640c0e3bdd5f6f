"""Reading replies below the SDK (white_agent/wire.py): echoed history dropped and not counted, fields nobody
reads dropped before the SDK's parsers, server-sent events framed, every bound counted on what the agent
wrote. End to end, with real servers: test_framework_replies.py."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from a2a.compat.v0_3 import conversions
from a2a.compat.v0_3 import types as types_v03
from a2a.types import SendMessageResponse, StreamResponse
from a2a.utils.proto_utils import parse_lenient
from hypothesis import HealthCheck, given, settings

from green_agent.core.errors import AgentProtocolError
from green_agent.reference_agents.hostile import HostileReply
from green_agent.white_agent.wire import WireLimits, encode_sse, read_json, read_sse
from tests.support.hostile_replies import echoed

LIMITS = WireLimits()  # 128 KiB, 2,048 values, 1 MiB of echo


def read(body: bytes, limits: WireLimits = LIMITS) -> Any:
    return asyncio.run(read_json(body, limits))


def read_events(body: bytes, limits: WireLimits = LIMITS) -> list[Any]:
    return asyncio.run(read_sse(body, limits))


ZONELESS = "2026-12-01T21:14:01.505735"


def envelope(result: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": "r1", "result": result}).encode()


def message(text: str, **extra: Any) -> dict[str, Any]:
    return {"messageId": "m", "contextId": "c", "role": "ROLE_AGENT", "parts": [{"text": text}], **extra}


def task_1x(**extra: Any) -> dict[str, Any]:
    return {
        "id": "t1",
        "contextId": "c",
        "status": {"state": "TASK_STATE_INPUT_REQUIRED", "timestamp": ZONELESS},
        "artifacts": [
            {"artifactId": "a", "parts": [{"text": '{"name": "x"'}, {"text": ', "arguments": {}}'}]}
        ],
        **extra,
    }


def history(size: int) -> list[dict[str, Any]]:
    """One echoed message of about `size` bytes: our first message, say, with its commas and braces."""
    return [message("{policy, tools}, " * (size // 16), role="ROLE_USER")]


# -- what the SDK gets ---------------------------------------------------------------------------------


def test_fields_nobody_reads_are_dropped_so_the_sdk_parses_the_rest() -> None:
    task = task_1x(
        metadata="not an object",
        history=history(100),
        somethingNew={"x": 1},
    )
    task["status"]["message"] = message("why", metadata=["not", "an", "object"], extensions=[1, 2])
    task["artifacts"][0].update(metadata=7, extensions="x", name="answer")
    task["artifacts"][0]["parts"] += [{"raw": "not base64!", "mediaType": "image/png"}, {"url": 5}]
    task["artifacts"][0]["parts"][0]["metadata"] = "bad"
    with pytest.raises(Exception, match="timestamp"):  # what the SDK made of it before
        parse_lenient({"task": task_1x()}, SendMessageResponse())

    reply = read(envelope({"task": task}), LIMITS)
    kept = reply["result"]["task"]
    assert kept == {
        "id": "t1",
        "contextId": "c",
        "status": {
            "state": "TASK_STATE_INPUT_REQUIRED",
            "message": {"messageId": "m", "contextId": "c", "role": "ROLE_AGENT", "parts": [{"text": "why"}]},
        },
        "artifacts": [
            {"artifactId": "a", "parts": [{"text": '{"name": "x"'}, {"text": ', "arguments": {}}'}]}
        ],
    }
    parsed = parse_lenient(reply["result"], SendMessageResponse())
    assert [p.text for p in parsed.task.artifacts[0].parts] == ['{"name": "x"', ', "arguments": {}}']


def test_the_metadata_of_a_message_is_kept_when_it_is_an_object() -> None:
    usage = {"tau2_usage": {"prompt_tokens": 3}}
    reply = read(envelope({"message": message("hi", metadata=usage)}), LIMITS)
    assert reply["result"]["message"]["metadata"] == usage


def test_a_03_task_with_a_zoneless_timestamp_and_its_history_reaches_the_sdk_without_them() -> None:
    task = {
        "kind": "task",
        "id": "t1",
        "contextId": "c",
        "status": {"state": "completed", "timestamp": ZONELESS},
        "history": [
            {"kind": "message", "role": "user", "messageId": "u", "parts": [{"kind": "text", "text": "x"}]}
        ],
        "artifacts": [
            {"artifactId": "a", "parts": [{"kind": "text", "text": "done"}, {"kind": "file", "file": {}}]}
        ],
    }
    kept = read(envelope(task), LIMITS)["result"]
    assert "history" not in kept and "timestamp" not in kept["status"]
    assert kept["artifacts"] == [{"artifactId": "a", "parts": [{"kind": "text", "text": "done"}]}]
    core = conversions.to_core_task(types_v03.Task.model_validate(kept))
    assert core.artifacts[0].parts[0].text == "done"


def test_stream_events_of_both_dialects_are_pruned_alike() -> None:
    update_03 = {
        "kind": "artifact-update",
        "taskId": "t1",
        "contextId": "c",
        "append": True,
        "lastChunk": False,
        "metadata": "x",
        "artifact": {"artifactId": "a", "parts": [{"kind": "text", "text": "chunk"}], "metadata": 1},
    }
    status_1x = {
        "statusUpdate": {
            "taskId": "t1",
            "contextId": "c",
            "status": {"state": "TASK_STATE_WORKING", "timestamp": ZONELESS},
        }
    }
    body = b"data: " + envelope(update_03) + b"\n\ndata: " + envelope(status_1x) + b"\n\n"
    first, second = read_events(body)
    assert first["result"] == {
        "kind": "artifact-update",
        "taskId": "t1",
        "contextId": "c",
        "append": True,
        "lastChunk": False,
        "artifact": {"artifactId": "a", "parts": [{"kind": "text", "text": "chunk"}]},
    }
    assert second["result"] == {
        "statusUpdate": {"taskId": "t1", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}
    }
    assert parse_lenient(second["result"], StreamResponse()).status_update.task_id == "t1"


# -- server-sent events -------------------------------------------------------------------------------


def test_events_are_framed_as_the_sse_specification_frames_them() -> None:
    one, two = envelope({"message": message("one")}), envelope({"message": message("two")})
    split = one.replace(b', "result"', b'\ndata: , "result"', 1)  # one event on two data lines
    body = (
        b": ping\r\n\r\nid: 7\r\nretry: 10\r\ndata:"
        + split.replace(b"\n", b"\r\n")
        + b"\r\n\r\n"
        + b"data: "
        + two
    )
    events = read_events(body)  # the last event has no blank line after it: read all the same
    assert [e["result"]["message"]["parts"][0]["text"] for e in events] == ["one", "two"]
    assert read_events(encode_sse(events), LIMITS) == events


def test_an_error_event_or_an_event_that_is_not_json_is_refused_in_one_line() -> None:
    with pytest.raises(AgentProtocolError, match=r"stream sent an error event: \{\"code\": -32603\}"):
        read_events(b'event: error\ndata: {"code": -32603}\n\n', LIMITS)
    with pytest.raises(AgentProtocolError, match="an event of the agent's stream is not JSON"):
        read_events(b"data: {not json\n\n", LIMITS)


def test_each_event_counts_as_a_value_and_the_stream_as_one_reply() -> None:
    limits = WireLimits(max_reply_bytes=1 << 20, max_reply_values=100, max_echo_bytes=0)
    event = b"data: " + envelope({"message": message("x")}) + b"\n\n"
    per_event = event.count(b"{") + event.count(b"[") + event.count(b",") + 1
    fits = 100 // per_event
    assert len(read_events(event * fits, limits)) == fits
    with pytest.raises(AgentProtocolError, match="more than 100 JSON values"):
        read_events(event * (fits + 1), limits)
    with pytest.raises(AgentProtocolError, match="more than 100 JSON values"):  # refused before framing
        read_events(b"data\n" * 101, limits)


# -- echoes and bounds ---------------------------------------------------------------------------------


def test_an_echo_past_the_agents_bounds_is_not_counted_and_the_agents_own_bytes_are() -> None:
    echoed = envelope({"task": task_1x(history=history(300_000))})
    assert len(echoed) > LIMITS.max_reply_bytes
    kept = read(echoed, LIMITS)["result"]["task"]
    assert "history" not in kept and kept["artifacts"][0]["artifactId"] == "a"

    own = task_1x(history=history(300_000))
    own["artifacts"][0]["parts"].append({"text": "y" * LIMITS.max_reply_bytes})
    with pytest.raises(
        AgentProtocolError,
        match=r"than 131072 bytes \(max_reply_bytes\), not counting \d{6} bytes of echoed task history",
    ):
        read(envelope({"task": own}), LIMITS)


def test_an_echo_in_each_event_of_a_stream_is_not_counted() -> None:
    event = b"data: " + envelope({"task": task_1x(history=history(40_000))}) + b"\n\n"
    assert [e["result"]["task"]["id"] for e in read_events(event * 5, LIMITS)] == ["t1"] * 5


def test_a_body_past_the_bounds_that_is_not_strict_json_is_refused_by_the_bound() -> None:
    body = envelope({"message": message("x" * LIMITS.max_reply_bytes)}).replace(b'"x', b'NaN, "x', 1)
    with pytest.raises(AgentProtocolError, match=r"larger than 131072 bytes \(max_reply_bytes\)$"):
        read(body)
    small = b'{"jsonrpc": "2.0", "id": "r1", "result": {"message": {"parts": [{"data": {"a": NaN}}]}}}'
    assert read(small, LIMITS)["result"]["message"]["parts"][0]["data"]["a"] != 0  # read as before


def test_a_1_mb_echo_and_a_million_value_history_cost_milliseconds() -> None:
    """msgspec skips the history without building it; parsing the million values (3 MB of `[],`) with json
    took ~150 ms here, and the SDK's parsers far longer."""
    roomy = WireLimits(max_echo_bytes=4 << 20)
    flood = envelope({"task": task_1x(history=history(1_000_000))})
    million = envelope({"task": task_1x(history=[[]] * 1_000_000)})
    for body in (flood, million):
        started = time.process_time()
        kept = read(body, roomy)["result"]["task"]
        spent = time.process_time() - started
        assert "history" not in kept
        assert spent < 0.05, spent


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(echoed)
def test_any_echo_a_hostile_server_sends_is_read_past_or_refused(reply: HostileReply) -> None:
    body = reply.render("r1", "c")
    if len(body) > LIMITS.max_response_bytes:
        return  # the transport stops reading it (test_framework_replies.py)
    try:
        kept = read(body)
    except AgentProtocolError as refused:
        assert "max_reply" in str(refused) or "not JSON" in str(refused), refused
        return
    assert "history" not in kept["result"]["task"]


def test_a_role_or_message_id_nobody_reads_never_fails_a_reply() -> None:
    odd = {"kind": "message", "role": "assistant", "parts": [{"kind": "text", "text": "hi"}]}
    kept = read(envelope(odd))["result"]
    assert (kept["role"], kept["messageId"]) == ("agent", "")
    assert conversions.to_core_message(types_v03.Message.model_validate(kept)).parts[0].text == "hi"
    kept = read(envelope({"message": message("hi", role=7, messageId=None)}))["result"]
    assert (kept["message"]["role"], kept["message"]["messageId"]) == ("ROLE_AGENT", "")
    assert parse_lenient(kept, SendMessageResponse()).message.parts[0].text == "hi"
