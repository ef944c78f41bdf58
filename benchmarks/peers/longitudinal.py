"""The longitudinal and multidimensional rows of bench_peers.py (issue 17, part 5).

Every row runs ``ROUNDS`` rounds of ``n`` devices whose values change: the Markov switching
model of :class:`deniable.simulation.Fleet` (a device keeps its value with probability
``1 - SWITCH`` and otherwise moves to another value drawn from the Zipf-like population),
drawn once per row with a fixed seed and handed to every library alike (a multidimensional
row: one such chain per attribute).  One round is randomize + tally + estimate of the ``n``
devices' reports; a row's time is that of all its rounds (best of ``--repeats`` runs), its
rate ``n * ROUNDS / seconds``.

Ours keep each device's permanent response in a fresh
:class:`~deniable.mechanisms.InMemoryMemoStore` per run (dBitFlipPM: a
:class:`~deniable.oracles.DBitFlipMemo`): a run's first round draws them, the others replay
them.  multi-freq-ldpy's longitudinal clients (``L_GRR_Client``, ``L_SUE_Client``,
``L_OUE_Client``, ``L_OSUE_Client``, ``L_LH_Client(optimal=True)``, ``dBitFlipPM_Client``)
keep nothing: every call draws a fresh permanent response, cheaper than memoizing, and its
stated ``eps_perm`` then holds for one report only (the realized loss of ``r`` calls of one
value is up to ``r eps_1``, of dBitFlipPM ``r eps``).  Its multidimensional clients
(``SPL_GRR_Client``, ``SMP_GRR_Client``, ``RSpFD_GRR_Client``) are one-shot like ours.
RS+FD: multi-freq-ldpy runs GRR at the amplified ``ln(d (e^eps - 1) + 1)``, which holds
against a change of one attribute only; deniable runs it at ``eps`` (the bound against any
change, ``deniable.oracles._multi``).

Accuracy: the mean squared error of the frequency estimates over the rounds and the values
(attributes too), beside the theoretical variance at the round's true frequencies (the
oracles' ``exact_variance``, ``DBitFlipPM.variance``, ``MultiAttribute.variance``), as a
ratio, over ``max(repeats, min(10, ACCURACY_DEVICES / n))`` runs of ours (10 at n = 10**5, 3 at
10**6), each with its own seed and a fresh memo store (independent runs).  The rounds of a
run are not independent (they share the devices' permanent responses), and 3 runs leave
their spread nearly unknown (2 degrees of freedom), so for L-SUE, L-OUE and L-OSUE the
standard error shown is the closed form of :func:`unary_ratio_sd` (the exact covariance of
the estimates across rounds, normal approximation) over ``sqrt(runs)``; for the other rows
it is the spread of the runs' ratios (also kept for the unary rows, ``ratio_se_runs``).
multi-freq-ldpy's estimators clip and renormalize (biased): its ratio is shown, not judged.

LOLOHA (Arcolezi et al., EDBT 2023): no package of its own on the registry; multi-freq-ldpy's
``L_LH_Client(optimal=True)`` (its "L-OLH", from the same paper: xxhash of the value to
``g`` buckets, L-GRR on the bucket) is its peer.  A peer whose run would exceed the time
budget is measured on the first devices of the row and extrapolated (time affine in the
devices, through a pilot of ``PILOT_DEVICES``): marked so.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from deniable.mechanisms import InMemoryMemoStore
from deniable.oracles import (
    LGRR,
    LOLOHA,
    LOSUE,
    LOUE,
    LSUE,
    DBitFlipMemo,
    DBitFlipPM,
    MultiAttribute,
    exact_variance,
)
from deniable.simulation import DevicePopulation, Fleet
from peers.cells import _affine, _ladder_floor
from peers.model import SEED

#: The rounds of every row, the chance a device's value moves each round, and the domain.
ROUNDS = 30
SWITCH = 0.1
K = 16
#: eps_inf (the permanent response's) and eps_1 (the first report's) of the longitudinal
#: oracles; dBitFlipPM's epsilon, buckets and sampled bits; the attributes of a device.
EPS_INF, EPS_1 = 1.0, 0.5
DBIT_EPS, DBIT_B, DBIT_D = 1.0, 16, 4
MD_EPS, MD_D = 1.0, 3
PILOT_DEVICES = 200
#: Our accuracy runs at n: ``max(repeats, min(10, ACCURACY_DEVICES / n))`` (timed first).
ACCURACY_DEVICES = 10**6

#: (key, label) of each row, in table order.
WORKLOADS = (
    ("lgrr", "L-GRR"),
    ("lsue", "L-SUE (basic RAPPOR)"),
    ("loue", "L-OUE"),
    ("losue", "L-OSUE"),
    ("loloha", "LOLOHA"),
    ("dbitflip", "dBitFlipPM"),
    ("spl", "SPL (GRR)"),
    ("smp", "SMP (GRR)"),
    ("rsfd", "RS+FD (GRR)"),
)
_LONG = {"lgrr": LGRR, "lsue": LSUE, "loue": LOUE, "losue": LOSUE, "loloha": LOLOHA}
_MULTI = {"spl": "spl", "smp": "smp", "rsfd": "rs+fd"}


def fleet_values(key: str, n: int) -> np.ndarray:
    """The row's values: ``(ROUNDS, n)``, or ``(ROUNDS, n, MD_D)`` for a multidimensional
    row (one chain per attribute), from a fixed seed; a smaller n is another draw."""
    fleet = Fleet(DevicePopulation.zipf(K), devices=n, switch=SWITCH)
    if key not in _MULTI:
        return fleet.values(ROUNDS, rng=np.random.default_rng((SEED, 3, n)))
    cols = [fleet.values(ROUNDS, rng=np.random.default_rng((SEED, 4, n, j))) for j in range(MD_D)]
    return np.stack(cols, axis=-1)


def _truth(x: np.ndarray) -> np.ndarray:
    """True frequencies of one round: ``(K,)``, or ``(MD_D, K)``."""
    if x.ndim == 1:
        return np.bincount(x, minlength=K) / x.size
    return np.stack([np.bincount(x[:, j], minlength=K) / x.shape[0] for j in range(x.shape[1])])


# ---- ours


def our_mechanism(key: str) -> Any:
    if key in _LONG:
        return _LONG[key].from_epsilon(EPS_INF, K, eps_1=EPS_1)
    if key == "dbitflip":
        return DBitFlipPM(DBIT_EPS, k=K, b=DBIT_B, d=DBIT_D)
    return MultiAttribute([K] * MD_D, MD_EPS, protocol=_MULTI[key], oracle="grr")


def our_run(mech: Any, key: str, values: np.ndarray, rng: Any) -> tuple[float, list[Any], Any]:
    """Seconds of the row's rounds, the estimates of each round, and the state kept."""
    n = values.shape[1]
    ids = np.arange(n)
    ests: list[Any] = []
    if key == "dbitflip":
        memo = DBitFlipMemo(mech)
        keys = ids  # the device ids as an array, as the other rows give them (devices=ids)
        t0 = time.perf_counter()
        for x in values:
            ests.append(mech.estimate(mech.tally(memo.report(keys, x, rng=rng))).shares)
        return time.perf_counter() - t0, ests, memo
    store, last = InMemoryMemoStore(), None
    t0 = time.perf_counter()
    for x in values:
        if key in _LONG:
            last = mech.randomize(x, rng=rng, memo=store, devices=ids)
            ests.append(mech.estimate(mech.tally(last)).values)
        else:
            ests.append([e.values for e in mech.estimate(mech.randomize(x, rng=rng))])
    seconds = time.perf_counter() - t0
    return seconds, ests, last


