"""/metrics in the Prometheus text format (prometheus-client), and the counters behind it.

Two kinds of numbers:

* counted by this process as things happen (trials stored, white-agent errors, turn latency per agent host,
  LLM calls, latency and tokens, event-loop lag): each process exposes its own, and Prometheus sums them
  over the processes it scrapes;
* read from the database at scrape time (assessments by status, queue depth, live workers): the same in
  every process, since they describe the shared state.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from urllib.parse import urlparse

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from green_agent.core.bounded_cache import BoundedCache
from green_agent.core.models import TranscriptMessage, TrialResult
from green_agent.llm import client as llm
from green_agent.llm import gate as llm_gate

REGISTRY = CollectorRegistry()
NAMESPACE = "green_agent"

ASSESSMENTS = Gauge(
    "assessments", "Assessments by status.", ["status"], namespace=NAMESPACE, registry=REGISTRY
)
TRIALS = Counter(
    "trials_stored",
    "Trials stored by this process, by termination reason.",
    ["termination_reason"],
    namespace=NAMESPACE,
    registry=REGISTRY,
)
WHITE_AGENT_ERRORS = Counter(
    "white_agent_errors",
    "Trials ended by a white-agent error, by error class.",
    ["error_class"],
    namespace=NAMESPACE,
    registry=REGISTRY,
)
TURN_SECONDS = Histogram(
    "turn_seconds",
    "Seconds from a message to the white agent to its reply, by agent host.",
    ["agent_host"],
    namespace=NAMESPACE,
    registry=REGISTRY,
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300),
)
LLM_CALLS = Counter(
    "llm_calls",
    "Requests to user-simulator and judge LLMs, by model and outcome.",
    ["model", "outcome"],
    namespace=NAMESPACE,
    registry=REGISTRY,
)
LLM_SECONDS = Histogram(
    "llm_seconds",
    "Seconds per LLM request, by model.",
    ["model"],
    namespace=NAMESPACE,
    registry=REGISTRY,
    buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120),
)
LLM_TOKENS = Counter(
    "llm_tokens",
    "LLM tokens, by model and kind (prompt, completion).",
    ["model", "kind"],
    namespace=NAMESPACE,
    registry=REGISTRY,
)
LLM_RATE_LIMITED = Counter(
    "llm_rate_limited",
    "429 answers (and 5xx naming a Retry-After) from an LLM endpoint, by endpoint (model at host).",
    ["endpoint"],
    namespace=NAMESPACE,
    registry=REGISTRY,
)
LLM_WAIT_SECONDS = Counter(
    "llm_wait_seconds",
    "Seconds requests waited for their turn at an LLM endpoint (its limits, a provider's pause, an outage).",
    ["endpoint"],
    namespace=NAMESPACE,
    registry=REGISTRY,
)
LLM_ENDPOINT_STATE = Gauge(
    "llm_endpoint_state",
    "1 for the state an LLM endpoint is in (ok, rate_limited, down: its breaker open), 0 for the others.",
    ["endpoint", "state"],
    namespace=NAMESPACE,
    registry=REGISTRY,
)
QUEUE_JOBS = Gauge(
    "queue_jobs",
    "Trial jobs in the queue, by status (todo, doing).",
    ["status"],
    namespace=NAMESPACE,
    registry=REGISTRY,
)
LIVE_WORKERS = Gauge(
    "live_workers", "Queue workers whose heartbeat is recent.", namespace=NAMESPACE, registry=REGISTRY
)
LOOP_LAG = Gauge(
    "event_loop_lag_seconds",
    "How late this process's event loop ran a timer, last measurement.",
    namespace=NAMESPACE,
    registry=REGISTRY,
)
LOOP_LAG_INTERVAL_S = 0.5

# Requesters pick the agent URLs, so the agent_host label could take a new value per assessment and keep a
# histogram (~2 KiB) for each forever. Only the most recently seen hosts keep their series; the least recently
# seen one's is removed (GREEN_AGENT_METRICS_AGENT_HOSTS; the runtime sets the bound from the settings).
AGENT_HOSTS: BoundedCache[str, None] = BoundedCache(64, on_evict=lambda host, _: TURN_SECONDS.remove(host))


def observe_turn(host: str, seconds: float) -> None:
    if host in AGENT_HOSTS:
        AGENT_HOSTS.get(host)  # now the most recently seen
    else:
        AGENT_HOSTS.put(host, None)
    TURN_SECONDS.labels(host).observe(seconds)


def _observe_llm(call: llm.LLMCall) -> None:
    LLM_CALLS.labels(call.model, call.outcome).inc()
    LLM_SECONDS.labels(call.model).observe(call.seconds)
    if call.prompt_tokens:
        LLM_TOKENS.labels(call.model, "prompt").inc(call.prompt_tokens)
    if call.completion_tokens:
        LLM_TOKENS.labels(call.model, "completion").inc(call.completion_tokens)


if _observe_llm not in llm.observers:
    llm.observers.append(_observe_llm)


ENDPOINT_STATES = ("ok", "rate_limited", "down")


def _forget_endpoint(endpoint: str, _: None) -> None:
    for metric in (LLM_RATE_LIMITED, LLM_WAIT_SECONDS):
        with contextlib.suppress(KeyError):
            metric.remove(endpoint)
    for state in ENDPOINT_STATES:
        with contextlib.suppress(KeyError):
            LLM_ENDPOINT_STATE.remove(endpoint, state)


# Endpoints come from the operator's settings, but a label set is bounded all the same: the least recently
# seen endpoint's series go past this many (a handful is normal).
LLM_ENDPOINTS: BoundedCache[str, None] = BoundedCache(32, on_evict=_forget_endpoint)


def _observe_gate(event: llm_gate.GateEvent) -> None:
    if event.endpoint in LLM_ENDPOINTS:
        LLM_ENDPOINTS.get(event.endpoint)
    else:
        LLM_ENDPOINTS.put(event.endpoint, None)
        LLM_ENDPOINT_STATE.labels(event.endpoint, "ok").set(1.0)  # until it says otherwise
    if event.kind == "rate_limited":
        LLM_RATE_LIMITED.labels(event.endpoint).inc()
    elif event.kind == "waited":
        LLM_WAIT_SECONDS.labels(event.endpoint).inc(event.seconds)
    else:
        for state in ENDPOINT_STATES:
            LLM_ENDPOINT_STATE.labels(event.endpoint, state).set(1.0 if state == event.state else 0.0)


if _observe_gate not in llm_gate.observers:
    llm_gate.observers.append(_observe_gate)


def agent_host(agent_url: str) -> str:
    parsed = urlparse(agent_url)
    return parsed.netloc.rpartition("@")[2] or "unknown"  # never the userinfo


class TurnClock:
    """Turn latency from the transcript events of one trial: an assistant message's timestamp minus the
    timestamp of the message before it (what the agent was answering)."""

    def __init__(self, host: str) -> None:
        self.host = host
        self._last: dict[tuple[str, int], float] = {}

    def message(self, task_id: str, trial: int, message: TranscriptMessage) -> None:
        key = (task_id, trial)
        at = message.timestamp.timestamp()
        before = self._last.get(key)
        if message.role == "assistant" and before is not None:
            observe_turn(self.host, max(0.0, at - before))
        self._last[key] = at

    def trial_done(self, result: TrialResult) -> None:
        self._last.pop((result.task_id, result.trial), None)
        TRIALS.labels(str(result.termination_reason)).inc()
        if str(result.termination_reason) == "agent_error":
            error_class = (result.error or "unknown").split(":", 1)[0].strip() or "unknown"
            WHITE_AGENT_ERRORS.labels(error_class[:64]).inc()


async def measure_loop_lag() -> None:
    """Until cancelled: how much later than asked a short sleep wakes up (a busy loop delays every trial)."""
    while True:
        began = time.monotonic()
        await asyncio.sleep(LOOP_LAG_INTERVAL_S)
        LOOP_LAG.set(max(0.0, time.monotonic() - began - LOOP_LAG_INTERVAL_S))
