"""GET /metrics: the counters of api/runtime/metrics.py, and the shared numbers read from the database at
scrape time, in the Prometheus text format."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from api.runtime.metrics import ASSESSMENTS, LIVE_WORKERS, QUEUE_JOBS, REGISTRY
from api.runtime.runtime import Runtime
from api.security.auth import PrincipalDep

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
