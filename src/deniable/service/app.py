"""The application factory: :func:`create_app` builds the FastAPI app of the service from
its parts (docs/architecture.md, "The survey service"):

* the routers of :mod:`deniable.service.routes`: the respondent's side and page, the
  interviewer's page and the admin's writes, the analyst's JSON, plots and exports, the
  ballot-stuffing panels, the dashboard's pages and login;
* the plumbing of :mod:`deniable.service.core`: settings, security, limits, the error
  answers, the OpenAPI schema, the middleware;
* the store of :mod:`deniable.service.storage` (``app.state.store``), and the telemetry
  streams on its database (``app.state.streams``: :func:`open_streams`).

The app holds its settings and its store in ``app.state`` (``settings``, ``store``, and
the limiters and the dashboard's sessions), serves the landing page ``/``, ``/healthz``,
``/docs``, the routers and ``/static``, and wraps everything in the middleware below
(outermost first; the classes are in :mod:`deniable.service.core.middleware`):

1. :class:`~deniable.service.core.logging.AccessLogMiddleware`: one JSON log line per
   request (method, route template, status, duration; never the raw path, a body or a
   header);
2. :class:`HeadMiddleware`: HEAD is answered wherever GET is (the GET's headers, no body);
3. :class:`SecurityHeadersMiddleware`: the strict CSP, ``nosniff``, ``no-referrer``,
   ``frame-ancestors 'none'`` on every response, ``Cache-Control: no-store`` on all but
   ``/static``;
4. :class:`CatchAllMiddleware`: an unexpected exception becomes a 500 ``{"error": ...}``
   and one log line with its type and place, never its message (which may quote values);
5. :class:`SlashRedirectMiddleware`: ``/path/`` redirects to ``/path`` with a relative
   ``Location`` (Starlette's own slash redirect, which echoes the ``Host`` header, is off);
6. :class:`BodyLimitMiddleware`: a body over ``settings.max_body_bytes`` is a 413 before
   any route sees it (the declared ``Content-Length`` and the bytes actually streamed are
   both counted);
7. :class:`RateLimitMiddleware`: at most ``settings.rate_limit_per_minute`` requests per
   Bearer token in any sliding 60-second window (429 with ``Retry-After``); in memory,
   per process.  The batch endpoint counts each report against its token in the same
   limiter (``app.state.rate_limiter``).

``/docs`` is a plain HTML page rendered on the server from the OpenAPI schema
(:func:`deniable.service.pages.docs_page`), so that it needs no script and the strict CSP
holds there too (FastAPI's Swagger UI would need inline script and a CDN, which this CSP
forbids and a privacy tool should not call); ``/openapi.json`` is the schema itself,
completed with every refusal the middleware and the handlers answer
(:mod:`deniable.service.core.openapi`).

:func:`create_app` refuses weak admin secrets (:mod:`deniable.service.core.strength`).
"""

from __future__ import annotations

import gc
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

import deniable
from deniable.exceptions import DeniableError
from deniable.service.core.errors import http_error, library_error, validation_error
from deniable.service.core.logging import AccessLogMiddleware
from deniable.service.core.middleware import (
    BodyLimitMiddleware,
    CatchAllMiddleware,
    HeadMiddleware,
    RateLimitMiddleware,
    SecurityHeadersMiddleware,
    SlashRedirectMiddleware,
)
from deniable.service.core.openapi import service_openapi
from deniable.service.core.security import SlidingWindowLimiter
from deniable.service.core.sessions import SessionRegistry
from deniable.service.core.strength import check_admin_secrets
from deniable.service.pages import docs_page
from deniable.service.routes import (
    analyst,
    dashboard,
    integrity,
    interviewer,
    respondent,
    streams,
)
from deniable.service.routes.deps import STATIC_DIR, static_page

__all__ = [
    "STATIC_DIR",
    "app_from_environment",
    "create_app",
    "open_store",
    "open_streams",
]


