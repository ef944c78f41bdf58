"""The sketch rows of bench_peers.py (issue 18, part 5): ours against pure-LDP's count mean
sketches on strings.

Workload: ``n`` strings drawn from a domain of ``DOMAIN`` distinct strings (``"w0"`` ..
``"w9999"``) with Zipf-like frequencies (string ``j`` proportional to ``1 / (j + 1)``, the
shape of ``peers.model.population``), from a fixed seed; a smaller n is the prefix of the same
draw.  Both libraries run the same sketch, ``K`` rows of ``M`` columns, at each epsilon of
``EPSILONS``, and estimate the same candidate list: the whole true domain.

* Ours: :class:`deniable.oracles.CMS` and :class:`deniable.oracles.HCMS` (salt = the run's
  index), ``randomize`` on the list of strings, ``tally``, ``estimate(tally, domain)``: with a
  seeded generator and with the default randomness (``rng=None``).  CMS is of its default
  spec version, 2 since issue 18 part 5 (16-bit flip fields: ``1 + m / 4`` words a report;
  results written before then are of spec 1, ``1 + m`` words).
* pure-LDP 1.2.0: ``CMSClient`` / ``CMSServer`` (``is_hadamard`` False for CMS, True for
  HCMS), ``privatise`` one string, ``aggregate`` one report, then ``estimate_all(domain)``
  (counts: divided by n).  Not timed: the client (HCMS: its Hadamard matrix) and a fresh
  server per run.  pure-LDP's base server calls ``np.zeros(None)`` for a sketch (it has no
  domain size), which numpy 2 refuses; its constructor is handed ``np.zeros(())``, what numpy
  1 returned, for that call only (``_numpy1_zeros``): nothing it computes depends on it.

One timed run is randomize + tally + estimate of all ``n`` reports; a row's time is the best
of ``--repeats`` runs.  A pure-LDP run that would exceed ``--budget`` seconds is measured on
the first reports of the row (the n that fits, from a pilot of ``PILOT_N`` reports and the
affine fit of ``peers.cells``) and its time extrapolated affinely to n, marked so: the fit
takes two pilots (each the best of ``--repeats`` runs), of ``PILOT_N`` and ``10 PILOT_N``
reports, since pure-LDP's ``estimate_all`` hashes every candidate in every row (a fixed
cost of seconds).

Accuracy, on the same strings: the mean squared error of the frequency estimates over the
domain beside the variance we state (``sketch.variance(..., population="fixed")`` at the true
shares: over the salt and the coins, collision term included), and the recall and precision
of the true top ``TOP``: the reported set is the candidates whose estimate is at least the
midpoint of the true 20th and 21st shares (exact estimates give recall = precision = 1); the
overlap of the ``TOP`` largest estimates with the true top ``TOP`` (recall = precision for
two sets of ``TOP``) is shown too.  Ours: the mean over the seeded and the default runs.
pure-LDP: the mean over its runs at the n it ran (Python's and numpy's global generators,
which it draws from, seeded per run); when that is under the row's n, our recall
at the same first reports (mean of ``OURS_AT_PEER_N`` seeded runs) is shown beside it.
"Equal or better recall": ours at least the peer's less the larger of ``1 / TOP`` and twice
the standard error of the difference (from the spread of each side's runs).
"""

from __future__ import annotations

import math
import random
import time
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from deniable.oracles import CMS, HCMS
from peers.cells import PILOT_N, _affine, _fit
from peers.libraries import _reason
from peers.model import SEED

#: The sketch (rows, columns) of both libraries, the domain, the epsilons, the top reported.
K, M = 256, 1024
DOMAIN = 10_000
EPSILONS = (1.0, 2.0, 4.0)
TOP = 20
#: Our seeded runs at the n pure-LDP ran, when under the row's (its recall's precision).
OURS_AT_PEER_N = 5
#: (key, label, our class, pure-LDP's is_hadamard), in table order; a heavy-hitter row
#: (PEM, TreeHist, SFP) adds its own key and a runner in ``ROWS``.
MECHANISMS = (("cms", "CMS", CMS, False), ("hcms", "HCMS", HCMS, True))


