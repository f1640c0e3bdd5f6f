"""The endpoint gate on its own (green_agent/llm_gate.py): what a provider's headers say about waiting, the
in-flight window that shrinks on a 429 and grows back, turns that go round-robin between assessments, the
breaker that holds trials back from a down endpoint, and the outage tolerance."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from green_agent.llm_gate import (
    MAX_PROVIDER_WAIT_S,
    PARTY,
    EndpointGate,
    EndpointLimits,
    parse_duration,
    provider_wait,
)
from tests.support.fake_llm import openai_duration, retry_after_headers


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("20ms", 0.02), ("1s", 1.0), ("1.5s", 1.5), ("6m0s", 360.0), ("1h2m3.5s", 3723.5), ("7", 7.0)],
)
def test_openai_reset_durations_are_read(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "soon", "1x", "1s2", "-", "s", "1s 2m", "9" * 50])
def test_unreadable_durations_are_none(text: str) -> None:
    assert parse_duration(text) is None


def test_provider_wait_reads_every_variant_and_prefers_the_exhausted_limit() -> None:
    now = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert provider_wait({"Retry-After": "3"}) == 3.0
    assert provider_wait({"retry-after": "2.5"}) == 2.5
    date = format_datetime(now + timedelta(seconds=7), usegmt=True)
    assert provider_wait({"Retry-After": date}, now=now) == pytest.approx(7.0)
    assert (
        provider_wait({"Retry-After": format_datetime(now - timedelta(seconds=9), usegmt=True)}, now=now) == 0
    )
    assert provider_wait({"retry-after-ms": "250", "Retry-After": "9"}) == 0.25  # the finer one wins
    # The limit that ran out decides; the other pair is a decoy with a long reset.
    assert provider_wait(retry_after_headers("reset-requests", 1.2)) == pytest.approx(1.2)
    assert provider_wait(retry_after_headers("reset-tokens", 0.02)) == pytest.approx(0.02)
    # Neither says which ran out: the longer reset.
    assert provider_wait({"x-ratelimit-reset-requests": "1s", "x-ratelimit-reset-tokens": "6m0s"}) == 360.0
    assert provider_wait({}) is None
    assert provider_wait({"Retry-After": "whenever"}) is None
    assert provider_wait({"Retry-After": "1e999"}) == MAX_PROVIDER_WAIT_S  # bounded
    assert provider_wait({"retry-after-ms": "nan", "Retry-After": "1"}) is None
    assert openai_duration(360) == "6m0s" and openai_duration(0.02) == "20ms" and openai_duration(1) == "1s"


async def _answer_at_once(gate: EndpointGate, party: str, order: list[str]) -> None:
    PARTY.set(party)
    async with gate.request() as turn:
        order.append(party)
        turn.answered()


async def test_turns_go_round_robin_between_assessments() -> None:
    """A large assessment queued ten requests before a small one queued two: the small one's are granted
    second and fourth, not eleventh and twelfth."""
    gate = EndpointGate("fake", EndpointLimits(max_in_flight=1))
    order: list[str] = []
    async with gate.request() as blocker:  # holds the one place while the queues fill
        large = [asyncio.create_task(_answer_at_once(gate, "large", order)) for _ in range(10)]
        await asyncio.sleep(0.01)
        small = [asyncio.create_task(_answer_at_once(gate, "small", order)) for _ in range(2)]
        await asyncio.sleep(0.01)
        assert order == [] and gate.status().waiting == 12
        blocker.answered()
    await asyncio.gather(*large, *small)
    assert order == ["large", "small", "large", "small"] + ["large"] * 8
    assert gate.idle