def theory(mech: Any, key: str, values: np.ndarray) -> float:
    """The mean theoretical variance of a frequency estimate over the rounds and values."""
    out = []
    for x in values:
        if key == "dbitflip":
            out.append(np.mean(mech.variance(x)))
        elif key in _LONG:
            out.append(np.mean(exact_variance(mech, x.size, _truth(x))))
        else:
            out.append(np.mean(mech.variance(x.shape[0], list(_truth(x)))))
    return float(np.mean(out))


_UNARY = {"lsue", "loue", "losue"}
#: unary_ratio_sd of each (key, n) measured.
_CLOSED: dict[tuple[str, int], tuple[float, float]] = {}


def unary_ratio_sd(mech: Any, values: np.ndarray) -> tuple[float, float]:
    """``(theory, sd)``: the mean exact variance of a memoized unary oracle's frequency
    estimates over the rounds and values of ``values`` (``(rounds, n)``), and the standard
    deviation of one run's ``mse / theory``, the rounds' correlation included.

    With ``(p1, q1, p2, q2)`` the realised PRR and IRR probabilities and ``p_s = p1 p2 +
    (1 - p1) q2``, ``q_s = q1 p2 + (1 - q1) q2`` the composed channel's, the error of the
    estimate of value ``j`` in round ``r`` is ``e_rj = (C_rj - E C_rj) / (n (p_s - q_s))``,
    ``C_rj`` the reports with bit ``j`` set.  The bits of a report are independent given
    the device's value, and two reports of one device share their PRR exactly when the
    device holds the same value in both rounds (one PRR per device and value), so
    ``Cov(e_rj, e_r'j') = 0`` for ``j != j'``, ``Var(e_rj) = (n_rj p_s (1 - p_s) + (n -
    n_rj) q_s (1 - q_s)) / (n (p_s - q_s))^2`` (``n_rj`` devices at ``j``: the exact
    variance) and, for ``r != r'``, ``Cov(e_rj, e_r'j) = (p2 - q2)^2 (s_j p1 (1 - p1) +
    (s - s_j) q1 (1 - q1)) / (n (p_s - q_s))^2``, ``s`` the devices holding one value in
    both rounds and ``s_j`` those of them at ``j`` (an IRR bit's covariance through the
    shared PRR bit).  ``e`` is a sum of ``n`` independent terms, close to normal, so
    ``Var(sum e_rj^2) = 2 sum_j sum_rr' Cov(e_rj, e_r'j)^2`` (Isserlis), and the mse is
    that sum over ``rounds k``."""
    p1, q1, p2, q2 = mech.probabilities
    ps, qs = p1 * p2 + (1 - p1) * q2, q1 * p2 + (1 - q1) * q2
    rounds, n = values.shape
    k = mech.k
    scale = (n * (ps - qs)) ** 2
    cov = np.zeros((k, rounds, rounds))
    for r in range(rounds):
        at = np.bincount(values[r], minlength=k)
        cov[:, r, r] = (at * ps * (1 - ps) + (n - at) * qs * (1 - qs)) / scale
        for t in range(r + 1, rounds):
            same = values[r] == values[t]
            s_j = np.bincount(values[r][same], minlength=k)
            shared = s_j * p1 * (1 - p1) + (int(same.sum()) - s_j) * q1 * (1 - q1)
            cov[:, r, t] = cov[:, t, r] = (p2 - q2) ** 2 * shared / scale
    cells = rounds * k
    theory = float(np.trace(cov, axis1=1, axis2=2).sum() / cells)
    return theory, float(math.sqrt(2 * float((cov**2).sum())) / cells / theory)


