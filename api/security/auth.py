"""Who is asking: API keys to principals, for REST and A2A alike.

Two modes, decided per request by the `api_keys` table:

* **open** (no key was ever created): every request acts as `OPEN_PRINCIPAL` (tenant "default", admin), as
  the service did before keys existed; fine on loopback, and `serve` warns when it listens elsewhere.
* **keys** (at least one key exists, revoked ones included): every request except `PUBLIC_PATHS` (and the
  web UI's login form and static assets) needs `Authorization: Bearer <key>` naming an active key; otherwise
  401. On the web UI's own pages alone (the routes of its router, not every path under /ui: the A2A SDK's
  catch-all `/{tenant}/a2a/...` answers under /ui too), the key may instead come in the UI's session cookie,
  and a browser without a valid one is sent to the login form.

`BearerKeyBackend` runs in Starlette's `AuthenticationMiddleware`, in front of every route (the SDK's A2A
routes included), and puts a `PrincipalUser` in `request.user`; the A2A SDK passes that user on in its
`ServerCallContext`, which is how A2A task ownership follows the tenant. `get_principal` is the FastAPI
dependency routes declare.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Annotated
from urllib.parse import urlencode

from a2a.auth.user import User as A2AUser
from fastapi import Depends, HTTPException, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.exc import SQLAlchemyError
from starlette.authentication import AuthCredentials, AuthenticationBackend, AuthenticationError, BaseUser
from starlette.requests import HTTPConnection
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Match

from api.db.keys import KeyRepository
from api.db.tables import DEFAULT_TENANT

logger = logging.getLogger(__name__)

# Reachable without a key in every mode: probes, the agent card, the API docs.
PUBLIC_PATHS = frozenset(
    {
        "/healthz",
        "/readyz",
        "/.well-known/agent-card.json",
        "/.well-known/agent.json",
        "/openapi.json",
        "/docs",
        "/docs/oauth2-redirect",
        "/redoc",
    }
)
BEARER_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="green-agent"'}

# The web UI (api/web/ui/). A browser cannot put a key in a header, so on the UI's own pages only, the key
# may come in the session cookie the login form sets (HttpOnly, SameSite=Strict, Path=/ui). REST and A2A never
# read it, wherever they are mounted: a cookie is sent by the browser on its own, and honouring it there would
# open the API to cross-site requests.
UI_PREFIX = "/ui"
UI_SESSION_COOKIE = "green_agent_ui_key"
UI_LOGIN_PATH = "/ui/login"
UI_LOGOUT_PATH = "/ui/logout"  # public too: a revoked key's cookie must still be clearable
UI_STATIC_PREFIX = "/ui/static/"


def is_ui_path(path: str) -> bool:
    return path == UI_PREFIX or path.startswith(UI_PREFIX + "/")


def is_public_path(path: str) -> bool:
    """Reachable without a key: PUBLIC_PATHS, the UI's login and logout forms and its static assets."""
    return (
        path in PUBLIC_PATHS or path in (UI_LOGIN_PATH, UI_LOGOUT_PATH) or path.startswith(UI_STATIC_PREFIX)
    )


@dataclass(frozen=True)
class Principal:
    """The party behind a request. `admin` sees every tenant's assessments; `allow_private_agents` lets its
    assessments reach agents on loopback and private networks."""

    tenant: str
    admin: bool
    allow_private_agents: bool
    key_id: str | None

    @property
    def tenant_filter(self) -> str | None:
        """The tenant whose assessments this principal may see; None = all (admin)."""
        return None if self.admin else self.tenant


OPEN_PRINCIPAL = Principal(tenant=DEFAULT_TENANT, admin=True, allow_private_agents=True, key_id=None)
"""Who every request is in open mode (no keys); the app narrows `allow_private_agents` to the operator's
GREEN_AGENT_ALLOW_PRIVATE_AGENTS."""


def operator_principal(allow_private_agents: bool) -> Principal:
    """Who acts in open mode, and in the operator's own commands (`green-agent run`, `retry`): tenant
    default, admin, agents on private networks as GREEN_AGENT_ALLOW_PRIVATE_AGENTS says."""
    return replace(OPEN_PRINCIPAL, allow_private_agents=allow_private_agents)


class PrincipalUser(BaseUser, A2AUser):
    """A principal as Starlette's `request.user` and as the A2A SDK's `ServerCallContext.user` (one object,
    both interfaces: api/security/tenancy.py hands it to the SDK as it is)."""

    def __init__(self, principal: Principal) -> None:
        self.principal = principal

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def display_name(self) -> str:
        return self.principal.tenant

    @property
    def user_name(self) -> str:
        return self.principal.tenant


class Unauthenticated(AuthenticationError):
    """No key, a malformed header, or an unknown or revoked key while keys are required (401)."""


class KeysUnavailable(AuthenticationError):
    """The key table could not be read (the database is down): 503, never a silent open mode."""


async def principal_for_key(keys: KeyRepository, key: str) -> Principal | None:
    """The principal of an active key, or None (unknown or revoked). Used by the UI's login form too."""
    found = await keys.find(key)
    if found is None:
        return None
    return Principal(
        tenant=found.tenant,
        admin=found.admin,
        allow_private_agents=found.allow_private_agents,
        key_id=found.id,
    )


