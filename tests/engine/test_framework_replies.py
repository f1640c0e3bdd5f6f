"""White agents packaged as A2A frameworks package replies (tests/support/frameworks.py), each a relay to the
oracle: every one scores what the oracle scores (issue 35). Real loopback servers: a2a-sdk's own, and fasta2a.

What each case reproduces, and how it failed before:
* answers written as chunks appended to one artifact (@a2a-js/sdk 1.3, a2a-sdk 0.3.26 streaming agents), read
  from the final task and from the event stream: the chunks were joined with newlines, which landed inside
  the JSON of the tool call;
* a 0.3 agent keeping its task open, whose server echoes the whole conversation at `historyLength: 0`: our
  own messages counted against `max_reply_values`;
* fasta2a 2.1, whose status timestamps have no time zone: the SDK's parser refused every reply.
"""

from __future__ import annotations

from typing import Any

import pytest
from a2a.types import AgentCard, AgentInterface

from green_agent import AssessmentConfig, AssessmentReport, TaskSelection
from green_agent.core.limits import AgentLimits
from green_agent.white_agent.client import history_length_for
from retail_domain import RetailData
from tests.engine.conftest import Collector, run
from tests.support.frameworks import (
    RewrittenTasks,
    ZonelessTimestamps,
    serve_chunking_relay,
    serve_fasta2a_relay,
)

FIVE = TaskSelection(task_ids=["0", "5", "11", "22", "33"])
"""Five tasks without NL assertions (scored without a judge), 5 to 7 gold actions each."""


def assert_like_the_oracle(report: AssessmentReport, events: Collector, tasks: int) -> None:
    assert len(events.results) == tasks
    for result in events.results:
        assert result.termination_reason == "user_stop", (result.task_id, result.error)
        assert result.reward == 1.0 and result.protocol_warnings == [], (result.task_id, result.error)
    assert report.avg_reward == 1.0


@pytest.mark.parametrize("protocol", ["1.0", "0.3"])
@pytest.mark.parametrize("streaming", [False, True], ids=["final task", "event stream"])
async def test_an_answer_in_chunks_of_one_artifact_reads_as_one_text(
    data: RetailData, protocol: str, streaming: bool
) -> None:
    async with serve_chunking_relay(data, protocol_version=protocol, streaming=streaming, chunks=3) as url:
        report, events = await run(data, AssessmentConfig(agent_url=url, tasks=FIVE))
    assert_like_the_oracle(report, events, 5)


@pytest.mark.parametrize("streaming", [False, True], ids=["final task", "event stream"])
async def test_a_03_server_echoing_the_whole_conversation_is_not_charged_for_it(
    data: RetailData, streaming: bool
) -> None:
    """Ten look-ups before the gold actions of a 12-action task: the echo of the conversation grows past
    max_reply_values (2,048) long before the end. One chunk per answer, so that only the echo is tested."""
    seen: list[int] = []

    def measured(app: Any) -> Any:
        async def recorder(scope: Any, receive: Any, send: Any) -> None:
            async def sending(message: Any) -> None:
                if message["type"] == "http.response.body":
                    seen.append(len(message.get("body", b"")))
                await send(message)

            await app(scope, receive, sending)

        return recorder

    tasks = TaskSelection(task_ids=["23", "30"])
    async with serve_chunking_relay(
        data, protocol_version="0.3", streaming=streaming, chunks=1, lookups=10, wrap=measured
    ) as url:
        report, events = await run(data, AssessmentConfig(agent_url=url, tasks=tasks))
    assert_like_the_oracle(report, events, 2)
    if not streaming:  # asked for one message of history (0 would be all), it sent one: at most our first
        assert max(seen) < 32 * 1024, max(seen)  # (26 KB); all of it grows to some 60 KB in these tasks


async def test_zoneless_timestamps_of_a_server_never_fail_a_reply(data: RetailData) -> None:
    for protocol in ("1.0", "0.3"):
        for streaming in (False, True):
            async with serve_chunking_relay(
                data, protocol_version=protocol, streaming=streaming, wrap=ZonelessTimestamps
            ) as url:
                report, events = await run(data, AssessmentConfig(agent_url=url, tasks=FIVE))
            assert_like_the_oracle(report, events, 5)


@pytest.mark.parametrize("streaming", [True, False], ids=["event stream", "polled"])
async def test_fasta2a_agents_score_like_the_oracle(data: RetailData, streaming: bool) -> None:
    """fasta2a 2.1 as it ships (its card says it streams); "polled" says it does not, so its `submitted`
    task is polled until complete (0.25 s per turn: fewer tasks)."""
    tasks = FIVE if streaming else TaskSelection(task_ids=["0", "5"])
    async with serve_fasta2a_relay(data, streaming=streaming) as url:
        report, events = await run(data, AssessmentConfig(agent_url=url, tasks=tasks))
    assert_like_the_oracle(report, events, len(tasks.task_ids or []))


