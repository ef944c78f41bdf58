"""Memo stores written before reports carried their mechanism's key: RAPPOR's old layout.

Before, :class:`~deniable.oracles.RapporClient` kept a client's cohort under the question
``rappor/<key>/cohort`` and its PRR of a value under ``rappor/<key>/<value>/<chunk>``, with
``<key>`` the whole mechanism's key (``rappor{"cohorts":..,"f":..,"h":..,"m":..,"p":..,
"q":..}``), so a new ``p`` or ``q`` found nothing and drew a second PRR.  Now the cohort is
kept under ``rappor/cohort`` with the mechanism ``rappor-cohort{"cohorts":..}`` and the PRR
under ``rappor/prr/<value>/<chunk>`` with ``rappor-prr{"cohorts":..,"f":..,"h":..,
"hash":"deniable.rappor/1","m":..}`` (``Rappor.cohort_key``, ``Rappor.permanent_key``).  The
old key names every parameter of the new ones, so an old question converts exactly:
:func:`upgraded_question`, used by the SQL migration ``0002`` and by an
:class:`~deniable.mechanisms.InMemoryMemoStore` unpickled from the old format.
``tests/test_rappor.py`` checks that a client reads what the conversion writes.
"""

from __future__ import annotations

import json

from deniable.designs import mechanism_key

__all__ = ["upgraded_question"]

_OLD = "rappor/rappor"
_PARAMETERS = {"cohorts", "f", "h", "m", "p", "q"}
#: RAPPOR's hash family when the old layout was written (``deniable.oracles._rappor``).
_HASH_FAMILY = "deniable.rappor/1"


def upgraded_question(question: str) -> tuple[str, str] | None:
    """The question and mechanism key of RAPPOR's current layout for a question of its old
    layout; ``None`` for any other question.

    >>> old = 'rappor/rappor{"cohorts":4,"f":"1/2","h":2,"m":16,"p":"1/4","q":"3/4"}'
    >>> upgraded_question(old + "/cohort")
    ('rappor/cohort', 'rappor-cohort{"cohorts":4}')
    >>> question, mechanism = upgraded_question(old + "/a/b/0")
    >>> question
    'rappor/prr/a/b/0'
    >>> mechanism == 'rappor-prr{"cohorts":4,"f":"1/2","h":2,"hash":"deniable.rappor/1","m":16}'
    True
    >>> upgraded_question("smokes") is None
    True
    """
    if not question.startswith(_OLD + "{"):
        return None
    try:
        params, end = json.JSONDecoder().raw_decode(question, len(_OLD))
    except ValueError:
        return None
    if not isinstance(params, dict) or set(params) != _PARAMETERS or question[end : end + 1] != "/":
        return None
    rest = question[end + 1 :]
    if rest == "cohort":
        return "rappor/cohort", mechanism_key("rappor-cohort", {"cohorts": params["cohorts"]})
    value, slash, chunk = rest.rpartition("/")
    if not slash or not (chunk.isascii() and chunk.isdigit()):
        return None
    prr = {k: params[k] for k in ("cohorts", "f", "h", "m")}
    return f"rappor/prr/{value}/{chunk}", mechanism_key("rappor-prr", {**prr, "hash": _HASH_FAMILY})
