"""The agent_host label of /metrics takes a value per agent host a requester names: only the most recently
seen `METRICS_AGENT_HOSTS` keep a series."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from prometheus_client import generate_latest

from api.runtime.metrics import AGENT_HOSTS, REGISTRY, TURN_SECONDS, observe_turn


@pytest.fixture
def few_hosts() -> Iterator[None]:
    kept = AGENT_HOSTS.max_entries
    AGENT_HOSTS.clear()
    AGENT_HOSTS.max_entries = 8
    try:
        yield
    finally:
        AGENT_HOSTS.clear()
        AGENT_HOSTS.max_entries = kept


def hosts_with_series() -> set[str]:
    return {sample.labels["agent_host"] for metric in TURN_SECONDS.collect() for sample in metric.samples}


def test_turn_latency_series_are_kept_for_the_most_recent_hosts_only(few_hosts: None) -> None:
    observe_turn("kept.example:80", 0.1)
    for n in range(1000):
        observe_turn(f"agent-{n}.example:80", 0.1)
        if n % 5 == 0:
            observe_turn("kept.example:80", 0.2)  # seen often: never the least recently seen
    assert len(hosts_with_series()) == 8
    assert "kept.example:80" in hosts_with_series()
    assert "agent-999.example:80" in hosts_with_series()
    assert "agent-0.example:80" not in generate_latest(REGISTRY).decode()
