"""Who is looking at the web UI, and what they may see.

A browser cannot add an API key header to a link, so the UI has a login form: the key is pasted once and kept
in a cookie that api/security/auth.py reads on /ui paths only (never on REST or A2A). The cookie is HttpOnly
(scripts cannot read it), SameSite=Strict (other sites' pages cannot make the browser send it), Path=/ui, and
Secure when the page was served over https. It holds the key itself rather than a server-side session id:
every request looks the key up (hashed) exactly as a Bearer header is, so revoking the key ends every browser
session at once, and there is no session table to store, expire or leak.

The login POST needs no cookie, so SameSite cannot protect it: another site could post its own key and sign
the visitor in as someone else (login CSRF). `same_origin_form` refuses a POST whose Origin (sent by every
current browser on a form POST) is not this service; a request without Origin is not a browser's, and a
non-browser client gains nothing it could not do with the key directly.

Every page sees what the request's principal may see through the same repository filter the REST routes use
(`tenant=principal.tenant_filter`): a tenant its own assessments, an admin (or everyone in open mode) all.
Someone else's assessment is a 404 worded as an unknown one, so ids cannot be probed.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from fastapi import HTTPException, Request, status

from api.db.repository import AssessmentRecord
from api.runtime.runtime import Runtime
from api.security.auth import Principal, PrincipalUser

LOGIN_BODY_MAX_BYTES = 4096  # a form with one API key; anything larger is not ours


def request_principal(request: Request) -> Principal:
    """The principal api/security/auth.py's middleware found for this request (Bearer header or the UI
    cookie)."""
    user = request.scope.get("user")
    if isinstance(user, PrincipalUser):
        return user.principal
    # Only the login form and static assets skip the middleware's check, and they never ask.
    raise HTTPException(status.HTTP_401_UNAUTHORIZED, "not authenticated")


async def visible_assessment(runtime: Runtime, principal: Principal, assessment_id: str) -> AssessmentRecord:
    """The assessment if this principal may see it; AssessmentNotFound (404) otherwise, as the REST API."""
    return await runtime.service.get(assessment_id, tenant=principal.tenant_filter)


def same_origin_form(request: Request) -> bool:
    """Whether a form POST comes from this service's own pages (or from no browser at all)."""
    if request.headers.get("sec-fetch-site") in {"cross-site", "same-site"}:
        return False
    origin = request.headers.get("origin")
    if origin is None:
        return True
    # The host alone: behind a TLS-terminating proxy the app may see http while the page was https.
    return urlsplit(origin).netloc == request.headers.get("host", "")


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