def _big_message(size: int) -> list[dict[str, Any]]:
    return [
        {
            "kind": "message",
            "role": "user",
            "messageId": "m0",
            "parts": [{"kind": "text", "text": "x" * size}],
        }
    ]


async def test_a_1_mb_echo_is_read_past_and_one_past_max_echo_bytes_is_charged(data: RetailData) -> None:
    tasks = TaskSelection(task_ids=["0"])
    floods: list[RewrittenTasks] = []

    async with serve_chunking_relay(
        data,
        protocol_version="0.3",
        streaming=False,
        chunks=1,
        wrap=RewrittenTasks.echo(_big_message(1_000_000), floods),
    ) as url:
        report, events = await run(data, AssessmentConfig(agent_url=url, tasks=tasks))
    assert floods[0].rewritten >= 5
    assert_like_the_oracle(report, events, 1)

    # max_reply_bytes 16 KiB + max_echo_bytes 64 KiB = 81,920 bytes a response may take: an echo of 76,000
    # bytes (with the answer and headers, some 1.5 KB) is read past, one of 82,000 ends the trial.
    limits = AgentLimits(max_reply_bytes=16_384, max_echo_bytes=65_536)
    for size, reward in ((76_000, 1.0), (82_000, 0.0)):
        async with serve_chunking_relay(
            data,
            protocol_version="0.3",
            streaming=False,
            chunks=1,
            wrap=RewrittenTasks.echo(_big_message(size), floods),
        ) as url:
            report, events = await run(data, AssessmentConfig(agent_url=url, tasks=tasks), limits=limits)
        (result,) = events.results
        assert result.reward == reward, (size, result.error)
        if reward == 0.0:
            assert result.termination_reason == "agent_error"
            assert (
                result.error is not None and "81920 bytes (max_reply_bytes + max_echo_bytes)" in result.error
            )


async def test_a_million_value_history_is_refused_by_its_size(data: RetailData) -> None:
    million: list[Any] = [[]] * 1_000_000  # 3 MB on the wire
    floods: list[RewrittenTasks] = []
    wrap = RewrittenTasks.echo(million, floods)
    async with serve_chunking_relay(
        data, protocol_version="0.3", streaming=False, chunks=1, wrap=wrap
    ) as url:
        _, events = await run(data, AssessmentConfig(agent_url=url, tasks=TaskSelection(task_ids=["0"])))
    (result,) = events.results
    assert result.termination_reason == "agent_error" and result.reward == 0.0
    assert result.error is not None and "max_reply_bytes + max_echo_bytes" in result.error


async def test_a_field_the_client_reads_that_is_malformed_is_refused_naming_it_in_one_line(
    data: RetailData,
) -> None:
    def text_not_a_string(task: dict[str, Any]) -> None:
        for artifact in task.get("artifacts", []):
            artifact["parts"][0]["text"] = 5

    for protocol in ("0.3", "1.0"):
        async with serve_chunking_relay(
            data,
            protocol_version=protocol,
            streaming=False,
            wrap=lambda app: RewrittenTasks(app, text_not_a_string),
        ) as url:
            _, events = await run(data, AssessmentConfig(agent_url=url, tasks=TaskSelection(task_ids=["0"])))
        (result,) = events.results
        assert result.termination_reason == "agent_error" and result.error is not None
        assert "\n" not in result.error, result.error
        assert "text" in result.error and "string" in result.error.lower(), result.error


def test_the_history_asked_for_is_the_smallest_the_cards_protocol_version_honours() -> None:
    def card(*versions: str) -> Any:
        interfaces = [
            AgentInterface(url="http://a/", protocol_binding="JSONRPC", protocol_version=v) for v in versions
        ]
        return AgentCard(name="a", supported_interfaces=interfaces)

    assert history_length_for(card("1.0")) == 0
    assert history_length_for(card("0.3.0")) == 1  # a2a-sdk 0.3 and @a2a-js/sdk 0.3 read 0 as "no limit"
    assert history_length_for(card("0.3.0", "1.0")) == 0  # the SDK's client picks 1.0
    assert history_length_for(card("")) == 0  # no version: the SDK speaks 1.x to it


async def test_packaging_is_read_alike_in_every_domain(data: RetailData) -> None:
    """Airline through the same chunked, streamed relay: the client knows nothing of domains."""
    async with serve_chunking_relay(data, protocol_version="0.3", streaming=True) as url:
        config = AssessmentConfig(agent_url=url, domain="airline", tasks=TaskSelection(num_tasks=4))
        report, events = await run(data, config)
    assert report.domain == "airline"
    assert_like_the_oracle(report, events, 4)
