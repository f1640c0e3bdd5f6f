"""Who is looking at the web UI, and what they may see.

A browser cannot add an API key header to a link, so the UI has a login form: the key is pasted once and
kept in an HttpOnly, SameSite=Strict cookie scoped to /ui (scripts cannot read it, other sites cannot send
it). Every page resolves the cookie to a `Viewer`; a viewer sees its own tenant's assessments, an admin (or
everyone, in open mode, when the service has no API keys) sees all. Someone else's assessment is a 404, as
an unknown one is, so ids cannot be probed.

State today: in open mode (no API keys) every page is open. With keys, the authentication middleware of
api/auth.py requires a Bearer key on /ui as on the REST API, and only admin keys are served (the pages do not
filter by tenant yet); the cookie login above is not wired to the keys yet.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qs

from fastapi import HTTPException, Request, status

from api.auth import PrincipalUser
from api.db.repository import AssessmentRecord
from api.runtime import Runtime
from api.service import AssessmentNotFound

SESSION_COOKIE = "green_agent_ui_key"
LOGIN_BODY_MAX_BYTES = 4096  # a form with one API key; anything larger is not ours


@dataclass(frozen=True)
class Viewer:
    tenant: str | None  # None: every tenant (an admin key, or open mode)
    signed_in: bool

    def may_see(self, record: AssessmentRecord) -> bool:
        return self.tenant is None or getattr(record, "tenant", "default") == self.tenant


OPEN_MODE = Viewer(tenant=None, signed_in=False)


def keys_required(runtime: Runtime) -> bool:
    """Whether the service checks API keys (never, until API keys exist)."""
    return False


async def viewer_for_key(runtime: Runtime, key: str) -> Viewer | None:
    """The viewer an API key stands for, or None when it is not a valid key."""
    return OPEN_MODE if not keys_required(runtime) else None


async def current_viewer(request: Request, runtime: Runtime) -> Viewer | None:
    """The viewer of this request; None when keys are required and the cookie holds no valid one.

    With API keys (issue 9a), the authentication middleware has already checked the request's Bearer key and
    put its principal in `request.user`. The pages do not filter by tenant yet, so only an admin key (which
    sees every tenant anyway) may use them; a tenant's key gets 403 rather than other tenants' data."""
    user = request.scope.get("user")
    if isinstance(user, PrincipalUser) and user.principal.key_id is not None:
        if not user.principal.admin:
            raise HTTPException(
                status.HTTP_403_FORBIDDEN,
                "the web UI is open to admin keys only for now (it does not filter by tenant yet); "
                "use the REST API with this key",
            )
        return Viewer(tenant=None, signed_in=True)
    if not keys_required(runtime):
        return OPEN_MODE
    key = request.cookies.get(SESSION_COOKIE)
    return await viewer_for_key(runtime, key) if key else None


async def visible_assessment(runtime: Runtime, viewer: Viewer, assessment_id: str) -> AssessmentRecord:
    """The assessment if this viewer may see it; AssessmentNotFound (404) otherwise."""
    record = await runtime.service.get(assessment_id)
    if not viewer.may_see(record):
        raise AssessmentNotFound(assessment_id)
    return record


async def submitted_key(request: Request) -> str | None:
    """The `key` field of the login form (application/x-www-form-urlencoded), bounded in size."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > LOGIN_BODY_MAX_BYTES:
            return None
    values = parse_qs(body.decode("utf-8", errors="replace")).get("key", [])
    key = values[0].strip() if values else ""
    return key or None