def mse(ests: list[Any], values: np.ndarray) -> float:
    pairs = zip(ests, values, strict=True)
    return float(np.mean([np.mean((np.asarray(e, float) - _truth(x)) ** 2) for e, x in pairs]))


def realized(mech: Any, key: str, values: np.ndarray, state: Any) -> dict[str, float]:
    """Our per-device epsilon over the row's rounds: min, median, max, and the stated bound
    (module doc of deniable.simulation._fleet)."""
    n = values.shape[1]
    if key in _MULTI:  # one-shot: every round a fresh report
        e = ROUNDS * float(mech.epsilon)
        return {"min": e, "median": e, "max": e, "bound": e}
    if key == "dbitflip":
        slots, x = mech.buckets, mech.bucket_of(values.reshape(-1)).reshape(values.shape)
        per: Callable[[int], float] = mech.longitudinal_epsilon
        bound = mech.longitudinal_bound
    elif key == "loloha":
        slots = mech.g
        seeds = np.asarray(state)[:, :2]  # the last round's reports carry each device's seeds
        x = np.stack([mech.hashed(v, seeds) for v in values])
        per, bound = (lambda d: mech.longitudinal_epsilon(ROUNDS, values=d)), 0.0
    else:
        slots, x = K, values
        per, bound = (lambda d: mech.longitudinal_epsilon(ROUNDS, values=d)), 0.0
    seen = np.zeros((n, slots), dtype=bool)
    for row in x:
        seen[np.arange(n), row] = True
    distinct = seen.sum(axis=1)
    eps = np.array([0.0] + [per(d) for d in range(1, slots + 1)])[distinct]
    if key != "dbitflip":
        bound = mech.longitudinal_epsilon(ROUNDS, values=min(ROUNDS, K))  # as Fleet.run
    return {
        "min": float(eps.min()),
        "median": float(np.median(eps)),
        "max": float(eps.max()),
        "bound": float(bound),
    }