def domain() -> list[str]:
    return [f"w{j}" for j in range(DOMAIN)]


def population(n: int) -> np.ndarray:
    """Indices into ``domain()`` of ``n`` strings (Zipf-like, seeded; prefixes agree)."""
    weights = 1 / np.arange(1, DOMAIN + 1)
    gen = np.random.default_rng((SEED, 6, DOMAIN))
    return gen.choice(DOMAIN, size=n, p=weights / weights.sum()).astype(np.int64)


def shares(idx: np.ndarray) -> np.ndarray:
    return np.bincount(idx, minlength=DOMAIN) / idx.size


def accuracy(est: np.ndarray, truth: np.ndarray) -> dict[str, float]:
    """MSE over the domain; recall and precision of the true top ``TOP`` (module doc)."""
    order = np.argsort(-truth, kind="stable")
    top = set(order[:TOP].tolist())
    tau = (truth[order[TOP - 1]] + truth[order[TOP]]) / 2
    reported = set(np.flatnonzero(est >= tau).tolist())
    hits = len(reported & top)
    largest = set(np.argsort(-est, kind="stable")[:TOP].tolist())
    return {
        "mse": float(np.mean((est - truth) ** 2)),
        "recall": hits / TOP,
        "precision": hits / len(reported) if reported else math.nan,
        "reported": len(reported),
        "top_overlap": len(largest & top) / TOP,
    }


def summary(accs: list[dict[str, float]]) -> dict[str, float]:
    """The mean of each accuracy figure over runs, and the standard error of the recall."""
    out = {f: float(np.nanmean([a[f] for a in accs])) for f in accs[0]}
    recall = np.array([a["recall"] for a in accs])
    out["recall_se"] = float(recall.std(ddof=1) / math.sqrt(recall.size)) if recall.size > 1 else 0
    return out


def stated_variance(sketch: Any, truth: np.ndarray, n: int) -> float:
    """The mean over the domain of the variance we state for a fixed population."""
    others = float(np.sum(truth**2)) - truth**2
    return float(np.mean(sketch.variance(n, truth, np.clip(others, 0, 1), population="fixed")))


# ---- ours


