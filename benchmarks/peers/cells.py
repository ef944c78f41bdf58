"""A peer's measurements at one k (bench_peers.py): a pilot run, the n that fits the time
budget, the best of ``REPEATS`` runs there, extrapolated to the row's n when smaller."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from peers.libraries import Peer, _reason
from peers.model import EPSILON, expected_mae, population, textbook_pq, wang_variance

#: The pilot run's reports: what sizes a cell's measured n.
PILOT_N = 2000


@dataclass
class PeerCell:
    """Measurements of one peer mechanism at one k, shared by the rows of that k."""

    peer: Peer
    k: int
    prepare: Callable[[np.ndarray], Any] | None = None
    run: Callable[[Any, int], Any] | None = None
    setup_s: float = 0.0
    failure: str = ""
    pilot: tuple[int, float] | None = None
    runs: dict[int, dict[str, Any]] = field(default_factory=dict)

    def start(self) -> None:
        t0 = time.perf_counter()
        try:
            self.prepare, self.run = self.peer.setup(self.k)
        except Exception as exc:
            self.failure = _reason(exc)
        self.setup_s = time.perf_counter() - t0

    def time_at(self, n: int, tries: int) -> dict[str, Any]:
        if n in self.runs:
            return self.runs[n]
        assert self.prepare is not None and self.run is not None
        values = population(self.k, n)
        best, est = math.inf, None
        for _ in range(tries):
            inputs = self.prepare(values)
            t0 = time.perf_counter()
            est = self.run(inputs, n)
            best = min(best, time.perf_counter() - t0)
        truth = np.bincount(values, minlength=self.k) / n
        p, q = self.peer.pq(self.k) if self.peer.pq else textbook_pq(self.peer.key, self.k, EPSILON)
        out = {
            "n": n,
            "runs": tries,
            "seconds": best,
            "mae": float(np.mean(np.abs(np.asarray(est, dtype=float) - truth))),
            "expected_mae": expected_mae(wang_variance(p, q, n, truth)),
        }
        self.runs[n] = out
        return out

    def measure(self, n: int, budget: float) -> dict[str, Any]:
        """The cell at ``n``: measured there, or at a smaller n and extrapolated."""
        if self.failure:
            return {"failure": self.failure}
        try:
            if self.pilot is None:
                self.pilot = (PILOT_N, self.time_at(PILOT_N, 1)["seconds"])
            cap = self.peer.max_n(self.k) if self.peer.max_n else n
            # first from the pilot alone (pessimistic where a run has a fixed cost), then,
            # if that falls short of n, from the affine fit through the pilot and that run
            n_used, why = _fit(n, cap, budget, [self.pilot])
            got = self.time_at(n_used, REPEATS[0])
            if n_used < n:
                better, why = _fit(n, cap, budget, [self.pilot, (n_used, got["seconds"])])
                if better > n_used:
                    n_used, got = better, self.time_at(better, REPEATS[0])
        except Exception as exc:
            self.failure = _reason(exc)
            return {"failure": self.failure}
        seconds = got["seconds"]
        if n_used < n:
            seconds = _affine([self.pilot, (n_used, seconds)], n)
        return {
            **got,
            "n_used": n_used,
            "extrapolated": n_used < n,
            "why": why if n_used < n else "",
            "seconds_at_n": seconds,
            "per_s": n / seconds,
            "setup_s": self.setup_s,
        }


def _affine(points: list[tuple[int, float]], n: int) -> float:
    """Seconds at ``n`` from measured (n, seconds): affine through the last two (a fixed part
    and a cost per report), proportional to the last one when there is one, or when the
    fitted cost per report is not positive (timing noise)."""
    n1, t1 = points[-1]
    slope = t1 / n1
    if len(points) > 1:
        n0, t0 = points[-2]
        if n1 > n0 and t1 > t0:
            slope = (t1 - t0) / (n1 - n0)
    return t1 + slope * (n - n1)


def _fit(n: int, cap: int, budget: float, points: list[tuple[int, float]]) -> tuple[int, str]:
    """The n to measure at for a row of ``n``: ``n`` if it fits the time budget and the
    memory cap, else the largest of 1, 2, 5 x 10**j that does; and which limit bound it."""
    n1, t1 = points[-1]
    per_report = (_affine(points, n1 + 1) - t1) if len(points) > 1 else t1 / n1
    in_time = n1 + int((budget - t1) / per_report) if len(points) > 1 else int(budget / per_report)
    limit = min(cap, in_time)
    if n <= limit:
        return n, ""
    return _ladder_floor(limit), "memory" if cap < in_time else "time"


#: The runs of every timed cell, ours and the peers' (best of them; set by main).
REPEATS = [3]


def _ladder_floor(n: int) -> int:
    """The largest of 1, 2, 5 x 10**j at most ``n`` (at least 1,000)."""
    best = 1000
    for power in range(3, 10):
        for m in (1, 2, 5):
            if m * 10**power <= n:
                best = m * 10**power
    return best
