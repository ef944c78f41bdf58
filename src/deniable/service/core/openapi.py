"""The service's OpenAPI schema, completed (the ``/docs`` page is rendered from it by
:func:`deniable.service.pages.docs_page`).

FastAPI writes each operation's parameters, body and success response, and the security
schemes its dependencies declare (``adminToken``, ``adminCookie``, ``respondentToken``:
:mod:`deniable.service.core.security`).  :func:`service_openapi` adds what the app's middleware
and error handlers answer, which FastAPI cannot see, so that a client (or schemathesis) can
rely on the schema for every status:

* every 4xx body is ``{"error": "..."}`` (the ``Error`` schema, in place of FastAPI's
  ``HTTPValidationError``, which this app never sends);
* per operation, the refusals it can meet: 400 (malformed or too deeply nested JSON), 408
  (a body that did not arrive in time), 413 (too large a body) and 422 where it takes a body
  or parameters; 401 where it takes credentials (the batch endpoint: in its body); 429
  (rate limits, admin guesses; with ``Retry-After``) under ``/api/``; 404 under
  ``{survey_id}``; 501 for a plot or Parquet export whose extra is missing; 503 (too many
  connections, with ``Retry-After``) everywhere;
* the content type of each success (JSON, or CSV, Parquet, SVG: from the routes'
  ``response_class``).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

__all__ = ["ERROR_SCHEMA", "service_openapi"]

#: The body of every refusal.
ERROR_SCHEMA: dict[str, Any] = {
    "title": "Error",
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {"type": "string", "description": "What is wrong, naming the field."},
        "status": {"type": "string", "description": "A report's outcome (reports only)."},
    },
}
_ERROR_REF = {"$ref": "#/components/schemas/Error"}
_RETRY_AFTER = {
    "Retry-After": {
        "description": "Seconds to wait before trying again.",
        "required": True,
        "schema": {"type": "integer", "minimum": 1},
    }
}
_WWW_AUTHENTICATE = {"WWW-Authenticate": {"description": "`Bearer`.", "schema": {"type": "string"}}}
_DESCRIPTIONS = {
    "400": "Malformed JSON, or JSON nested too deeply.",
    "401": "Missing or wrong credentials.",
    "403": "Refused.",
    "404": "No such survey (or question).",
    "408": "The request's body did not arrive within the body timeout.",
    "409": "Conflict.",
    "413": "The body is larger than max_body_bytes (or holds too many items).",
    "422": "A field or parameter out of its range or of the wrong type.",
    "429": "Too many requests for this token, or too many wrong admin tokens from this address.",
    "501": "The extra this needs is not installed (plot: matplotlib; Parquet: pyarrow).",
    "503": "Too many connections: the server refused this one.",
}


def _error(code: str, existing: dict[str, Any] | None) -> dict[str, Any]:
    description = (existing or {}).get("description") or _DESCRIPTIONS.get(code, "Refused.")
    out: dict[str, Any] = {
        "description": description,
        "content": {"application/json": {"schema": _ERROR_REF}},
    }
    if code in ("429", "503"):
        out["headers"] = _RETRY_AFTER
    elif code == "401":
        out["headers"] = _WWW_AUTHENTICATE
    return out


def _complete(path: str, op: dict[str, Any]) -> None:
    responses: dict[str, Any] = op.setdefault("responses", {})
    codes = {"503"}
    takes_body = "requestBody" in op
    if takes_body:
        codes |= {"400", "408", "413", "422"}
    if op.get("parameters"):
        codes.add("422")
    if op.get("security") or path.endswith("/reports/batch"):  # the batch: tokens in the body
        codes.add("401")
    if path.startswith("/api/"):  # rate limits, admin guesses, per-client limits
        codes.add("429")
    if "{survey_id}" in path:
        codes.add("404")
    if path.endswith((".svg", ".parquet")):  # without the plot or data extra
        codes.add("501")
    for code in sorted(codes | {c for c in responses if c.startswith("4")}):
        responses[code] = _error(code, responses.get(code))
    for code, response in responses.items():
        if code.startswith("2") and not response.get("content"):
            response["content"] = {"application/json": {"schema": {"type": "object"}}}


def service_openapi(app: FastAPI) -> dict[str, Any]:
    """The app's OpenAPI schema, made once by FastAPI and completed as the module says."""
    if app.openapi_schema is not None:
        return app.openapi_schema
    schema = FastAPI.openapi(app)
    components = schema.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    for unused in ("HTTPValidationError", "ValidationError"):
        schemas.pop(unused, None)
    schemas["Error"] = ERROR_SCHEMA
    for path, ops in schema.get("paths", {}).items():
        for op in ops.values():
            _complete(path, op)
    app.openapi_schema = schema
    return schema
