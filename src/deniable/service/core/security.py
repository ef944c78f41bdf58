"""Who may call what: the admin and respondent checks, the dashboard's login, the limits.

Respondent endpoints authenticate with ``Authorization: Bearer <respondent token>``; the
store keeps only ``sha256(token)`` and looks the respondent up by that hash, so the raw
token is never compared (nor stored).  Admin endpoints take ``Authorization: Bearer <admin
token>`` or the dashboard's login cookie, which names a session the server holds
(:mod:`deniable.service.core.sessions`: logout revokes it), signed with a key derived from the
admin token and sent ``HttpOnly``, ``SameSite=Strict``, ``Path=/`` and ``Secure`` whenever
the request came over https.  Changing the admin token therefore logs every dashboard out.
Secrets are compared with :func:`hmac.compare_digest` (constant time in the length of the
secret).

Guessing does not pay: after ``settings.admin_guess_limit`` wrong admin tokens from one
client address within ``settings.admin_guess_window`` seconds, every Bearer admin request
from that address is refused with 429 and ``Retry-After``, the right token included, until
the window has passed (the dashboard's login form keeps a count of its own:
:mod:`deniable.service.core.logins`).  A request that the admin cookie authenticates
and that changes something (any method but GET, HEAD and OPTIONS) is refused (403) when
the browser says it came from another site (:func:`cross_site`), so no other page can
make an admin's browser act for it.

Route code uses the two dependencies::

    @router.get("/api/surveys/{survey_id}/results", dependencies=[Depends(require_admin)])
    def results(survey_id: str, request: Request): ...

    @router.post("/api/surveys/{survey_id}/reports")
    def submit(survey_id: str, body: Report,
               respondent: int = Depends(require_respondent)): ...

Both read ``request.app.state.settings`` and ``request.app.state.store``; a refusal is an
:class:`ApiError` (an HTTP exception that the app renders as ``{"error": "..."}``).  Both
declare their credentials to OpenAPI (the ``adminToken``, ``adminCookie`` and
``respondentToken`` security schemes).  :class:`SlidingWindowLimiter` is the one limiter
of the service (per-token rate limits, admin guesses, login failures), reusable for any key.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
import time
from collections import OrderedDict
from typing import Annotated, Any
from urllib.parse import urlsplit

from fastapi import HTTPException, Request, Response, Security
from fastapi.security import APIKeyCookie, HTTPBearer

from deniable.service.core.limiter import SlidingWindowLimiter, retry_after
from deniable.service.core.sessions import (
    ADMIN_COOKIE,
    ADMIN_COOKIE_MAX_AGE,
    cookie_session,
    registry,
    sign_session,
)

__all__ = [
    "ADMIN_COOKIE",
    "ADMIN_COOKIE_MAX_AGE",
    "ADMIN_GUESS_LIMIT",
    "ADMIN_GUESS_WINDOW",
    "RESPONDENT_SECURITY",
    "TOKEN_KEY",
    "ApiError",
    "RespondentCache",
    "RespondentCredentials",
    "SlidingWindowLimiter",
    "admin_guesses",
    "bearer_token",
    "check_admin_credential",
    "clear_admin_cookie",
    "client_address",
    "cross_site",
    "is_admin",
    "lookup_respondent",
    "refuse_cross_site",
    "require_admin",
    "require_respondent",
    "retry_after",
    "scope_bearer",
    "set_admin_cookie",
    "token_key",
]

#: The scope key under which the rate limit leaves ``(token, token_key(token))`` of the
#: request's Bearer token (:class:`~deniable.service.core.middleware.RateLimitMiddleware`).
TOKEN_KEY = "deniable.token_key"
#: Failed admin tokens allowed per client address and window, unless the settings say.
ADMIN_GUESS_LIMIT = 10
#: The window of that count, in seconds.
ADMIN_GUESS_WINDOW = 60.0
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

# OpenAPI declarations of the credentials (they read nothing: the checks below do)
_admin_bearer = HTTPBearer(
    scheme_name="adminToken", description="The admin token.", auto_error=False
)
_admin_cookie = APIKeyCookie(
    name=ADMIN_COOKIE,
    scheme_name="adminCookie",
    description="The dashboard's login session (POST /dashboard/login).",
    auto_error=False,
)
_respondent_bearer = HTTPBearer(
    scheme_name="respondentToken",
    description="A respondent token (POST /api/surveys/{survey_id}/sessions).",
    auto_error=False,
)
#: The OpenAPI ``security`` of an operation that takes a respondent token.
RESPONDENT_SECURITY: list[dict[str, list[str]]] = [{"respondentToken": []}]
#: A dependency's parameter that declares the respondent token to OpenAPI (unused value).
RespondentCredentials = Annotated[Any, Security(_respondent_bearer)]
_AdminToken = Annotated[Any, Security(_admin_bearer)]
_AdminCookie = Annotated[Any, Security(_admin_cookie)]


class ApiError(HTTPException):
    """A refusal with its HTTP status; the app renders it as ``{"error": message}``.

    ``message`` names the field or header at fault and what was expected; it never repeats
    a token, an answer or a report value.
    """

    def __init__(self, status_code: int, message: str, headers: dict[str, str] | None = None):
        super().__init__(status_code=status_code, detail=message, headers=headers)
        self.message = message


def _unauthorized(message: str) -> ApiError:
    return ApiError(401, message, headers={"WWW-Authenticate": "Bearer"})


def bearer_token(request: Request) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, or None if there is none.

    Malformed headers (another scheme, no token) count as none.  Of several
    ``Authorization`` headers, the first is read (as everywhere: :func:`scope_bearer`).
    """
    return _bearer_of(request.headers.get("authorization"))


