"""The service's storage facade: :class:`ServiceStore`, the one object the HTTP layer calls.

It keeps surveys, invitations, respondents and their randomized reports in one SQL
database, and each respondent's budget in the SQL ledger store on the same database
(:class:`~deniable.service.storage.SqlLedgerStore`).  Its methods are grouped by concern,
one base class each:

=====================================================  ====================================
:class:`~deniable.service.storage.surveys.SurveyStore`  the engine, migrations, surveys (load,
                                                       read, the per-process cache)
:class:`~deniable.service.storage.respondents.           invitations, sessions, the
RespondentStore`                                       respondents of tokens
:class:`~deniable.service.storage.submissions.           reports and their budget spends (one
SubmissionStore`                                       transaction), what a respondent answered
:class:`~deniable.service.storage.exports.ExportStore`  tallies, timelines, budgets spent,
                                                       exports, arrival counts
:class:`~deniable.service.storage.groups.GroupStore`    the randomization groups of two-group
                                                       questions, drawn by the server
=====================================================  ====================================

Operators' changes of a survey's state (close, reopen) and the summaries of every survey
are functions of a store: :mod:`deniable.service.storage.lifecycle`.
"""

from __future__ import annotations

from deniable.service.storage.exports import ExportStore
from deniable.service.storage.groups import GroupStore
from deniable.service.storage.respondents import RespondentStore
from deniable.service.storage.submissions import SubmissionStore

__all__ = ["ServiceStore"]


class ServiceStore(RespondentStore, SubmissionStore, ExportStore, GroupStore):
    """Surveys, respondents, reports and budgets in one SQL database (see the module
    docstring and each base class).

    ``url`` is a database URL (``sqlite:///path.db``, ``postgresql://...``; see
    :func:`~deniable.service.storage.db.database_url`) or an engine.  Creating the store
    opens no connection; :meth:`migrate` creates or upgrades the schema.  Thread-safe;
    several processes may share one database.
    """
