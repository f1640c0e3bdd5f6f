"""Liveness and readiness."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from api.runtime import Runtime
from api.schemas import Health, Readiness

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=Health, summary="The process answers")
async def healthz() -> Health:
    return Health(status="ok")


@router.get(
    "/readyz",
    response_model=Readiness,
    summary="Database reachable and retail data verified",
    responses={503: {"model": Readiness}},
)
async def readyz(request: Request) -> JSONResponse:
    runtime: Runtime | None = getattr(request.app.state, "runtime", None)
    if runtime is None:
        body = Readiness(status="not_ready", database="unknown", data="not loaded", detail="starting up")
        return JSONResponse(body.model_dump(), status_code=503)
    try:
        # A stalled database link would make the ping wait for as long as TCP lets it: answer within bounds.
        async with asyncio.timeout(runtime.settings.readyz_timeout_s):
            await runtime.repository.ping()
    except TimeoutError:
        body = Readiness(
            status="not_ready",
            database="unreachable",
            data="verified",
            detail=f"the database did not answer within {runtime.settings.readyz_timeout_s:g} s",
        )
        return JSONResponse(body.model_dump(), status_code=503)
    except Exception as exc:
        body = Readiness(
            status="not_ready", database="unreachable", data="verified", detail=f"{type(exc).__name__}: {exc}"
        )
        return JSONResponse(body.model_dump(), status_code=503)
    # The data was hash-verified when it was loaded at start-up; the runtime exists only if that succeeded.
    body = Readiness(status="ready", database="ok", data="verified", tasks=len(runtime.data.tasks))
    return JSONResponse(body.model_dump())
