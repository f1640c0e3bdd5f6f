"""/metrics: the Prometheus text a scraper reads after a real assessment (oracle agent, real database), and
the LLM counters after real requests to an OpenAI-compatible test server (tests/support/fake_llm.py)."""

from __future__ import annotations

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from green_agent.config import LLMEndpoint
from green_agent.core.errors import LLMError
from green_agent.llm.client import ChatLLM, RetryPolicy
from tests.api.servers import poll, serve_green
from tests.support.fake_llm import FakeReply, serve_fake_llm


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


async def scrape(client: httpx.AsyncClient) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = await client.get("/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    return samples(response.text)


async def test_metrics_after_an_assessment(database_url: str, oracle_url: str) -> None:
    host = oracle_url.split("//")[1].rstrip("/")
    async with serve_green(database_url) as url, httpx.AsyncClient(base_url=url, timeout=30) as client:
        before = await scrape(client)
        config = {"agent_url": oracle_url, "tasks": {"task_ids": ["0", "1", "2"]}, "trials": 1}
        assessment_id = (await client.post("/assessments", json=config)).json()["id"]
        await poll(client, f"/assessments/{assessment_id}", lambda b: b["status"] == "completed")
        after = await scrape(client)

    def delta(name: str, **labels: str) -> float:
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0.0) - before.get(key, 0.0)

    assert after[("green_agent_assessments", (("status", "completed"),))] == 1
    assert after[("green_agent_assessments", (("status", "running"),))] == 0
    assert delta("green_agent_trials_stored_total", termination_reason="user_stop") == 3
    turns = delta("green_agent_turn_seconds_count", agent_host=host)
    assert turns >= 3 and delta("green_agent_turn_seconds_sum", agent_host=host) > 0
    assert after[("green_agent_queue_jobs", (("status", "todo"),))] == 0
    assert after[("green_agent_live_workers", ())] == 1
    assert ("green_agent_event_loop_lag_seconds", ()) in after


async def test_llm_calls_latency_and_errors_are_counted() -> None:
    from api.runtime.metrics import REGISTRY

    def value(name: str, **labels: str) -> float:
        return REGISTRY.get_sample_value(name, labels) or 0.0

    model = "metrics-test-model"
    ok_before = value("green_agent_llm_calls_total", model=model, outcome="ok")
    async with serve_fake_llm(lambda body: FakeReply(content="hello")) as fake:
        llm = ChatLLM(LLMEndpoint(model=model, base_url=fake.base_url), retry=RetryPolicy(max_retries=0))
        try:
            await llm.complete([{"role": "user", "content": "hi"}])
        finally:
            await llm.aclose()
    async with serve_fake_llm(lambda body: FakeReply(status=503)) as failing:
        llm = ChatLLM(LLMEndpoint(model=model, base_url=failing.base_url), retry=RetryPolicy(max_retries=0))
        try:
            with pytest.raises(LLMError):
                await llm.complete([{"role": "user", "content": "hi"}])
        finally:
            await llm.aclose()
    assert value("green_agent_llm_calls_total", model=model, outcome="ok") == ok_before + 1
    assert value("green_agent_llm_calls_total", model=model, outcome="error") >= 1
    assert value("green_agent_llm_seconds_count", model=model) >= 2