def scope_bearer(scope: Any) -> str | None:
    """:func:`bearer_token` of an ASGI scope's headers (the first ``Authorization``
    header, as a Request's ``headers.get`` reads it), without making a Request."""
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            return _bearer_of(value.decode("latin-1"))
    return None


def _bearer_of(header: str | None) -> str | None:
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return None
    return token


def token_key(token: str) -> str:
    """``sha256(token)`` in hex: what rate limits and logs may hold instead of a token."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _equal(given: str, secret: str) -> bool:
    # compare_digest is constant time in the length of its (bytes) arguments
    return hmac.compare_digest(given.encode("utf-8"), secret.encode("utf-8"))


def _settings(request: Request) -> Any:
    return request.app.state.settings


def _admin_token(settings: Any) -> str:
    token = getattr(settings, "admin_token", None)
    if not token:  # create_app always sets one; never accept an empty secret
        raise ApiError(503, "the service has no admin token configured (DENIABLE_ADMIN_TOKEN)")
    return str(token)


def check_admin_credential(settings: Any, given: str) -> bool:
    """Whether ``given`` is the admin token or (when one is set) the admin password.

    Both comparisons always run, in constant time, so the answer's timing says nothing
    about which secret came close.
    """
    token_ok = _equal(given, _admin_token(settings))
    password = getattr(settings, "admin_password", None)
    password_ok = _equal(given, str(password)) if password else False
    return token_ok or password_ok


def client_address(request: Request) -> str:
    """The client's address as the server sees it (behind a reverse proxy, the proxy's,
    unless uvicorn's proxy headers are trusted for it: ``FORWARDED_ALLOW_IPS``)."""
    return request.client.host if request.client is not None else "unknown"


def admin_guesses(app: Any) -> SlidingWindowLimiter:
    """The app's count of wrong admin tokens per client address (made on first use from
    ``settings.admin_guess_limit`` and ``settings.admin_guess_window``)."""
    found: SlidingWindowLimiter | None = getattr(app.state, "admin_guesses", None)
    if found is None:
        settings = app.state.settings
        found = app.state.admin_guesses = SlidingWindowLimiter(
            int(getattr(settings, "admin_guess_limit", ADMIN_GUESS_LIMIT)),
            float(getattr(settings, "admin_guess_window", ADMIN_GUESS_WINDOW)),
        )
    return found


