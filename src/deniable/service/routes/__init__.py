"""The service's FastAPI routers, one per kind of user; :func:`deniable.service.app.
create_app` includes them in this order.

=================  ======================================================================
module             routes
=================  ======================================================================
``respondent``     the respondent's page ``/s/{id}``, sessions, the survey to answer,
                   single reports and batches from devices
``interviewer``    the interviewer's page, interviews entered by the admin, coin and dice
                   protocols, invitations
``analyst``        results, timelines, majority decisions, budgets, plots, exports
``dashboard``      the dashboard's pages and its login
``integrity``      arrival rates and robustness to fake respondents
``streams``        telemetry streams: specs, device tokens, batches of reports
=================  ======================================================================

What they share: ``deps`` (the survey and respondent of a request, strict bodies, the
outcomes' statuses), ``bodies`` (the request models) and ``reads`` (the analyst's reads,
for the JSON endpoints and the pages alike).  Routes call the store
(:mod:`deniable.service.storage`), the plumbing of :mod:`deniable.service.core`, the
numbers of :mod:`deniable.service.analysis` and the pages of :mod:`deniable.service.pages`;
nothing below imports them.
"""

from __future__ import annotations

__all__: list[str] = []
