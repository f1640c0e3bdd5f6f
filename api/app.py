"""The web application: REST routes, OpenAPI docs and the A2A surfaces, all in one FastAPI app.

`create_app(settings)` builds everything that must exist before the first request (routes, agent card, A2A
handler over the SDK's DatabaseTaskStore); the lifespan then migrates the database, loads the verified data,
opens the engine, binds the A2A executor to the service and resumes unfinished assessments.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import (
    add_a2a_routes_to_fastapi,
    create_agent_card_routes,
    create_jsonrpc_routes,
    create_rest_routes,
)
from a2a.server.tasks import DatabaseTaskStore
from fastapi import FastAPI, Request, status
from fastapi.responses import JSONResponse

from api import __version__, metrics
from api.a2a.card import JSONRPC_PATH, REST_PREFIX, build_agent_card
from api.a2a.executor import AssessmentExecutor
from api.db.engine import create_engine
from api.routes import assessments, events, health, trials
from api.runtime import open_runtime, resume
from api.service import AssessmentNotFound
from api.settings import Settings

logger = logging.getLogger(__name__)

DESCRIPTION = """\
Assesses customer-service agents (white agents, reached over A2A) on the tau2-bench retail domain.

Two doors to the same assessments: this REST API, and A2A (agent card at `/.well-known/agent-card.json`,
JSON-RPC at `/`, REST binding under `/a2a`) for AgentBeats-style requests.
"""


def create_app(settings: Settings) -> FastAPI:
    database = create_engine(
        settings.database_url,
        connect_timeout_s=settings.db_connect_timeout_s,
        pool_size=settings.db_pool_size,
        max_overflow=settings.db_max_overflow,
    )
    card = build_agent_card(settings.public_card_url())
    executor = AssessmentExecutor()
    # The SDK's A2A tasks live in the service's database; open_runtime creates their table.
    task_store = DatabaseTaskStore(database, create_table=True)
    handler = DefaultRequestHandler(agent_executor=executor, task_store=task_store, agent_card=card)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            async with open_runtime(settings, database=database, task_store=task_store) as runtime:
                executor.bind(runtime)
                app.state.runtime = runtime
                if settings.resume_on_start:
                    await resume(runtime)
                try:
                    yield
                finally:
                    app.state.runtime = None
                    # Stop the A2A executions first (they wait on assessments), then the assessments.
                    await handler.aclose()
        finally:
            await database.dispose()

    app = FastAPI(
        title="tau2 retail green agent",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
    )
    app.state.runtime = None

    @app.exception_handler(AssessmentNotFound)
    async def _not_found(request: Request, exc: AssessmentNotFound) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=status.HTTP_404_NOT_FOUND)

    app.include_router(health.router)
    app.include_router(metrics.router)
    app.include_router(assessments.router)
    app.include_router(trials.router)
    app.include_router(events.router)
    # A2A last: its REST binding mounts a catch-all `/{tenant}` that must not shadow the routes above.
    add_a2a_routes_to_fastapi(
        app,
        agent_card_routes=create_agent_card_routes(card),
        jsonrpc_routes=create_jsonrpc_routes(handler, rpc_url=JSONRPC_PATH, enable_v0_3_compat=True),
        rest_routes=create_rest_routes(handler, enable_v0_3_compat=True, path_prefix=REST_PREFIX),
    )
    return app