def bearer_token(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header; raise Unauthenticated for another scheme."""
    if authorization is None:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthenticated("use the header Authorization: Bearer <API key>")
    return token.strip()


async def authenticate(
    keys: KeyRepository, authorization: str | None, *, open_principal: Principal = OPEN_PRINCIPAL
) -> Principal:
    """The principal of a request with this Authorization header (`open_principal` while no key exists);
    raises Unauthenticated / KeysUnavailable."""
    try:
        try:
            token = bearer_token(authorization)
        except Unauthenticated:
            if not await keys.any_exist():
                return open_principal  # open mode: no header is checked
            raise
        if token is not None:
            principal = await principal_for_key(keys, token)
            if principal is not None:
                return principal
        if not await keys.any_exist():
            return open_principal  # open mode: a stray key is ignored, as no key could match it
    except (SQLAlchemyError, OSError) as exc:
        logger.warning("API keys could not be read: %s: %s", type(exc).__name__, exc)
        raise KeysUnavailable("the key store is unavailable; retry shortly") from None
    if token is None:
        raise Unauthenticated("this service requires an API key: send Authorization: Bearer <API key>")
    raise Unauthenticated("the API key is not valid (unknown or revoked)")


class BearerKeyBackend(AuthenticationBackend):
    """Starlette authentication backend: a PrincipalUser for every request outside PUBLIC_PATHS.

    `cookie_routes` are the web UI's own routes: the only ones where the session cookie counts. Matched by
    route rather than by path prefix, since other routes answer under /ui as well (the A2A SDK mounts its
    REST binding under any first path segment, so `/ui/a2a/message:send` is an A2A route)."""

    def __init__(
        self,
        keys: KeyRepository,
        *,
        open_principal: Principal = OPEN_PRINCIPAL,
        cookie_routes: Sequence[BaseRoute] = (),
    ) -> None:
        self._keys = keys
        self._open_principal = open_principal
        self._cookie_routes = tuple(cookie_routes)

    def _cookie_counts(self, conn: HTTPConnection) -> bool:
        return is_ui_path(conn.url.path) and any(
            route.matches(conn.scope)[0] is not Match.NONE for route in self._cookie_routes
        )

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, BaseUser] | None:
        if conn.scope["type"] != "http" or is_public_path(conn.url.path):
            return None
        authorization = conn.headers.get("authorization")
        if authorization is None and self._cookie_counts(conn):
            # The cookie holds the key itself and is checked like a header, on every request: a revoked key
            # stops working at once, and there is no session table to keep or expire.
            cookie = conn.cookies.get(UI_SESSION_COOKIE, "").strip()
            authorization = f"Bearer {cookie}" if cookie else None
        principal = await authenticate(self._keys, authorization, open_principal=self._open_principal)
        scopes = ["authenticated", "admin"] if principal.admin else ["authenticated"]
        return AuthCredentials(scopes), PrincipalUser(principal)


def auth_error_response(conn: HTTPConnection, exc: Exception) -> Response:
    if isinstance(exc, KeysUnavailable):
        return JSONResponse({"detail": str(exc)}, status_code=503, headers={"Retry-After": "5"})
    path = conn.url.path
    browser_root = path == "/" and "text/html" in conn.headers.get("accept", "")
    if conn.scope.get("method") == "GET" and (is_ui_path(path) or browser_root):
        # A browser without a valid cookie: to the login form, and back to this page afterwards.
        here = UI_PREFIX if browser_root else path + (f"?{conn.url.query}" if conn.url.query else "")
        login = UI_LOGIN_PATH + "?" + urlencode({"next": here})
        return RedirectResponse(login, status_code=303, headers={"Cache-Control": "no-store"})
    return JSONResponse({"detail": str(exc)}, status_code=401, headers=BEARER_CHALLENGE)


def open_mode_warning(host: str) -> str | None:
    """The warning `serve` logs when it listens beyond loopback with no API keys, else None."""
    if host == "localhost":
        return None
    try:
        if ipaddress.ip_address(host.strip("[]")).is_loopback:
            return None
    except ValueError:
        pass  # a host name: assume it is reachable from elsewhere
    return (
        f"!!! OPEN MODE on {host}: no API key exists, so ANYONE who can reach this address can start, read "
        "and cancel assessments and make this service connect to any URL. Create a key "
        "(green-agent keys create --tenant NAME --admin) or bind to 127.0.0.1. !!!"
    )


# Declares the scheme in the OpenAPI schema (the docs' Authorize button); the middleware has already checked
# the header by the time a route runs.
_BEARER_DOC = HTTPBearer(auto_error=False, description="An API key (green-agent keys create).")


def get_principal(
    request: Request, _: Annotated[HTTPAuthorizationCredentials | None, Depends(_BEARER_DOC)] = None
) -> Principal:
    """FastAPI dependency: the request's principal (set by BearerKeyBackend in front of every route)."""
    user = request.scope.get("user")
    if isinstance(user, PrincipalUser):
        return user.principal
    # Only reachable on an app without the authentication middleware: refuse rather than guess.
    raise HTTPException(status.HTTP_401_UNAUTHORIZED, "not authenticated", headers=BEARER_CHALLENGE)


PrincipalDep = Annotated[Principal, Depends(get_principal)]
