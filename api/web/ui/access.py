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

Every other form (start, cancel, retry, rerun an assessment) changes something, so each is a POST that must
come from this service's own pages: `own_page_refusal` applies the same Origin check and also asks for the
form's token (`csrf_token`): a random value this service put both in the page's form and in a cookie of its
own (HttpOnly, SameSite=Strict, Path=/ui), compared in constant time. Another site's page can neither read the
cookie nor make the browser send it, so its forged form cannot carry a matching pair, in open mode (no key
cookie at all) as much as with keys. The cookie lasts as long as the browser session.

Every page sees what the request's principal may see through the same repository filter the REST routes use
(`tenant=principal.tenant_filter`): a tenant its own assessments, an admin (or everyone in open mode) all.
Someone else's assessment is a 404 worded as an unknown one, so ids cannot be probed.
"""

from __future__ import annotations

import hmac
import re
import secrets
from urllib.parse import parse_qs, urlsplit

from fastapi import HTTPException, Request, status
from starlette.responses import Response

from api.db.repository import AssessmentRecord
from api.runtime.runtime import Runtime
from api.security.auth import Principal, PrincipalUser

LOGIN_BODY_MAX_BYTES = 4096  # a form with one API key; anything larger is not ours

CSRF_COOKIE = "green_agent_ui_csrf"
CSRF_FIELD = "csrf_token"
_CSRF_TOKEN = re.compile(r"[A-Za-z0-9_-]{43}")  # secrets.token_urlsafe(32)


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


def csrf_token(request: Request) -> str:
    """This browser's form token: the one its cookie holds, else a new one (`keep_csrf_cookie` sets it)."""
    token = request.cookies.get(CSRF_COOKIE, "")
    return token if _CSRF_TOKEN.fullmatch(token) else secrets.token_urlsafe(32)


def keep_csrf_cookie(request: Request, response: Response, token: str) -> None:
    """Set the form token's cookie on a page that carries `token` in its forms, unless the browser has it."""
    if request.cookies.get(CSRF_COOKIE) != token:
        response.set_cookie(
            CSRF_COOKIE,
            token,
            path="/ui",
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )


async def read_form(request: Request) -> dict[str, str]:
    """An application/x-www-form-urlencoded body as {field: first value} (the body is bounded by the
    service's request limit before any route runs; bytes that are not UTF-8 become U+FFFD)."""
    body = (await request.body()).decode("utf-8", errors="replace")
    return {name: values[0] for name, values in parse_qs(body, keep_blank_values=True).items()}


def own_page_refusal(request: Request, form: dict[str, str]) -> str | None:
    """Why a form POST that changes something is refused (403), or None when it comes from this service's
    own page: same origin as the login form, and the form's token matching this browser's cookie."""
    if not same_origin_form(request):
        return "this form was sent from another site's page; use this service's own pages"
    cookie = request.cookies.get(CSRF_COOKIE, "")
    sent = form.get(CSRF_FIELD, "")
    if not cookie or not sent or not hmac.compare_digest(cookie.encode(), sent.encode()):
        return "this form's token is missing or out of date; reload the page and send it again"
    return None