def measure_ours(key: str, n: int, repeats: int, source: str) -> dict[str, Any]:
    mech = our_mechanism(key)
    values = fleet_values(key, n)
    times, errors, state = [], [], None
    for r in range(max(repeats, min(10, math.ceil(ACCURACY_DEVICES / n)))):
        rng = np.random.default_rng((SEED, 5, r)) if source == "seeded" else None
        seconds, ests, state = our_run(mech, key, values, rng)
        if r < repeats:
            times.append(seconds)
        errors.append(mse(ests, values))
    var = theory(mech, key, values)
    best = min(times)
    ratios = np.array(errors) / var
    # the standard error of the mean ratio MSE / theory, from its spread over the runs
    se_runs = float(ratios.std(ddof=1) / math.sqrt(ratios.size))
    extra: dict[str, Any] = {"se_method": "runs"}
    if key in _UNARY:  # the closed form (module doc), one run's sd over sqrt(runs)
        if (key, n) not in _CLOSED:  # (the seeded and the default row share it)
            _CLOSED[key, n] = unary_ratio_sd(mech, values)
        closed, sd = _CLOSED[key, n]
        se = sd / math.sqrt(ratios.size)
        extra = {"se_method": "closed form", "theory_closed": closed, "run_sd": sd}
    else:
        se = se_runs
    return {
        "mechanism": type(mech).__name__,
        "source": source,
        "seconds": best,
        "per_s": n * ROUNDS / best,
        "runs": len(errors),
        "mse": float(np.mean(errors)),
        "ratios": ratios.tolist(),
        "ratio_se": se,
        "ratio_se_runs": se_runs,
        **extra,
        "theory": var,
        "epsilon": realized(mech, key, values, state),
    }


# ---- multi-freq-ldpy


def peer_stated(key: str) -> dict[str, Any]:
    """What multi-freq-ldpy states for a row, and what its clients realize over the rounds."""
    if key in _LONG:
        why = f"eps_perm = {EPS_INF} stated; no memoization: {ROUNDS} x eps_1"
        return {"stated": EPS_INF, "realized": ROUNDS * EPS_1, "why": why}
    if key == "dbitflip":
        why = f"eps_perm = {DBIT_EPS} stated; no memoization: {ROUNDS} x eps"
        return {"stated": DBIT_EPS, "realized": ROUNDS * DBIT_EPS, "why": why}
    if key == "rsfd":
        amp = math.log(MD_D * math.expm1(MD_EPS) + 1)
        why = f"eps = {MD_EPS} stated; GRR at the amplified {amp:.3f} per round"
        return {"stated": MD_EPS, "realized": ROUNDS * amp, "why": why}
    return {"stated": MD_EPS, "realized": ROUNDS * MD_EPS, "why": f"{ROUNDS} x eps"}


def peer_client(key: str) -> tuple[Callable[[Any], Any], Callable[[list[Any]], Any]]:
    """multi-freq-ldpy's client (one value or tuple) and aggregator (a round's reports)."""
    from multi_freq_ldpy.long_freq_est import L_GRR, L_LH, L_OSUE, L_OUE, L_SUE, dBitFlipPM
    from multi_freq_ldpy.mdim_freq_est import RSpFD_solution, SMP_solution, SPL_solution

    e, e1, ks = EPS_INF, EPS_1, [K] * MD_D
    table: dict[str, tuple[Callable[[Any], Any], Callable[[list[Any]], Any]]] = {
        "lgrr": (lambda x: L_GRR.L_GRR_Client(x, K, e, e1),
                 lambda r: L_GRR.L_GRR_Aggregator_MI(r, K, e, e1)),
        "lsue": (lambda x: L_SUE.L_SUE_Client(x, K, e, e1),
                 lambda r: L_SUE.L_SUE_Aggregator_MI(r, e, e1)),
        "loue": (lambda x: L_OUE.L_OUE_Client(x, K, e, e1),
                 lambda r: L_OUE.L_OUE_Aggregator_MI(r, e, e1)),
        "losue": (lambda x: L_OSUE.L_OSUE_Client(x, K, e, e1),
                  lambda r: L_OSUE.L_OSUE_Aggregator_MI(r, e, e1)),
        "loloha": (lambda x: L_LH.L_LH_Client(x, K, e, e1, optimal=True),
                   lambda r: L_LH.L_LH_Aggregator_MI(r, K, e, e1, optimal=True)),
        "dbitflip": (lambda x: dBitFlipPM.dBitFlipPM_Client(x, K, DBIT_B, DBIT_D, DBIT_EPS),
                     lambda r: dBitFlipPM.dBitFlipPM_Aggregator_MI(r, DBIT_B, DBIT_D, DBIT_EPS)),
        "spl": (lambda x: SPL_solution.SPL_GRR_Client(x, ks, MD_D, MD_EPS),
                lambda r: SPL_solution.SPL_GRR_Aggregator_MI(r, ks, MD_D, MD_EPS)),
        "smp": (lambda x: SMP_solution.SMP_GRR_Client(x, ks, MD_D, MD_EPS),
                lambda r: SMP_solution.SMP_GRR_Aggregator_MI(r, ks, MD_D, MD_EPS)),
        "rsfd": (lambda x: RSpFD_solution.RSpFD_GRR_Client(x, ks, MD_D, MD_EPS),
                 lambda r: RSpFD_solution.RSpFD_GRR_Aggregator_MI(r, ks, MD_D, MD_EPS)),
    }  # fmt: skip
    return table[key]