def create_app(settings: Any, store: Any = None) -> FastAPI:
    """Build the service's app.

    Parameters
    ----------
    settings : Settings
        The service's settings (:mod:`deniable.service.core.settings`).  Without an admin
        token one is generated for this app (``deniable serve`` generates and prints it
        first).
    store : ServiceStore, optional
        The store to use, migrated and holding its surveys.  By default one is opened at
        ``settings.database_url``, migrated, and the settings' survey (the demo survey
        unless ``survey_file`` names one) is loaded into it.
    """
    if not getattr(settings, "admin_token", None):
        settings = settings.model_copy(update={"admin_token": secrets.token_urlsafe(32)})
    check_admin_secrets(settings)
    if store is None:
        store = open_store(settings)
    app = FastAPI(
        lifespan=_lifespan,
        title="deniable survey service",
        version=deniable.__version__,
        docs_url=None,
        redoc_url=None,
        openapi_url="/openapi.json",
        redirect_slashes=False,  # it would echo the Host header: SlashRedirectMiddleware
    )
    app.state.settings = settings
    app.state.store = store
    app.state.sessions = SessionRegistry(getattr(settings, "sessions_file", None))
    app.state.rate_limiter = SlidingWindowLimiter(int(settings.rate_limit_per_minute), 60.0)
    app.state.streams = open_streams(settings, store)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(DeniableError, library_error)
    app.openapi = lambda: service_openapi(app)  # type: ignore[method-assign]

    @app.get("/", include_in_schema=False)
    def landing() -> HTMLResponse:
        """The landing page: what this server is, and links to the dashboard and the API."""
        return static_page("index.html")

    @app.get("/healthz", summary="Liveness")
    async def healthz() -> dict[str, bool]:
        """``{"ok": true}`` while the process serves."""
        return {"ok": True}

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return HTMLResponse(docs_page(app.openapi(), app.title, app.version))

    # in this order: a route of an earlier router wins (``/dashboard/login`` before
    # ``/dashboard/{survey_id}``)
    for router in (respondent, interviewer, analyst, dashboard, integrity, streams):
        app.include_router(router.router)
    app.router.routes[0:0] = respondent.FAST_ROUTES  # the busiest route, matched first
    if STATIC_DIR.is_dir():
        app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")

    # add_middleware wraps: the last added is the outermost
    app.add_middleware(RateLimitMiddleware, limiter=app.state.rate_limiter)
    app.add_middleware(BodyLimitMiddleware, limit=int(settings.max_body_bytes))
    app.add_middleware(SlashRedirectMiddleware, routes=app.router.routes)
    app.add_middleware(CatchAllMiddleware)
    app.add_middleware(SecurityHeadersMiddleware)
    app.add_middleware(HeadMiddleware)
    app.add_middleware(AccessLogMiddleware)
    return app


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    """At startup, what is loaded by then (the modules, the app, the survey) is moved out
    of the garbage collector's sight (:func:`gc.freeze`): a full collection then looks at
    the objects made while serving only, where it took up to 90 ms (a pause of every
    request in flight) looking at everything the imports made.  Unfrozen at shutdown."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def app_from_environment() -> FastAPI:
    """The app of one worker process of ``deniable serve --workers N``: settings from the
    environment (the parent set them), the store opened (the parent migrated it and loaded
    the survey), logs as JSON lines."""
    from deniable.service.core.logging import configure_logging
    from deniable.service.core.settings import Settings
    from deniable.service.storage import ServiceStore

    configure_logging()
    settings = Settings()
    return create_app(settings, ServiceStore(settings.database_url))


def open_streams(settings: Any, store: Any) -> streams.StreamState:
    """The telemetry streams' state on ``store``'s database, partitions under
    ``settings.streams_dir``; the streams of ``settings.streams_file`` stored (a stream
    stored with another spec, or partitions of another oracle, refuse the start with a
    :class:`~deniable.exceptions.DataError`)."""
    from deniable.service.analysis.streams import load_streams_file

    root = getattr(settings, "streams_dir", None) or Path(settings.data_dir) / "streams"
    state = streams.StreamState(store.engine, root)
    if getattr(settings, "streams_file", None) is not None:
        for spec in load_streams_file(settings.streams_file):
            streams.store_spec(state, spec)
    return state


def open_store(settings: Any) -> Any:
    """The store at ``settings.database_url``, migrated, with the settings' survey loaded."""
    from deniable.service.storage import ServiceStore

    store = ServiceStore(settings.database_url)
    store.migrate()
    store.load_survey(settings.survey())
    return store
