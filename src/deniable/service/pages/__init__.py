"""The HTML the service renders on the server: the dashboard's pages (login, the list of
surveys and streams, one survey's dashboard, one telemetry stream's estimates per day) and
the API's ``/docs`` page, from Jinja2 templates (``templates/``) with autoescaping on for
every template (:mod:`deniable.service.pages._env`): a survey's title, questions and
labels are text wherever they appear.

Pure functions of plain data (the dicts of :mod:`deniable.service.analysis` and of the
OpenAPI schema): this package reads no database and imports nothing of HTTP (import
contracts in ``pyproject.toml``).  The landing, respondent's and interviewer's pages are
static files (``deniable/service/static``), filled in by the browser; the head they share
is inserted here (:func:`with_shared_head`).
"""

from __future__ import annotations

from deniable.service.pages.dashboard import (
    LEVELS,
    SHIFTS,
    login_page,
    survey_list_page,
    survey_page,
)
from deniable.service.pages.site import docs_page, with_shared_head
from deniable.service.pages.streams import stream_page

__all__ = [
    "LEVELS",
    "SHIFTS",
    "docs_page",
    "login_page",
    "stream_page",
    "survey_list_page",
    "survey_page",
    "with_shared_head",
]
