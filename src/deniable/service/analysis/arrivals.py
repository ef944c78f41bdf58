"""Arrival rates of a survey's sessions and reports, with bursts flagged: what the dashboard
shows so that an operator sees ballot stuffing as it happens.

The store counts, per window of a minute or an hour, the sessions created and the reports
received (:func:`deniable.service.storage.exports.arrival_counts`); :func:`arrival_rates`
(pure) turns the counts into the panel's numbers.

**The burst rule.**  For each series, the *baseline* ``b`` is the median count per window
over every window from the series' first arrival to its last (empty windows included),
and at least 1.  A window is a burst when its count ``c`` is at least ``BURST_FACTOR`` (5)
times the baseline **and** the Poisson tail ``P(X >= c)`` at mean ``b`` is below
``BURST_ALPHA`` (1e-6).  For arrivals that are a Poisson process at the baseline rate, a
window is flagged with probability below 1e-6 (so over a month of minute windows, about
0.04 false flags), while one client opening 3,000 sessions in ten seconds is flagged at
once.  The median is robust: a burst moves it by at most one rank.  A flag is a reason to
look (an e-mail sent to every respondent at once makes a burst too), not a verdict.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import numpy as np

from deniable.common import to_jsonable
from deniable.common import validation as v
from deniable.exceptions import ParameterError

__all__ = [
    "ARRIVAL_BUCKETS",
    "BURST_ALPHA",
    "BURST_FACTOR",
    "MAX_WINDOWS",
    "arrival_rates",
    "bursts",
]

#: The windows of the panel, in seconds.
ARRIVAL_BUCKETS = {"minute": 60, "hour": 3600}
#: A burst is at least this many times the baseline ...
BURST_FACTOR = 5.0
#: ... and this improbable for a Poisson count at the baseline.
BURST_ALPHA = 1e-6
#: The most windows one answer lists (the bursts are found over the whole history).
MAX_WINDOWS = 1440
#: The most bursts one answer lists (the latest; the total is given).
MAX_BURSTS = 100
#: Windows shown unless asked: the last hour by minute, the last two days by hour.
DEFAULT_WINDOWS = {"minute": 60, "hour": 48}


def bursts(counts: Mapping[int, int]) -> tuple[float | None, list[tuple[int, int, float]]]:
    """The baseline and the bursts of one series (see the module docstring): ``(baseline,
    [(window, count, Poisson tail probability), ...])`` in window order; ``(None, [])``
    for a series without arrivals."""
    if not counts:
        return None, []
    from scipy import stats

    first, last = min(counts), max(counts)
    windows = last - first + 1
    filled = np.sort(np.fromiter(counts.values(), dtype=np.float64, count=len(counts)))
    empty = windows - filled.size

    def ranked(i: int) -> float:  # the i-th smallest count, the empty windows first
        return 0.0 if i < empty else float(filled[i - empty])

    mid = windows // 2
    median = ranked(mid) if windows % 2 else (ranked(mid - 1) + ranked(mid)) / 2
    base = max(1.0, median)
    found = []
    for k in sorted(counts):
        c = counts[k]
        if c >= BURST_FACTOR * base:
            tail = float(stats.poisson.sf(c - 1, base))  # P(X >= c)
            if tail < BURST_ALPHA:
                found.append((k, c, tail))
    return base, found


def _iso(window: int, width: int) -> str:
    return datetime.fromtimestamp(window * width, UTC).isoformat()


def _series(counts: Mapping[int, int], width: int, shown: range) -> dict[str, Any]:
    base, found = bursts(counts)
    flagged = {k for k, _, _ in found}
    return {
        "total": int(sum(counts.values())),
        "baseline": base,
        "windows": [
            {"start": _iso(k, width), "count": int(counts.get(k, 0)), "burst": k in flagged}
            for k in shown
        ],
        "bursts": [
            {"start": _iso(k, width), "count": c, "p_value": p} for k, c, p in found[-MAX_BURSTS:]
        ],
        "bursts_total": len(found),
    }


def arrival_rates(
    survey_id: str,
    sessions: Mapping[int, int],
    reports_: Mapping[int, int],
    *,
    bucket: str = "minute",
    now: float,
    windows: int | None = None,
) -> dict[str, Any]:
    """The panel's numbers: per series (``sessions``, ``reports``) the total, the baseline,
    the counts of the last ``windows`` windows up to the one holding ``now`` (seconds since
    the epoch), each marked if it is a burst, and every burst of the whole history (the
    latest :data:`MAX_BURSTS`, with ``bursts_total``)."""
    if bucket not in ARRIVAL_BUCKETS:
        raise ParameterError(
            f"`bucket` must be one of {', '.join(ARRIVAL_BUCKETS)}, got {bucket!r}."
        )
    width = ARRIVAL_BUCKETS[bucket]
    n = DEFAULT_WINDOWS[bucket] if windows is None else windows
    n = v.integer("windows", n, minimum=1, maximum=MAX_WINDOWS)
    t = v.real("now", now)
    if not math.isfinite(t):
        raise ParameterError(f"`now` must be a finite time, got {t}.")
    end = math.floor(t / width)
    shown = range(end - n + 1, end + 1)
    out = {
        "survey": survey_id,
        "bucket": bucket,
        "seconds": width,
        "rule": {
            "factor": BURST_FACTOR,
            "alpha": BURST_ALPHA,
            "text": f"a burst: a {bucket} with at least {BURST_FACTOR:g} times the baseline "
            f"(the median count per {bucket} since the first arrival, at least 1) and a "
            f"Poisson tail probability below {BURST_ALPHA:g} at the baseline",
        },
        "sessions": _series(sessions, width, shown),
        "reports": _series(reports_, width, shown),
    }
    result: dict[str, Any] = to_jsonable(out)
    return result
