"""The web application: REST routes, OpenAPI docs and the A2A surfaces, all in one FastAPI app.

`create_app(settings)` builds everything that must exist before the first request (routes, agent card, A2A
handler over the SDK's DatabaseTaskStore); the lifespan then migrates the database, loads the verified data,
opens the engine, binds the A2A executor to the service and resumes unfinished assessments.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import (
    add_a2a_routes_to_fastapi,
    create_agent_card_routes,
    create_jsonrpc_routes,
    create_rest_routes,
)
from fastapi import FastAPI, Request, status
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse, Response
from fastapi.routing import APIRoute
from fastapi.staticfiles import StaticFiles
from starlette.middleware.authentication import AuthenticationMiddleware

from api import __version__
from api.db.engine import create_engine
from api.db.keys import KeyRepository
from api.runtime.runtime import open_runtime, resume
from api.runtime.service import AssessmentNotFound
from api.runtime.streams import StreamGuard, StreamLimits
from api.security.auth import BearerKeyBackend, auth_error_response, open_mode_warning, operator_principal
from api.security.tenancy import TenantContextBuilder, TenantTaskStore
from api.settings import Settings
from api.web.a2a.card import JSONRPC_PATH, REST_PREFIX, build_agent_card
from api.web.a2a.executor import AssessmentExecutor
from api.web.a2a.wire import whole_counts_route
from api.web.request_limits import RequestGuard, validation_error_handler
from api.web.routes import assessments, events, health, metrics, trials
from api.web.ui import routes as ui
from green_agent.domains import domain_names

logger = logging.getLogger(__name__)

DESCRIPTION = f"""\
Assesses customer-service agents (white agents, reached over A2A) on tau2-bench domains \
({", ".join(domain_names())}).

Two doors to the same assessments: this REST API, and A2A (agent card at `/.well-known/agent-card.json`,
JSON-RPC at `/`, REST binding under `/a2a`) for AgentBeats-style requests.
"""


AUTH_RESPONSES: dict[int | str, dict[str, Any]] = {
    401: {
        "description": "An API key is required (the operator created keys) and none, or a bad one, was sent."
    },
    413: {"description": "The request body is larger than the operator's limit."},
    503: {"description": "The service is starting, or its database is unreachable; retry shortly."},
}


def create_app(settings: Settings) -> FastAPI:
    database = create_engine(
        settings.database_url,
        connect_timeout_s=settings.db_connect_timeout_s,
        pool_size=settings.db_pool_size,
        max_overflow=settings.db_max_overflow,
        sqlite_cache_kib=settings.sqlite_cache_kib,
        ping_after_idle_s=settings.db_ping_after_idle_s,
    )
    card = build_agent_card(settings.public_card_url())
    executor = AssessmentExecutor()
    keys = KeyRepository(database)
    # The SDK's A2A tasks live in the service's database, owned by tenant; open_runtime creates their table.
    task_store = TenantTaskStore(database)
    handler = DefaultRequestHandler(agent_executor=executor, task_store=task_store, agent_card=card)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            async with open_runtime(settings, database=database, task_store=task_store) as runtime:
                executor.bind(runtime)
                app.state.runtime = runtime
                warning = open_mode_warning(settings.host)
                if warning and not await keys.any_exist():
                    logger.warning(warning)
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
        title="tau2 green agent",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
    )
    app.state.runtime = None
    # Outermost first at run time: authentication (a 401 costs no body read), then the body limit and
    # strict JSON, then the bounds on event streams (they need the tenant), then the routes.
    app.state.streams = StreamLimits(
        per_tenant=settings.max_streams_per_tenant, total=settings.max_streams_total
    )
    app.add_middleware(
        StreamGuard,
        limits=app.state.streams,
        send_timeout_s=settings.stream_send_timeout_s,
        retry_after_s=settings.quota_retry_after_s,
        keys=keys,
        key_recheck_s=settings.stream_key_recheck_s,
    )
    app.add_middleware(
        RequestGuard,
        max_body_bytes=settings.max_request_bytes,
        max_json_depth=settings.max_request_json_depth,
    )
    app.add_middleware(
        AuthenticationMiddleware,
        backend=BearerKeyBackend(
            keys,
            open_principal=operator_principal(settings.allow_private_agents),
            cookie_routes=ui.router.routes,  # the cookie counts on these pages only
        ),
        on_error=auth_error_response,
    )
    app.add_exception_handler(RequestValidationError, validation_error_handler)

    @app.exception_handler(AssessmentNotFound)
    async def _not_found(request: Request, exc: AssessmentNotFound) -> Response:
        if request.url.path.startswith("/ui/"):
            return ui.not_found_page(request, exc)
        return JSONResponse({"detail": str(exc)}, status_code=status.HTTP_404_NOT_FOUND)

    @app.get("/", include_in_schema=False)
    async def _root(request: Request) -> Response:
        # A person's browser gets the web UI; anything else (curl) a small index of where things are. POST /
        # is A2A JSON-RPC (registered below), untouched by this.
        if "text/html" in request.headers.get("accept", ""):
            return RedirectResponse("/ui", status_code=status.HTTP_303_SEE_OTHER)
        return JSONResponse(
            {
                "service": "tau2 green agent",
                "version": __version__,
                "ui": "/ui",
                "api_docs": "/docs",
                "openapi": "/openapi.json",
                "assessments": "/assessments",
                "agent_card": "/.well-known/agent-card.json",
                "a2a_jsonrpc": "POST /",
                "health": "/healthz",
                "ready": "/readyz",
            }
        )

    app.include_router(health.router)
    app.include_router(metrics.router)
    for router in (assessments.router, trials.router, events.router):
        app.include_router(router, responses=AUTH_RESPONSES)
    app.mount("/ui/static", StaticFiles(directory=ui.STATIC_DIR), name="ui-static")
    app.include_router(ui.router)
    # A2A last: its REST binding mounts a catch-all `/{tenant}` that must not shadow the routes above.
    tenant_context = TenantContextBuilder()
    rest_api_routes = list(app.routes)
    add_a2a_routes_to_fastapi(
        app,
        agent_card_routes=create_agent_card_routes(card),
        jsonrpc_routes=[
            whole_counts_route(route)
            for route in create_jsonrpc_routes(
                handler, rpc_url=JSONRPC_PATH, enable_v0_3_compat=True, context_builder=tenant_context
            )
        ],
        rest_routes=create_rest_routes(
            handler, enable_v0_3_compat=True, path_prefix=REST_PREFIX, context_builder=tenant_context
        ),
    )
    # The A2A routes are described by the agent card and the A2A specification; the SDK's generated OpenAPI
    # entries for them document no request bodies or error statuses, so they stay out of the REST schema.
    for route in app.routes:
        if route not in rest_api_routes and isinstance(route, APIRoute):
            route.include_in_schema = False
    return app
