"""The service's plumbing, below the routes and above the storage: what every request goes
through and what configures a server.

==================  =====================================================================
module              what
==================  =====================================================================
``settings``        :class:`~deniable.service.core.settings.Settings`, from the environment
``security``        admin and respondent checks, the dashboard's cookie, token caches
``limiter``         the one sliding-window limiter (rate limits, guesses, logins)
``limits``          the limits on new sessions (per address, per survey)
``logins``          the dashboard's failed-login limit
``sessions``        the dashboard's logins held on the server (revocable)
``strength``        how strong the admin secrets must be
``middleware``      the ASGI middleware (headers, body limit, rate limit, HEAD, ...)
``asgi``            the ASGI types and the base of the HTTP middleware
``connections``     uvicorn's protocol with deadlines and a connection cap
``logging``         JSON log lines, the access log
``errors``          the ``{"error": ...}`` answers of the app's exception handlers
``openapi``         the OpenAPI schema, completed with every refusal
``batching``        group commit of concurrent single reports
==================  =====================================================================
"""

from __future__ import annotations

__all__: list[str] = []
