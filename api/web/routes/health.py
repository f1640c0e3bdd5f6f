"""Liveness and readiness."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from api.runtime.runtime import Runtime
from api.web.schemas import Health, Readiness
from green_agent.domains import DEFAULT_DOMAIN, domain_names

router = APIRouter(tags=["health"])


class DatabaseProbe:
    """Answers "does the database answer?" within a bound, whatever the link does.

    A stalled link makes a query wait as long as TCP lets it, and so does the clean-up of a cancelled one; so
    the ping runs as its own task, the answer is "no" once the bound has passed, and the task is left to end
    on its own. At most one ping is in flight: checks made meanwhile share it, so a long stall never ties up
    more than one pooled connection."""

    def __init__(self, ping: Callable[[], Awaitable[None]], timeout_s: float) -> None:
        self._ping = ping
        self._timeout_s = timeout_s
        self._inflight: asyncio.Task[None] | None = None

    async def problem(self) -> str | None:
        """None when the database answered in time, else what went wrong."""
        if self._inflight is None or self._inflight.done():
            self._inflight = asyncio.create_task(self._ping_once(), name="readiness ping")
        done, _ = await asyncio.wait({self._inflight}, timeout=self._timeout_s)
        if not done:
            return f"the database did not answer within {self._timeout_s:g} s"
        exc = self._inflight.exception()
        return None if exc is None else f"{type(exc).__name__}: {exc}"

    async def _ping_once(self) -> None:
        await self._ping()


def _probe(request: Request, runtime: Runtime) -> DatabaseProbe:
    probe: DatabaseProbe | None = getattr(request.app.state, "database_probe", None)
    if probe is None:
        probe = DatabaseProbe(runtime.repository.ping, runtime.settings.readyz_timeout_s)
        request.app.state.database_probe = probe
    return probe


@router.get("/healthz", response_model=Health, summary="The process answers")
async def healthz() -> Health:
    return Health(status="ok")


@router.get(
    "/readyz",
    response_model=Readiness,
    summary="Database reachable and the default domain's data verified",
    responses={503: {"model": Readiness}},
)
async def readyz(request: Request) -> JSONResponse:
    runtime: Runtime | None = getattr(request.app.state, "runtime", None)
    if runtime is None:
        body = Readiness(status="not_ready", database="unknown", data="not loaded", detail="starting up")
        return JSONResponse(body.model_dump(), status_code=503)
    domains = _domains(runtime)
    problem = await _probe(request, runtime).problem()
    if problem is not None:
        body = Readiness(
            status="not_ready", database="unreachable", data="verified", domains=domains, detail=problem
        )
        return JSONResponse(body.model_dump(), status_code=503)
    # The default domain was hash-verified when it was loaded at start-up (the runtime exists only if that
    # succeeded); every other domain is verified when it is first loaded.
    body = Readiness(
        status="ready", database="ok", data="verified", tasks=domains[DEFAULT_DOMAIN], domains=domains
    )
    return JSONResponse(body.model_dump())


def _domains(runtime: Runtime) -> dict[str, int | None]:
    """Every domain this service runs, with its task count once this process has loaded it."""
    loaded = runtime.engine.loaded_domains
    return {name: len(loaded[name].tasks) if name in loaded else None for name in domain_names()}