def _throttled(wait: float, limiter: SlidingWindowLimiter) -> ApiError:
    return ApiError(
        429,
        f"header `Authorization`: at most {limiter.limit} wrong admin tokens from one "
        f"address in {limiter.window:g} s; every admin token is refused until then (retry "
        f"after {retry_after(wait)} s)",
        headers={"Retry-After": retry_after(wait)},
    )


def cross_site(request: Request) -> bool:
    """Whether a browser says this request, which would change something, came from
    another site: ``Sec-Fetch-Site`` other than ``same-origin`` or ``none``; without it,
    an ``Origin`` whose host is not the ``Host`` the request was sent to.  GET, HEAD and
    OPTIONS never are; a request with neither header is not a browser's (the rule of Go's
    ``net/http.CrossOriginProtection``, 2025)."""
    if request.method in _SAFE_METHODS:
        return False
    site = request.headers.get("sec-fetch-site")
    if site is not None:
        return site.lower() not in ("same-origin", "none")
    origin = request.headers.get("origin")
    if origin is None:
        return False
    if origin == "null":
        return True
    return urlsplit(origin).netloc.lower() != (request.headers.get("host") or "").lower()


def refuse_cross_site(request: Request) -> None:
    """Raise 403 if :func:`cross_site`: the dashboard's forms and the admin cookie's
    writes are for pages of this service only."""
    if cross_site(request):
        raise ApiError(
            403,
            "cross-site request refused: headers `Sec-Fetch-Site`/`Origin` say another site "
            "sent it (the dashboard acts only for its own pages)",
        )


def _session(request: Request) -> str | None:
    """The live dashboard session of the request's cookie, or None."""
    value = request.cookies.get(ADMIN_COOKIE)
    if not value:
        return None
    token = _admin_token(_settings(request))
    session = cookie_session(token, value, ADMIN_COOKIE_MAX_AGE)
    if session is None or not registry(request.app).is_live(session):
        return None
    return session


def is_admin(request: Request) -> bool:
    """Whether the request carries the admin token (Bearer) or a live dashboard session.

    Raises
    ------
    ApiError
        429 when its address has sent too many wrong admin tokens (even if this one is
        right); 403 when a cookie-authenticated write comes from another site.
    """
    if _session(request) is not None:
        refuse_cross_site(request)
        return True
    token = bearer_token(request)
    if token is None:
        return False
    guesses = admin_guesses(request.app)
    who = client_address(request)
    wait = guesses.wait(who)
    if wait > 0:
        raise _throttled(wait, guesses)
    if _equal(token, _admin_token(_settings(request))):
        return True
    guesses.record(who)
    return False


def require_admin(request: Request, _token: _AdminToken, _cookie: _AdminCookie) -> None:
    """FastAPI dependency: pass for the admin (Bearer admin token or the dashboard cookie).

    Raises
    ------
    ApiError
        401 ``{"error": ...}`` naming the ``Authorization`` header and the cookie; 429 and
        403 as :func:`is_admin`.
    """
    if not is_admin(request):
        raise _unauthorized(
            "admin only: send `Authorization: Bearer <admin token>` or log in to the "
            "dashboard (the `deniable_admin` cookie)"
        )


