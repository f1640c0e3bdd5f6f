"""Reply matching (matching.py) on the JSON shapes of both A2A dialects: 1.x (`{"message": ...}`,
`{"task": ...}`), 0.3 (`{"kind": ...}`, or no kind from old servers), a polled task, the REST binding, and
JSON-RPC errors. End to end (real SDK client and server, both dialects): test_hostile_http_trials.py."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from green_agent.core.errors import AgentProtocolError
from green_agent.white_agent.matching import ReplyExpectation, Trial, expectation_for, expecting
from green_agent.white_agent.wire import WireLimits

CONTEXT = "ctx-trial"
OTHER = "ctx-other"


def body(result: Any, rpc_id: Any = "r1", **extra: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": rpc_id, "result": result, **extra}).encode()


def check(reply: bytes, *, task_id: str | None = None, polls: bool = False, rpc_id: Any = "r1") -> Any:
    reading = asyncio.run(
        ReplyExpectation(Trial(CONTEXT, task_id, polls_task=polls), rpc_id).check(200, reply)
    )
    assert reading is not None and reading.content is None
    return reading.parsed


MESSAGE_1X = {"message": {"messageId": "m", "contextId": CONTEXT, "role": "ROLE_AGENT", "parts": []}}
TASK_1X = {"task": {"id": "t1", "contextId": CONTEXT, "status": {}}}
MESSAGE_03 = {"kind": "message", "messageId": "m", "contextId": CONTEXT, "role": "agent", "parts": []}
TASK_03 = {"kind": "task", "id": "t1", "contextId": CONTEXT}


@pytest.mark.parametrize("result", [MESSAGE_1X, TASK_1X, MESSAGE_03, TASK_03])
def test_a_reply_of_the_trial_is_accepted_and_parsed_once(result: dict[str, Any]) -> None:
    assert check(body(result)) == json.loads(body(result))
    assert check(body(result), task_id="t1")["result"] == result


def _in(result: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """`result` with its message or task changed."""
    copy = json.loads(json.dumps(result))
    item = copy.get("message") or copy.get("task") or copy
    item.update(changes)
    return copy


@pytest.mark.parametrize("result", [MESSAGE_1X, TASK_1X, MESSAGE_03, TASK_03])
@pytest.mark.parametrize("key", ["contextId", "context_id"])
def test_another_context_is_refused(result: dict[str, Any], key: str) -> None:
    with pytest.raises(AgentProtocolError, match="A2A context 'ctx-other', not this trial's 'ctx-trial'"):
        check(body(_in(result, **{key: OTHER})))


def test_old_servers_without_kind_are_read_too() -> None:
    with pytest.raises(AgentProtocolError, match="message is in A2A context"):
        check(body({"messageId": "m", "contextId": OTHER}))
    with pytest.raises(AgentProtocolError, match="task is in A2A context"):
        check(body({"id": "t", "contextId": OTHER}))


def test_a_reply_to_another_request_is_refused() -> None:
    with pytest.raises(AgentProtocolError, match="answers JSON-RPC request 'r0', not 'r1'"):
        check(body(MESSAGE_1X, rpc_id="r0"))
    with pytest.raises(AgentProtocolError, match="answers JSON-RPC request null"):
        check(body(MESSAGE_1X, rpc_id=None))
    with pytest.raises(AgentProtocolError, match="not a JSON-RPC response object"):
        check(json.dumps([MESSAGE_1X]).encode())


def test_an_error_without_an_id_is_left_to_the_sdk_to_report() -> None:
    error = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32603, "message": "boom"}}).encode()
    assert check(error)["error"]["message"] == "boom"
    wrong = json.dumps({"jsonrpc": "2.0", "id": "r0", "error": {"code": -32603, "message": "x"}}).encode()
    with pytest.raises(AgentProtocolError, match="another request"):
        check(wrong)


@pytest.mark.parametrize("result", [TASK_1X, TASK_03])
def test_a_continued_task_must_come_back_as_that_task(result: dict[str, Any]) -> None:
    with pytest.raises(AgentProtocolError, match="belongs to task 't1', not 't9'"):
        check(body(result), task_id="t9")
    no_id = json.loads(json.dumps(result))
    (no_id.get("task") or no_id).pop("id")
    if "kind" in no_id:
        with pytest.raises(AgentProtocolError, match="names no id"):
            check(body(no_id), task_id="t1")


@pytest.mark.parametrize("result", [MESSAGE_1X, MESSAGE_03])
@pytest.mark.parametrize("key", ["taskId", "task_id"])
def test_a_message_naming_another_task_is_refused(result: dict[str, Any], key: str) -> None:
    assert check(body(_in(result, **{key: "t1"})), task_id="t1")
    with pytest.raises(AgentProtocolError, match="message belongs to task 't2'"):
        check(body(_in(result, **{key: "t2"})), task_id="t1")


def test_a_polled_task_is_the_result_itself() -> None:
    task = {"id": "t1", "contextId": CONTEXT, "status": {"state": "TASK_STATE_COMPLETED"}}
    assert check(body(task), task_id="t1", polls=True)
    with pytest.raises(AgentProtocolError, match="task belongs to task 't2'"):
        check(body({**task, "id": "t2"}), task_id="t1", polls=True)
    with pytest.raises(AgentProtocolError, match="A2A context"):
        check(body({**task, "contextId": OTHER}), task_id="t1", polls=True)


def test_the_rest_binding_has_no_rpc_id_but_its_context_is_checked() -> None:
    assert check(json.dumps(MESSAGE_1X).encode(), rpc_id=None) == MESSAGE_1X
    with pytest.raises(AgentProtocolError, match="A2A context"):
        check(json.dumps(_in(MESSAGE_1X, contextId=OTHER)).encode(), rpc_id=None)


def test_bodies_that_are_not_json_and_http_errors() -> None:
    with pytest.raises(AgentProtocolError, match="not JSON"):
        check(b"{not json")
    roomy = ReplyExpectation(Trial(CONTEXT, limits=WireLimits(1 << 20, 1 << 20, 0)), "r1")
    with pytest.raises(AgentProtocolError, match="not JSON"):
        asyncio.run(
            roomy.check(200, b"[" * 100_000)
        )  # deeper than the JSON parser goes: refused, not a RecursionError
    with pytest.raises(AgentProtocolError, match="more than 2048 JSON values"):
        check(b"[" * 100_000)  # within the default bounds it is not even parsed
    assert asyncio.run(ReplyExpectation(Trial(CONTEXT), "r1").check(500, b"Internal Server Error")) is None


def test_requests_outside_a_trial_are_not_matched_and_a_trial_names_its_affinity() -> None:
    payload = {"jsonrpc": "2.0", "id": "r1", "method": "SendMessage", "params": {}}
    assert expectation_for(payload) is None  # the agent card, fetched for no trial
    with expecting(Trial(CONTEXT, "t1")):
        expectation = expectation_for(payload)
        assert expectation_for({"message": {}}) == ReplyExpectation(Trial(CONTEXT, "t1"), None)  # REST
    assert expectation == ReplyExpectation(Trial(CONTEXT, "t1"), "r1")
    assert expectation is not None and expectation.affinity == CONTEXT
    assert expectation_for(payload) is None


def sse(*results: Any, rpc_id: Any = "r1") -> bytes:
    return b"".join(b"data: " + body(r, rpc_id) + b"\n\n" for r in results)


STATUS_03 = {"kind": "status-update", "taskId": "t1", "contextId": CONTEXT, "final": True, "status": {}}
ARTIFACT_1X = {"artifactUpdate": {"taskId": "t1", "contextId": CONTEXT, "artifact": {"artifactId": "a"}}}


def test_each_event_of_a_stream_is_matched_and_the_stream_handed_on_re_encoded() -> None:
    expectation = ReplyExpectation(Trial(CONTEXT, "t1"), "r1")
    reading = asyncio.run(expectation.check(200, sse(TASK_03, ARTIFACT_1X, STATUS_03), "text/event-stream"))
    assert reading is not None and reading.parsed is None and reading.content is not None
    assert [json.loads(line[6:])["result"] for line in reading.content.split(b"\n\n")[:-1]] == [
        TASK_03,
        ARTIFACT_1X,
        STATUS_03,
    ]
    for stray, error in (
        (_in(ARTIFACT_1X["artifactUpdate"], contextId=OTHER), "task update is in A2A context 'ctx-other'"),
        ({**STATUS_03, "taskId": "t2"}, "task update belongs to task 't2'"),
        (_in(MESSAGE_03, contextId=OTHER), "message is in A2A context"),
    ):
        with pytest.raises(AgentProtocolError, match=error):
            asyncio.run(expectation.check(200, sse(TASK_03, stray), "text/event-stream"))
    with pytest.raises(AgentProtocolError, match="answers JSON-RPC request 'r0'"):
        asyncio.run(expectation.check(200, sse(TASK_03) + sse(STATUS_03, rpc_id="r0"), "text/event-stream"))