def our_run(sketch: Any, values: list[str], cands: list[str], rng: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    est = sketch.estimate(sketch.tally(sketch.randomize(values, rng=rng)), cands)
    return time.perf_counter() - t0, np.asarray(est.values, dtype=float)


def measure_ours(key: str, eps: float, n: int, repeats: int, sources: tuple[str, ...]) -> Any:
    """Per source: the best of ``repeats`` runs, and the accuracy of every run."""
    cls = next(m[2] for m in MECHANISMS if m[0] == key)
    names = np.asarray(domain())
    idx = population(n)
    values, truth = names[idx].tolist(), shares(idx)
    out: dict[str, Any] = {}
    for source in sources:
        times, accs = [], []
        for r in range(repeats):
            sketch = cls(K, M, eps, salt=r)
            rng = np.random.default_rng((SEED, 7, r)) if source == "seeded" else None
            seconds, est = our_run(sketch, values, names.tolist(), rng)
            times.append(seconds)
            accs.append(accuracy(est, truth))
        var = stated_variance(cls(K, M, eps), truth, n)
        best = min(times)
        out[source] = {
            "source": source,
            "seconds": best,
            "per_s": n / best,
            "runs": repeats,
            **summary(accs),
            "stated_variance": var,
        }
    return out


# ---- pure-LDP


@contextmanager
def _numpy1_zeros() -> Iterator[None]:
    """pure-LDP's base server calls ``np.zeros(None)`` (module doc): numpy 1's ``()``."""
    import pure_ldp.core._freq_oracle_server as base

    real = base.np
    base.np = types.SimpleNamespace(zeros=lambda d: real.zeros(() if d is None else d))
    try:
        yield
    finally:
        base.np = real


def peer_pair(hadamard: bool, eps: float) -> tuple[Any, Callable[[], Any]]:
    """pure-LDP's client (made once) and a maker of fresh servers."""
    from pure_ldp.frequency_oracles import CMSClient, CMSServer

    def server() -> Any:
        with _numpy1_zeros():
            return CMSServer(eps, K, M, is_hadamard=hadamard)

    return CMSClient(eps, server().get_hash_funcs(), M, is_hadamard=hadamard), server


def _peer_at(client: Any, server: Callable[[], Any], idx: np.ndarray, tries: int) -> Any:
    """The best of ``tries`` runs on the strings ``idx``, and the accuracy of each run
    (numpy's and Python's global generators, which pure-LDP draws from, seeded per run)."""
    names = domain()
    values = [names[i] for i in idx.tolist()]  # what its API takes (not timed)
    truth = shares(idx)
    best, accs = math.inf, []
    for t in range(tries):
        srv = server()
        random.seed(SEED + t)
        np.random.seed(SEED + t)  # noqa: NPY002 - pure-LDP draws from numpy's global state
        privatise, aggregate = client.privatise, srv.aggregate
        t0 = time.perf_counter()
        for x in values:
            aggregate(privatise(x))
        counts = srv.estimate_all(names, suppress_warnings=True)
        best = min(best, time.perf_counter() - t0)
        accs.append(accuracy(np.asarray(counts, dtype=float) / idx.size, truth))
    return best, summary(accs)


def measure_peer(key: str, eps: float, n: int, repeats: int, budget: float) -> dict[str, Any]:
    """pure-LDP at ``n``, or on the first reports and extrapolated (``peers.cells``)."""
    hadamard = next(m[3] for m in MECHANISMS if m[0] == key)
    try:
        t0 = time.perf_counter()
        client, server = peer_pair(hadamard, eps)
        setup = time.perf_counter() - t0
        idx = population(n)
        # two pilots: estimate_all has a large fixed cost (every candidate hashed k times),
        # which one pilot would take for a cost per report; each the best of ``repeats``
        # runs like the run it is fitted with (a single slow pilot would flatten the fit)
        first = (min(PILOT_N, n), _peer_at(client, server, idx[:PILOT_N], repeats)[0])
        m2 = min(10 * PILOT_N, n)
        pilot = (m2, _peer_at(client, server, idx[:m2], repeats)[0])
        used, why = _fit(n, n, budget, [first, pilot])
        seconds, acc = _peer_at(client, server, idx[:used], repeats)
        if pilot[0] < used < n:
            better, why = _fit(n, n, budget, [pilot, (used, seconds)])
            if better > used:
                used = better
                seconds, acc = _peer_at(client, server, idx[:used], repeats)
    except Exception as exc:  # a peer that breaks is reported, not fatal
        return {"failure": _reason(exc)}
    points = [first, pilot] if used <= pilot[0] else [pilot, (used, seconds)]
    at_n = _affine(points, n) if used < n else seconds
    sketch = HCMS(K, M, eps) if hadamard else CMS(K, M, eps)
    return {
        "n_used": used,
        "extrapolated": used < n,
        "why": why if used < n else "",
        "seconds": seconds,
        "seconds_at_n": at_n,
        "per_s": n / at_n,
        "setup_s": setup,
        "runs": repeats,
        **acc,
        "stated_variance": stated_variance(sketch, shares(idx[:used]), used),
    }


def run_rows(ns: tuple[int, ...], repeats: int, budget: float) -> list[dict[str, Any]]:
    rows = []
    for key, label, _, _ in MECHANISMS:
        for eps in EPSILONS:
            for n in ns:
                print(f"  {label} eps={eps:g} n={n:,}", flush=True)
                ours = measure_ours(key, eps, n, repeats, ("seeded", "default"))
                peer = measure_peer(key, eps, n, repeats, budget)
                row = {"workload": key, "label": label, "epsilon": eps, "n": n,
                       "ours": ours["seeded"], "ours_default": ours["default"],
                       "peer": {"library": "pure-LDP", "variant": f"CMSClient / CMSServer "
                                f"(is_hadamard={key == 'hcms'})", **peer}}  # fmt: skip
                used = peer.get("n_used", n)
                if used < n:  # our accuracy on the peer's first reports
                    runs = max(repeats, OURS_AT_PEER_N)
                    row["ours_at_peer_n"] = measure_ours(key, eps, used, runs, ("seeded",))[
                        "seeded"
                    ]
                rows.append(row)
    return rows