class RespondentCache:
    """Which respondent a token is, remembered in the process: ``(survey, sha256(token))``
    -> respondent id, at most ``size`` entries (least recently used dropped) for at most
    ``ttl`` seconds each.

    A respondent's token never changes hands, so an entry stays true; the time limit only
    bounds how long a respondent deleted from the database by hand would still be let in.
    Only hashes are kept, as in the database; unknown tokens are not remembered.
    """

    def __init__(self, size: int = 100_000, ttl: float = 600.0) -> None:
        self.size, self.ttl = size, ttl
        self._entries: OrderedDict[tuple[str, str], tuple[float, int]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, survey_id: str, token: str, hashed: str | None = None) -> int | None:
        """The respondent of ``token`` in ``survey_id``, or None; ``hashed``: the token's
        :func:`token_key`, if the caller has it."""
        key = (survey_id, token_key(token) if hashed is None else hashed)
        now = time.monotonic()
        with self._lock:
            hit = self._entries.get(key)
            if hit is None:
                return None
            if now - hit[0] > self.ttl:
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
            return hit[1]

    def put(self, survey_id: str, token: str, respondent: int) -> None:
        key = (survey_id, token_key(token))
        with self._lock:
            self._entries[key] = (time.monotonic(), int(respondent))
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)


def respondent_cache(app: Any) -> RespondentCache:
    """The app's :class:`RespondentCache` (made on first use)."""
    cache = getattr(app.state, "respondent_cache", None)
    if cache is None:
        cache = app.state.respondent_cache = RespondentCache()
    return cache


def lookup_respondent(request: Request, survey_id: str, token: str) -> int | None:
    """The respondent id of ``token`` in ``survey_id`` (the cache, else the store), or None."""
    cache = respondent_cache(request.app)
    found = cache.get(survey_id, token)
    if found is not None:
        return found
    respondent = request.app.state.store.respondent(survey_id, token)
    if respondent is None:
        return None
    cache.put(survey_id, token, int(respondent))
    return int(respondent)


def no_token(survey_id: str) -> ApiError:
    return _unauthorized(
        "header `Authorization` must be `Bearer <respondent token>` (get one from "
        f"POST /api/surveys/{survey_id}/sessions)"
    )


def bad_token() -> ApiError:
    return _unauthorized(
        "header `Authorization`: the token is not a respondent token of this survey"
    )


def require_respondent(request: Request, survey_id: str) -> int:
    """FastAPI dependency: the respondent id of the request's Bearer token for ``survey_id``.

    The store looks the token up by its sha256 (and the process remembers the answer: see
    :class:`RespondentCache`); an unknown, forged or other survey's token is refused alike.

    Raises
    ------
    ApiError
        401 ``{"error": ...}`` when the ``Authorization`` header is missing or its token is
        not a respondent of this survey.
    """
    token = bearer_token(request)
    if token is None:
        raise no_token(survey_id)
    respondent = lookup_respondent(request, survey_id, token)
    if respondent is None:
        raise bad_token()
    return respondent


def _is_https(request: Request) -> bool:
    return request.url.scheme == "https"


def set_admin_cookie(response: Response, request: Request) -> None:
    """Log the dashboard in: register a new session and set its signed cookie.

    ``HttpOnly`` (no script reads it), ``SameSite=Strict`` (no other site's page sends it),
    ``Secure`` when the request came over https (behind a TLS-terminating proxy, run uvicorn
    with ``--proxy-headers`` so that the scheme is known).
    """
    session = registry(request.app).create(ADMIN_COOKIE_MAX_AGE)
    value = sign_session(_admin_token(_settings(request)), session)
    response.set_cookie(
        ADMIN_COOKIE,
        value,
        max_age=ADMIN_COOKIE_MAX_AGE,
        path="/",
        httponly=True,
        samesite="strict",
        secure=_is_https(request),
    )


def clear_admin_cookie(response: Response, request: Request) -> None:
    """Log the dashboard out: revoke the request's session on the server (a copy of its
    cookie stops working too) and expire the cookie (same attributes as when it was set)."""
    session = _session(request)
    if session is not None:
        registry(request.app).revoke(session)
    response.delete_cookie(
        ADMIN_COOKIE, path="/", httponly=True, samesite="strict", secure=_is_https(request)
    )
