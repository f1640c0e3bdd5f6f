"""The endpoint gate on its own (green_agent/llm/gate.py): what a provider's headers say about waiting, the
in-flight window that shrinks on a 429 and grows back, turns that go round-robin between assessments, the
breaker that holds trials back from a down endpoint, and the outage tolerance."""

from __future__ import annotations

import asyncio
import itertools
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from green_agent.core.errors import LLMOutage
from green_agent.llm.gate import (
    MAX_PROVIDER_WAIT_S,
    PARTY,
    RATE_DECREASE,
    RATE_PLATEAU,
    SLOW_START_WINDOW,
    EndpointGate,
    EndpointLimits,
    GatePolicy,
    GateRegistry,
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


async def test_a_429_halves_the_in_flight_window_which_grows_back_on_answers() -> None:
    gate = EndpointGate("fake", EndpointLimits(max_in_flight=8))
    turns = [await gate._acquire(0, True) for _ in range(8)]
    assert gate.window == 8 and gate.in_flight == 8
    turns[0].rate_limited(0.0)
    assert gate.window == 4  # halved, from the 8 the provider saw
    turns[1].rate_limited(0.0)  # sent before the decrease: the same congestion, no second halving
    assert gate.window == 4
    for turn in turns[2:]:
        turn.answered()
    assert gate.in_flight == 0
    # Grows back by about one per window of answers, only while the window is what holds requests back.
    for _ in range(40):
        held = [await gate._acquire(0, True) for _ in range(int(gate.window))]
        for turn in held:
            turn.answered()
    assert gate.window == 8  # capped at the operator's max_in_flight


async def test_without_a_configured_rate_a_429_sets_one_from_what_was_being_answered() -> None:
    gate = EndpointGate("fake", policy=GatePolicy(probe_backoff_s=0.0))
    for _ in range(20):
        async with gate.request() as turn:
            turn.answered()
    assert gate.status().requests_per_minute is None
    async with gate.request() as turn:
        turn.rate_limited(0.0)
    limited = gate.status().requests_per_minute
    assert limited is not None and limited > 0
    async with gate.request() as turn:
        turn.answered()
    assert (gate.status().requests_per_minute or 0) > limited  # and it grows again with every answer


async def test_without_max_in_flight_the_window_starts_at_four_and_grows_by_one_per_answer_until_a_429() -> (
    None
):
    """Slow start: a run's first burst meets an unknown in-flight cap with four requests, not all of them."""
    gate = EndpointGate("fake")
    assert gate.status().allowed_in_flight == SLOW_START_WINDOW == 4
    turns = [await gate._acquire(0, True) for _ in range(4)]
    fifth = asyncio.create_task(gate._acquire(0, True))
    await asyncio.sleep(0.01)
    assert not fifth.done()  # the window holds it
    turns[3].answered()  # it went out at a full window: one more
    assert gate.window == 5
    turns.append(await fifth)
    sixth = await gate._acquire(0, True)  # the fifth place, now free
    sixth.answered()
    assert gate.window == 6
    sixth_place = await gate._acquire(0, True)
    sixth_place.rate_limited(0.0)  # the first 429 ends slow start: half the 5 the provider held
    assert gate.window == 2.5
    for turn in turns:
        turn.answered()
    window = gate.window
    full = [await gate._acquire(0, True) for _ in range(int(window))]
    full[-1].answered()  # from now on one more per window of answers
    assert gate.window == pytest.approx(window + 1 / window)


async def test_a_429_while_our_pacing_held_requests_back_cuts_the_rate_not_the_window() -> None:
    """Requests waited for our rate when this one went out: the provider met our rate, so the ceiling is the
    rate it went out at and the in-flight window, which held nothing back, stays."""
    gate = EndpointGate("fake", EndpointLimits(max_in_flight=8, requests_per_minute=6000))
    paced = gate.rate
    turns = await asyncio.gather(*(gate._acquire(0, True) for _ in range(3)))  # 10 ms apart
    turns[2].rate_limited(0.0)
    assert gate.window == 8
    assert gate.rate == pytest.approx(RATE_DECREASE * paced)
    # Back fast to just under the ceiling (5% of it per answer), then probing above it slowly.
    for _ in range(8):
        async with gate.request() as turn:
            turn.answered()
    assert gate.rate == pytest.approx(RATE_PLATEAU * paced, rel=0.002)


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def _answered_at(gate: EndpointGate, clock: _Clock, times: list[float]) -> None:
    for moment in times:
        clock.now = moment
        async with gate.request() as turn:
            turn.answered()


async def test_the_rate_set_by_a_429_does_not_count_the_last_pause_as_a_lower_limit() -> None:
    """10 answers a second, a 429 that pauses the endpoint 3 s, 10 more a second: what was being answered is
    10 a second (the pause is time nothing could start), not 20 answers in 5 s."""
    clock = _Clock()
    gate = EndpointGate("fake", EndpointLimits(max_in_flight=8), clock=clock)
    await _answered_at(gate, clock, [1000 + i / 10 for i in range(10)])
    clock.now = 1001.0
    async with gate.request() as turn:
        turn.rate_limited(3.0)
    assert gate.rate == pytest.approx(RATE_DECREASE * 10)
    await _answered_at(gate, clock, [1004 + i * 0.15 for i in range(10)])  # slower than our climbing rate
    before = gate.rate
    clock.now = 1005.5
    async with gate.request() as turn:
        turn.rate_limited(0.0)
    # A guess (our rate held nothing back): the lower of our rate and the 20 / (5.5 - 3) s answered.
    assert gate.rate == pytest.approx(RATE_DECREASE * min(before, 20 / 2.5), rel=0.01)


async def test_a_calls_own_backoff_does_not_pause_the_endpoint() -> None:
    """A call's third 429 in a row backs off 4 s; the provider said 1 s: others on the endpoint wait 1 s."""
    clock = _Clock()
    gate = EndpointGate("fake", EndpointLimits(max_in_flight=8), clock=clock)
    async with gate.request() as turn:
        turn.rate_limited(1.0)
    clock.now += 1.0
    waited = time.monotonic()
    async with gate.request() as turn:
        turn.answered()
    assert time.monotonic() - waited < 0.5


async def test_a_configured_rate_spaces_request_starts() -> None:
    gate = EndpointGate("fake", EndpointLimits(requests_per_minute=600))  # one every 0.1 s
    starts = []

    async def one() -> None:
        async with gate.request() as turn:
            starts.append(time.monotonic())
            turn.answered()

    await asyncio.gather(*(one() for _ in range(6)))
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert min(gaps) >= 0.099 and sum(gaps) < 0.5 + 0.25


async def test_tokens_per_minute_holds_requests_back_by_their_estimate() -> None:
    gate = EndpointGate("fake", EndpointLimits(tokens_per_minute=6_000))  # 100 tokens a second
    began = time.monotonic()

    async def one() -> None:
        async with gate.request(tokens=50) as turn:
            turn.answered(50)

    await asyncio.gather(*(one() for _ in range(5)))  # 250 tokens: the first goes at once, then 2/s
    assert 1.8 <= time.monotonic() - began < 3.0


def _policy(*, breaker_failures: int = 3, outage_tolerance_s: float = 900.0) -> GatePolicy:
    return GatePolicy(
        outage_tolerance_s=outage_tolerance_s,
        breaker_failures=breaker_failures,
        probe_backoff_s=0.05,
        max_probe_backoff_s=0.2,
    )


async def test_the_breaker_opens_after_failures_in_a_row_holds_trials_and_closes_on_an_answer() -> None:
    gate = EndpointGate("fake", policy=_policy())
    for _ in range(2):
        async with gate.request() as turn:
            turn.failed("HTTP 503")
    assert not gate.down  # two in a row: not yet
    async with gate.request() as turn:
        turn.answered()
    for _ in range(3):
        async with gate.request() as turn:
            turn.failed("HTTP 503")
    opened = time.monotonic()
    assert gate.down and gate.status().state == "down" and gate.status().since is not None
    assert "down since" in gate.status().describe()
    # A trial waiting to start is let through only so that somebody probes; a second one waits.
    first = asyncio.create_task(gate.wait_until_up())
    second = asyncio.create_task(gate.wait_until_up())
    await asyncio.sleep(0.01)
    assert first.done() and not second.done()
    # The probe goes after the backoff; it fails; the next one waits twice as long, then is answered.
    async with gate.request() as probe:
        assert probe.probe and time.monotonic() - opened >= 0.045
        probe.failed("connection refused")
    began = time.monotonic()
    async with gate.request() as probe:
        assert probe.probe and time.monotonic() - began >= 0.09
        probe.answered()
    assert not gate.down and gate.status().state == "ok"
    await asyncio.wait_for(second, 1.0)  # trials start again


async def test_while_down_only_the_probe_goes_and_the_others_follow_when_it_is_answered() -> None:
    gate = EndpointGate("fake", policy=_policy(breaker_failures=1))
    async with gate.request() as turn:
        turn.failed("HTTP 502")
    order: list[str] = []

    async def one(name: str) -> None:
        async with gate.request() as turn:
            order.append(f"{name}{'-probe' if turn.probe else ''}")
            turn.answered()

    await asyncio.gather(*(one(n) for n in "abc"))
    assert order == ["a-probe", "b", "c"]


async def test_past_the_tolerance_waiting_requests_fail_and_a_later_first_attempt_probes() -> None:
    gate = EndpointGate("fake", policy=_policy(breaker_failures=1, outage_tolerance_s=0.2))
    async with gate.request() as turn:
        turn.failed("HTTP 503")
    began = time.monotonic()
    with pytest.raises(LLMOutage, match=r"down since .* GREEN_AGENT_LLM_OUTAGE_TOLERANCE_S.*HTTP 503"):
        # A retry (not a first attempt) waits for probes until the tolerance has passed, then fails.
        while True:
            async with gate.request(first=False) as turn:
                turn.failed("HTTP 503")
    assert 0.19 <= time.monotonic() - began < 1.0
    assert gate.gave_up
    await gate.wait_until_up()  # past the tolerance trials start (and end at their first request)
    with pytest.raises(LLMOutage):
        async with gate.request(first=False):
            pass
    await asyncio.sleep(0.25)  # the probe backoff (at most 0.2 s here) is over
    async with gate.request(first=True) as probe:  # a new call may still probe, and finds it back
        assert probe.probe
        probe.answered()
    assert not gate.down and not gate.gave_up


async def test_only_429s_for_the_tolerance_end_the_waiting_too() -> None:
    gate = EndpointGate("fake", policy=_policy(outage_tolerance_s=0.2))
    with pytest.raises(LLMOutage, match="rate limiting every request"):
        while True:
            async with gate.request(first=False) as turn:
                turn.rate_limited(0.05)
    assert gate.status().state == "rate_limited"
    assert gate.status().describe() == "waiting for fake: rate limited"


async def test_a_cancelled_waiter_leaves_no_trace() -> None:
    gate = EndpointGate("fake", EndpointLimits(max_in_flight=1))
    async with gate.request() as turn:
        waiting = asyncio.create_task(gate._acquire(0, True))
        await asyncio.sleep(0.01)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        turn.answered()
    assert gate.idle and gate.in_flight == 0


def test_one_gate_per_endpoint_and_key_with_the_strictest_limits() -> None:
    registry = GateRegistry()
    customer = registry.gate("m", "http://llm:8000/v1", "k1", EndpointLimits(max_in_flight=8))
    judge = registry.gate(
        "m", "http://llm:8000/v1", "k1", EndpointLimits(max_in_flight=4, requests_per_minute=60)
    )
    other_key = registry.gate("m", "http://llm:8000/v1", "k2", EndpointLimits())
    assert customer is judge and other_key is not customer
    assert judge.limits == EndpointLimits(max_in_flight=4, requests_per_minute=60)
    assert judge.name == "m at llm:8000"  # never the path, query or key
    assert len(registry.statuses()) == 2
