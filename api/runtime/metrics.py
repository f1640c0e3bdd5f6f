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
import time
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from fastapi import APIRouter, HTTPException, Request, Response
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from api.security.auth import PrincipalDep
from green_agent import llm
from green_agent.bounded_cache import BoundedCache
from green_agent.models import TranscriptMessage, TrialResult

if TYPE_CHECKING:
    from api.runtime.runtime import Runtime

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


router = APIRouter(tags=["health"])


@router.get("/metrics", summary="Prometheus metrics", response_class=Response)
async def metrics(request: Request, principal: PrincipalDep) -> Response:
    # Labels name every tenant's agent hosts and models: operators only once keys exist (open mode is admin).
    if not principal.admin:
        raise HTTPException(403, "metrics need an admin key")
    runtime: Runtime | None = getattr(request.app.state, "runtime", None)
    if runtime is not None:
        for status, count in (await runtime.repository.count_by_status()).items():
            ASSESSMENTS.labels(status).set(count)
        depth = await runtime.service.queue.depth()
        for status in ("todo", "doing"):
            QUEUE_JOBS.labels(status).set(depth.get(status, 0))
        LIVE_WORKERS.set(await runtime.service.queue.live_workers())
    return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)
