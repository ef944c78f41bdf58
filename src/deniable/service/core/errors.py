"""How the app answers an error: every refusal is ``{"error": "<message naming the field>"}``
with its status (FastAPI's validation errors rewritten to name the field as a client wrote
it, Starlette's stock words replaced by the service's), and a library error raised by the
store on the client's values a 422."""

from __future__ import annotations

import json
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

__all__ = ["http_error", "library_error", "validation_error"]


def _field(loc: Any) -> str:
    parts = [str(p) for p in loc]
    if parts and parts[0] in ("body", "query", "path", "header"):
        where, rest = parts[0], parts[1:]
        if not rest:
            return "body" if where == "body" else where
        dotted = ""
        for p in rest:
            dotted += f"[{p}]" if p.isdigit() else (f".{p}" if dotted else p)
        return dotted if where == "body" else f"{where} {dotted}"
    return ".".join(parts) or "body"


def validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = list(exc.errors())
    first = errors[0] if errors else {}
    if first.get("type") == "json_invalid":
        ctx = first.get("ctx") or {}
        return JSONResponse(
            {"error": f"body: malformed JSON ({ctx.get('error', 'cannot be parsed')})"},
            status_code=400,
        )
    if first.get("type") == "missing" and tuple(first.get("loc", ())) == ("body",):
        return JSONResponse({"error": "body: a JSON object is required"}, status_code=422)
    messages = [f"`{_field(e.get('loc', ()))}`: {e.get('msg', 'invalid')}" for e in errors[:5]]
    more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
    return JSONResponse({"error": "; ".join(messages) + more}, status_code=422)


def http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    message = exc.detail if isinstance(exc.detail, str) else json.dumps(exc.detail)
    if exc.status_code == 404 and message == "Not Found":
        message = "no such path"
    elif exc.status_code == 400 and message == "There was an error parsing the body":
        # FastAPI's words for a body its parser refused (JSON nested so deeply that
        # Python's json gave up with a RecursionError, a broken form)
        message = "body: cannot be parsed (malformed, or nested too deeply)"
    elif exc.status_code == 405 and message == "Method Not Allowed":
        message = f"method {request.method} is not allowed on this path"
    return JSONResponse({"error": message}, status_code=exc.status_code, headers=exc.headers)


def library_error(request: Request, exc: Exception) -> JSONResponse:
    # the store refusing bad input (a report out of range, ...): the client's own values
    return JSONResponse({"error": str(exc)}, status_code=422)
