"""Who may call what: the admin and respondent checks, the dashboard's signed cookie.

Respondent endpoints authenticate with ``Authorization: Bearer <respondent token>``; the
store keeps only ``sha256(token)`` and looks the respondent up by that hash, so the raw
token is never compared (nor stored).  Admin endpoints take ``Authorization: Bearer <admin
token>`` or the dashboard's login cookie: a value signed with a key derived from the admin
token (itsdangerous, HMAC-SHA256, with a timestamp), sent ``HttpOnly``, ``SameSite=Strict``,
``Path=/`` and ``Secure`` whenever the request came over https.  Changing the admin token
therefore logs every dashboard out.  Secrets are compared with :func:`hmac.compare_digest`
(constant time in the length of the secret).

Route code uses the two dependencies::

    @router.get("/api/surveys/{survey_id}/results", dependencies=[Depends(require_admin)])
    def results(survey_id: str, request: Request): ...

    @router.post("/api/surveys/{survey_id}/reports")
    def submit(survey_id: str, body: Report,
               respondent: int = Depends(require_respondent)): ...

Both read ``request.app.state.settings`` and ``request.app.state.store``; a refusal is an
:class:`ApiError` (an HTTP exception that the app renders as ``{"error": "..."}``).
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

from fastapi import HTTPException, Request, Response
from itsdangerous import BadSignature, SignatureExpired, URLSafeTimedSerializer

__all__ = [
    "ADMIN_COOKIE",
    "ADMIN_COOKIE_MAX_AGE",
    "ApiError",
    "bearer_token",
    "check_admin_credential",
    "clear_admin_cookie",
    "is_admin",
    "require_admin",
    "require_respondent",
    "set_admin_cookie",
    "token_key",
]

#: The name of the dashboard's login cookie.
ADMIN_COOKIE = "deniable_admin"
#: How long a dashboard login lasts, in seconds (12 hours).
ADMIN_COOKIE_MAX_AGE = 12 * 3600
_COOKIE_SALT = "deniable.dashboard.login"
_COOKIE_PAYLOAD = "admin"


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

    Malformed headers (another scheme, no token) count as none.
    """
    header = request.headers.get("authorization")
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


def _serializer(settings: Any) -> URLSafeTimedSerializer:
    # the signing key is derived from the admin token: a new token invalidates every login
    key = hmac.new(
        _admin_token(settings).encode("utf-8"), b"deniable dashboard cookie", hashlib.sha256
    ).hexdigest()
    return URLSafeTimedSerializer(key, salt=_COOKIE_SALT)


def _cookie_ok(settings: Any, value: str | None) -> bool:
    if not value:
        return False
    try:
        payload = _serializer(settings).loads(value, max_age=ADMIN_COOKIE_MAX_AGE)
    except (SignatureExpired, BadSignature):
        return False
    return bool(payload == _COOKIE_PAYLOAD)


def is_admin(request: Request) -> bool:
    """Whether the request carries the admin token (Bearer) or a valid dashboard cookie."""
    settings = _settings(request)
    token = bearer_token(request)
    if token is not None and _equal(token, _admin_token(settings)):
        return True
    return _cookie_ok(settings, request.cookies.get(ADMIN_COOKIE))


def require_admin(request: Request) -> None:
    """FastAPI dependency: pass for the admin (Bearer admin token or the dashboard cookie).

    Raises
    ------
    ApiError
        401 ``{"error": ...}`` naming the ``Authorization`` header and the cookie.
    """
    if not is_admin(request):
        raise _unauthorized(
            "admin only: send `Authorization: Bearer <admin token>` or log in to the "
            "dashboard (the `deniable_admin` cookie)"
        )


def require_respondent(request: Request, survey_id: str) -> int:
    """FastAPI dependency: the respondent id of the request's Bearer token for ``survey_id``.

    The store looks the token up by its sha256; an unknown, forged or other survey's token
    is refused alike.

    Raises
    ------
    ApiError
        401 ``{"error": ...}`` when the ``Authorization`` header is missing or its token is
        not a respondent of this survey.
    """
    token = bearer_token(request)
    if token is None:
        raise _unauthorized(
            "header `Authorization` must be `Bearer <respondent token>` (get one from "
            f"POST /api/surveys/{survey_id}/sessions)"
        )
    respondent = request.app.state.store.respondent(survey_id, token)
    if respondent is None:
        raise _unauthorized(
            "header `Authorization`: the token is not a respondent token of this survey"
        )
    return int(respondent)


def _is_https(request: Request) -> bool:
    return request.url.scheme == "https"


def set_admin_cookie(response: Response, request: Request) -> None:
    """Log the dashboard in: set the signed cookie on ``response``.

    ``HttpOnly`` (no script reads it), ``SameSite=Strict`` (no other site's page sends it),
    ``Secure`` when the request came over https (behind a TLS-terminating proxy, run uvicorn
    with ``--proxy-headers`` so that the scheme is known).
    """
    value = _serializer(_settings(request)).dumps(_COOKIE_PAYLOAD)
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
    """Log the dashboard out: expire the cookie (same attributes as when it was set)."""
    response.delete_cookie(
        ADMIN_COOKIE, path="/", httponly=True, samesite="strict", secure=_is_https(request)
    )