def _peer_once(client: Any, aggregate: Any, rounds: list[list[Any]]) -> tuple[float, list[Any]]:
    ests = []
    t0 = time.perf_counter()
    for xs in rounds:
        ests.append(aggregate([client(x) for x in xs]))
    return time.perf_counter() - t0, ests


def _peer_at(key: str, values: np.ndarray, m: int, tries: int) -> dict[str, Any]:
    client, aggregate = peer_client(key)
    sub = values[:, :m]
    rounds = [[tuple(r) for r in x.tolist()] if sub.ndim == 3 else x.tolist() for x in sub]
    best, ests = math.inf, []
    for _ in range(tries):
        seconds, ests = _peer_once(client, aggregate, rounds)
        best = min(best, seconds)
    flat = [np.stack([np.asarray(a, float) for a in e]) if sub.ndim == 3 else e for e in ests]
    return {"devices": m, "seconds": best, "mse": mse(flat, sub)}


def measure_peer(key: str, n: int, repeats: int, budget: float) -> dict[str, Any]:
    """multi-freq-ldpy at ``n`` devices, or on the first devices and extrapolated."""
    try:
        client, _ = peer_client(key)
        values = fleet_values(key, n)
        t0 = time.perf_counter()
        first = values[0, 0]
        client(tuple(first.tolist()) if values.ndim == 3 else int(first))  # numba compiles
        setup = time.perf_counter() - t0
        pilot = _peer_at(key, values, min(PILOT_DEVICES, n), 1)
        per = pilot["seconds"] / pilot["devices"]
        m = n if per * n <= budget else min(n, _ladder_floor(int(budget / per)))
        got = _peer_at(key, values, m, repeats)
    except Exception as exc:  # a peer that breaks is reported, not fatal
        return {"failure": f"{type(exc).__name__}: {str(exc).strip()[:120]}"}
    seconds = got["seconds"]
    if m < n:
        seconds = _affine([(pilot["devices"], pilot["seconds"]), (m, seconds)], n)
    return {**got, "extrapolated": m < n, "seconds_at_n": seconds,
            "per_s": n * ROUNDS / seconds, "setup_s": setup}  # fmt: skip


def run_rows(
    ns: tuple[int, ...], repeats: int, budget: float, only: list[str] | None = None
) -> list[dict[str, Any]]:
    """The rows of ``WORKLOADS`` (those whose key is in ``only``, if given), in table order."""
    rows = []
    for key, label in WORKLOADS:
        if only and key not in only:
            continue
        for n in ns:
            print(f"  {label} n={n:,} x {ROUNDS} rounds", flush=True)
            rows.append({
                "workload": key, "label": label, "k": K, "n": n, "rounds": ROUNDS,
                "ours": measure_ours(key, n, repeats, "seeded"),
                "ours_default": measure_ours(key, n, repeats, "default"),
                "peer": {"library": "multi-freq-ldpy", **peer_stated(key),
                         **measure_peer(key, n, repeats, budget)},
            })  # fmt: skip
    return rows
