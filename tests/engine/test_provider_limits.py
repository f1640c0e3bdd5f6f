"""Real providers say no: a rate limit slows a run down, an outage pauses it, and neither excludes a trial
while the operator's tolerance lasts (threat model, principle 10).

The customer and the judge are the deterministic fake provider (tests/support/fake_llm.py: `ProviderRules`,
`scenario_customer`, `passing_judge`) over real loopback HTTP; the white agent is the oracle over real A2A.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from green_agent import AssessmentConfig, LLMEndpoint, TaskSelection
from green_agent.core.errors import LLMUnavailableError
from green_agent.llm import gate as llm_gate
from green_agent.llm.client import ChatLLM, RetryPolicy
from green_agent.reference_agents import serve_reference_agent
from retail_domain import RetailData
from tests.engine.conftest import Collector, engine_for, run
from tests.support.fake_llm import (
    FakeReply,
    ProviderRules,
    RetryAfterStyle,
    customer_or_judge,
    serve_fake_llm,
)

TASKS = ["0", "1", "2", "3", "4", "5", "6", "7", "24", "36", "40", "41"]
"""DB-only tasks and tasks with NL assertions (2, 3, 24, 36, ...): the judge is asked for those."""


def _settings(fake_url: str, **limits: Any) -> dict[str, Any]:
    endpoint = LLMEndpoint(model="fake", base_url=fake_url, **limits)
    return {
        "user_models": {"fake": endpoint},
        "default_user_model": "fake",
        "judge": endpoint,
    }


@contextmanager
def gate_events() -> Iterator[list[llm_gate.GateEvent]]:
    events: list[llm_gate.GateEvent] = []
    llm_gate.observers.append(events.append)
    try:
        yield events
    finally:
        llm_gate.observers.remove(events.append)


@pytest.mark.parametrize("style", ["seconds", "http-date", "ms", "reset-requests", "reset-tokens", "none"])
async def test_a_429_waits_as_long_as_the_provider_says_and_spends_no_retry(style: RetryAfterStyle) -> None:
    """One request a second; three at once, with no retry allowed at all: each waits its turn, none fails."""
    rules = ProviderRules(requests_per_second=1, retry_after=style)
    async with serve_fake_llm(lambda body: FakeReply("hello"), rules=rules) as fake:
        llm = ChatLLM(LLMEndpoint(model="m", base_url=fake.base_url), retry=RetryPolicy(0, backoff_s=0.05))
        began = time.monotonic()
        replies = await asyncio.gather(*(llm.complete([{"role": "user", "content": "hi"}]) for _ in range(3)))
        took = time.monotonic() - began
        await llm.aclose()
    assert [r.content for r in replies] == ["hello"] * 3
    assert fake.answered[200] == 3 and fake.answered[429] >= 1
    assert took >= 1.9  # the window freed twice: the waits were the provider's, not the 0.05 s backoff


async def test_a_calls_growing_backoff_is_its_own_and_does_not_pause_the_endpoint() -> None:
    """One call meets four 429s in a row (Retry-After: 0.1 s) and backs off 0.4, 0.8, 1.6, 3.2 s as its own
    policy says; every other request on the endpoint is held only the 0.1 s the provider asked for."""
    unlucky_429s = 0

    def respond(body: dict[str, Any]) -> FakeReply:
        nonlocal unlucky_429s
        if unlucky_429s < 4:
            unlucky_429s += 1
            return FakeReply(status=429, headers={"Retry-After": "0.1"})
        return FakeReply("hello")

    async with serve_fake_llm(respond) as fake:
        llm = ChatLLM(LLMEndpoint(model="m", base_url=fake.base_url), retry=RetryPolicy(0, backoff_s=0.4))
        gate = llm.gate
        assert gate is not None
        pauses: list[float] = []

        def after_the_429(event: llm_gate.GateEvent) -> None:
            if event.kind == "rate_limited":  # the gate sets its pause right after telling
                loop.call_soon(lambda: pauses.append(gate._paused_until - gate._clock()))

        loop = asyncio.get_running_loop()
        llm_gate.observers.append(after_the_429)
        try:
            began = time.monotonic()
            await llm.complete([{"role": "user", "content": "hi"}])
            took = time.monotonic() - began
        finally:
            llm_gate.observers.remove(after_the_429)
            await llm.aclose()
    assert unlucky_429s == 4 and len(pauses) == 4
    assert max(pauses) <= 0.1  # the provider's time, not the call's 0.8, 1.6, 3.2 s
    assert took >= 0.4 + 0.8 + 1.6 + 3.2  # the call's own backoff


async def test_rate_limited_oracle_run_excludes_nothing_with_the_operators_limits(data: RetailData) -> None:
    """5 requests a second and 6 in flight (429 + Retry-After: 1 beyond, as in the issue), 12 trials at
    once, the customer and the judge on that one key: configured with the key's limits, the run is paced
    and almost never told no."""
    rules = ProviderRules(requests_per_second=5, max_in_flight=6, retry_after_s=1.0, latency_s=0.05)
    async with (
        serve_fake_llm(customer_or_judge(data), rules=rules, keep_requests=False) as fake,
        serve_reference_agent("oracle", data=data) as url,
    ):
        config = AssessmentConfig(agent_url=url, tasks=TaskSelection(task_ids=TASKS), concurrency=12)
        settings = _settings(fake.base_url, requests_per_minute=300, max_in_flight=6)
        began = time.monotonic()
        report, _ = await run(data, config, **settings)
        took = time.monotonic() - began
    assert report.excluded["infrastructure_error"] == 0 and report.complete
    assert report.avg_reward == 1.0
    answered = fake.answered[200]
    assert fake.answered[429] <= 0.1 * fake.total_answered, fake.answered
    assert took <= 1.5 * answered / 5 + 2, (took, answered)


async def test_rate_limited_oracle_run_excludes_nothing_without_configured_limits(data: RetailData) -> None:
    """The same provider, the operator told nothing: the gate learns from the 429s (AIMD window, a rate
    from what was being answered, the provider's pauses): slower, never fatal."""
    rules = ProviderRules(requests_per_second=5, max_in_flight=6, retry_after_s=1.0, latency_s=0.05)
    async with (
        serve_fake_llm(customer_or_judge(data), rules=rules, keep_requests=False) as fake,
        serve_reference_agent("oracle", data=data) as url,
    ):
        config = AssessmentConfig(agent_url=url, tasks=TaskSelection(task_ids=TASKS), concurrency=12)
        with gate_events() as events:
            report, _ = await run(data, config, **_settings(fake.base_url), llm_max_retries=0)
    assert report.excluded["infrastructure_error"] == 0 and report.avg_reward == 1.0
    assert fake.answered[429] >= 1
    assert sum(e.kind == "rate_limited" for e in events) == fake.answered[429]
    assert fake.answered[429] <= 0.5 * fake.total_answered, fake.answered


async def test_an_in_flight_cap_is_held_by_the_gate(data: RetailData) -> None:
    rules = ProviderRules(max_in_flight=2, latency_s=0.1)
    async with (
        serve_fake_llm(customer_or_judge(data), rules=rules) as fake,
        serve_reference_agent("oracle", data=data) as url,
    ):
        config = AssessmentConfig(agent_url=url, tasks=TaskSelection(task_ids=TASKS[:6]), concurrency=6)
        report, _ = await run(data, config, **_settings(fake.base_url, max_in_flight=2))
    assert report.complete and fake.answered[429] == 0 and fake.peak_in_flight == 2


@pytest.mark.parametrize("outage", ["503", "refuse"])
async def test_an_outage_is_waited_out_and_never_charged_to_the_agent(data: RetailData, outage: str) -> None:
    """The provider is down (HTTP 503, or refusing connections) for 3 s, starting 0.3 s into the run; the
    agent's own turn timeout is 1 s and no trial is run twice: every trial waits and scores."""
    rules = ProviderRules(outage_from_s=0.3, outage_s=3.0, outage=outage, latency_s=0.05)  # type: ignore[arg-type]
    async with (
        serve_fake_llm(customer_or_judge(data), rules=rules) as fake,
        serve_reference_agent("oracle", data=data, delay_s=0.05) as url,
    ):
        config = AssessmentConfig(
            agent_url=url, tasks=TaskSelection(task_ids=TASKS[:8]), concurrency=8, turn_timeout_s=1.0
        )
        settings = {**_settings(fake.base_url), "llm_retry_backoff_s": 0.1, "trial_retries": 0}
        seen: set[str] = set()
        async with engine_for(data, **settings) as engine:

            async def watch() -> None:  # what a progress display polls
                while True:
                    seen.update(status.describe() for status in engine.provider_status())
                    await asyncio.sleep(0.05)

            watching = asyncio.create_task(watch())
            collector = Collector()
            with gate_events() as events:
                report = await engine.run(config, on_event=collector)
            watching.cancel()
    assert report.excluded["infrastructure_error"] == 0 and report.complete, report.termination_counts
    assert any(text.startswith("waiting for fake at 127.0.0.1:") and " down since " in text for text in seen)
    assert report.avg_reward == 1.0 and report.trials_scored == 8
    states = [e.state for e in events if e.kind == "state"]
    assert states[:1] == ["down"] and states[-1] == "ok"
    assert sum(e.seconds for e in events if e.kind == "waited") > 2.0
    assert len([e for e in collector.events if e.kind == "trial_started"]) == 8  # none run twice


async def test_past_the_outage_tolerance_the_waiting_trials_are_excluded_at_once(data: RetailData) -> None:
    """Down for 4 s with a tolerance of 0.5 s: the trials end as excluded infrastructure errors, naming the
    outage, without the trial retries (they would end the same way); once the endpoint is back the next
    assessment on the same engine runs normally (the gate went on probing)."""
    rules = ProviderRules(outage_from_s=0.0, outage_s=4.0)
    async with (
        serve_fake_llm(customer_or_judge(data), rules=rules) as fake,
        serve_reference_agent("oracle", data=data) as url,
    ):
        config = AssessmentConfig(agent_url=url, tasks=TaskSelection(task_ids=TASKS[:4]), concurrency=4)
        settings = {**_settings(fake.base_url), "llm_retry_backoff_s": 0.05, "llm_outage_tolerance_s": 0.5}
        async with engine_for(data, **settings) as engine:
            events = Collector()
            began = time.monotonic()
            report = await engine.run(config, on_event=events)
            took = time.monotonic() - began
            assert report.excluded["infrastructure_error"] == 4 and not report.complete
            assert all("LLMOutage" in (r.error or "") for r in events.results), events.results[0].error
            assert all("GREEN_AGENT_LLM_OUTAGE_TOLERANCE_S" in (r.error or "") for r in events.results)
            assert took < 3.0  # not retried: trial_retries (2, 5 s apart) would have taken 15 s
            waiting = (await engine.open_assessment(config)).waiting_for()
            assert [s.state for s in waiting] == ["down"] and "down since" in waiting[0].describe()
            await asyncio.sleep(max(0.0, 4.5 - (time.monotonic() - fake.started_at)))
            again = await engine.run(config)
    assert again.complete and again.avg_reward == 1.0


async def test_an_assessment_started_during_an_outage_of_an_endpoint_that_answered_before_waits_for_it(
    data: RetailData,
) -> None:
    """The start check (no answer: "unreachable, check that it runs") is for a wrong URL; an endpoint that
    answered an earlier assessment of this process and now refuses connections is an outage: the new
    assessment passes the check and its trials wait for the endpoint like those of a running one."""
    rules = ProviderRules(outage_from_s=3.0, outage_s=2.0, outage="refuse")
    async with (
        serve_fake_llm(customer_or_judge(data), rules=rules) as fake,
        serve_reference_agent("oracle", data=data) as url,
    ):
        config = AssessmentConfig(agent_url=url, tasks=TaskSelection(task_ids=TASKS[:2]), concurrency=2)
        settings = {**_settings(fake.base_url), "llm_retry_backoff_s": 0.1, "llm_check_timeout_s": 0.5}
        async with engine_for(data, **settings) as engine, engine_for(data, **settings) as fresh:
            await engine.check_llms(config)
            assert (await engine.run(config)).complete
            await asyncio.sleep(max(0.0, 3.2 - (time.monotonic() - fake.started_at)))  # into the outage
            await engine.check_llms(config)  # answered before: passes
            with pytest.raises(LLMUnavailableError, match="unreachable"):
                await fresh.check_llms(config)  # never answered this process: a wrong URL, said at once
            again = await engine.run(config)
            took_until = time.monotonic() - fake.started_at
    assert again.complete and again.avg_reward == 1.0
    assert took_until >= 5.0  # it waited for the end of the outage


async def test_a_refused_key_is_no_outage(data: RetailData) -> None:
    """401 (and 403/404) are configuration mistakes: they fail at once, and never open the breaker."""
    async with serve_fake_llm(lambda body: FakeReply("hi"), api_key="right") as fake:
        llm = ChatLLM(LLMEndpoint(model="m", base_url=fake.base_url, api_key="wrong"))
        began = time.monotonic()
        for _ in range(5):
            with pytest.raises(Exception, match="HTTP 401"):
                await llm.complete([{"role": "user", "content": "hi"}])
        await llm.aclose()
    assert time.monotonic() - began < 1.0
    assert llm.gate is not None and llm.gate.status().state == "ok" and not llm.gate.down


async def test_a_small_assessment_is_not_starved_by_a_large_one_sharing_the_key(data: RetailData) -> None:
    """One request at a time on the key; a 16-trial assessment starts first, a 2-trial one right after:
    the turns alternate between them, so the small one ends long before the large one."""
    rules = ProviderRules(latency_s=0.1)
    async with (
        serve_fake_llm(customer_or_judge(data), rules=rules) as fake,
        serve_reference_agent("oracle", data=data) as url,
    ):
        large = AssessmentConfig(agent_url=url, tasks=TaskSelection(num_tasks=16), concurrency=16)
        small = AssessmentConfig(agent_url=url, tasks=TaskSelection(task_ids=["0", "1"]), concurrency=2)
        settings = {**_settings(fake.base_url, max_in_flight=1), "max_concurrent_trials": 32}
        async with engine_for(data, **settings) as engine:
            began = time.monotonic()
            ended: dict[str, float] = {}

            async def timed(name: str, config: AssessmentConfig, delay: float) -> None:
                await asyncio.sleep(delay)
                report = await engine.run(config, tenant=name, assessment_id=name)
                assert report.complete
                ended[name] = time.monotonic() - began

            await asyncio.gather(timed("large", large, 0.0), timed("small", small, 0.2))
    # First come, first served, the small one's requests would each wait behind the large one's (~3 s).
    assert ended["small"] < 0.5 * ended["large"], ended


async def test_two_processes_sharing_one_key_settle_on_its_limit() -> None:
    """Two worker processes, each configured with the key's whole limit (they do not know of each other),
    40 requests each at a provider allowing 10 a second and 4 in flight: every request is answered, the
    429s stay few, and the pair takes about what the limit allows."""
    rules = ProviderRules(requests_per_second=10, max_in_flight=4, retry_after_s=1.0, latency_s=0.1)
    async with serve_fake_llm(lambda body: FakeReply("ok"), rules=rules, keep_requests=False) as fake:
        command = [sys.executable, "-m", "tests.support.provider_client", fake.base_url, "--requests", "40"]
        command += ["--concurrency", "8", "--max-in-flight", "4", "--requests-per-minute", "600"]
        children = [
            await asyncio.create_subprocess_exec(*command, stdout=asyncio.subprocess.PIPE) for _ in range(2)
        ]
        outputs = [json.loads((await child.communicate())[0]) for child in children]
    assert [o["answered"] for o in outputs] == [40, 40] and [o["failed"] for o in outputs] == [0, 0]
    assert fake.answered[200] == 80
    assert fake.answered[429] <= 0.25 * fake.total_answered, fake.answered
    # Not a speed target (bench/provider_limits.py measures those): no pause storm, each ends in about what
    # the shared limit allows for both (8 s).
    assert max(o["seconds"] for o in outputs) <= 2 * 80 / 10, outputs
