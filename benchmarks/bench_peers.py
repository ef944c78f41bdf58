"""Benchmark: deniable beside the Python LDP libraries, one core, the same workloads.

Peers (pinned in ``benchmarks/peers/requirements.txt``, installed by ``scripts/bench-peers``
into ``.venv-peers``): pure-LDP, multi-freq-ldpy, OpenDP and diffprivlib, each through its
public API:

* pure-LDP: the client/server pairs of ``pure_ldp.frequency_oracles`` (``DEClient`` /
  ``DEServer``, ``UEClient`` / ``UEServer``, ``LHClient`` / ``LHServer`` and the heuristic
  ``FastLHClient`` / ``FastLHServer``, ``HadamardMechClient`` / ``HadamardMechServer`` with
  ``t = 1`` and ``HadamardResponseClient`` / ``HadamardResponseServer``): ``privatise`` one
  value, ``aggregate`` one report, then ``estimate_all`` over the domain;
* multi-freq-ldpy: ``GRR_Client`` / ``UE_Client`` / ``LH_Client`` per value, then
  ``GRR_Aggregator_MI`` / ``UE_Aggregator_MI`` / ``LH_Aggregator_MI`` on the list of
  reports (its estimator clips negative estimates to 0 and renormalizes: not unbiased);
* OpenDP (``dp.enable_features("contrib")``): ``make_randomized_response_bool``,
  ``make_randomized_response`` (k categories) and ``make_randomized_response_bitvec`` with
  ``max_weight = 1`` (a one-hot vector with every bit flipped with probability ``f / 2``:
  symmetric unary encoding), one call per value;
* diffprivlib: ``mechanisms.Binary`` and ``mechanisms.ExponentialCategorical`` with the
  utility 1 between any two categories (then ``P(x | x) / P(y | x) = e^eps``: k-ary
  randomized response), one ``randomise`` per value.

OpenDP and diffprivlib randomize only: their reports are tallied by numpy (``bincount``, or
unpacking the bit vectors and summing) and estimated by ``(c / n - q) / (p - q)``, timed with
the rest.  Ours: ``deniable.designs.Binary(1.0)`` for binary randomized response and the
oracles of ``deniable.oracles`` (``GRR.from_epsilon``, ``SUE``, ``OUE``, ``OLH``,
``HadamardResponse``), ``randomize`` on the numpy array of values, ``tally``, ``estimate``.

Workloads: binary RR, GRR at k = 16 and 1024, SUE, OUE, OLH and Hadamard response at k = 16
and 1024; n = 10**5 and 10**6; epsilon = 1.  Values are Zipf-like (frequency of ``j``
proportional to ``1 / (j + 1)``), drawn with a fixed seed per k, a seed sequence apart from
our randomizers' (``our_run``); a smaller n is the prefix of the same draw.  Each cell
times randomize + tally + estimate for all its reports.  Not timed: building a peer's client
and server (its ``setup_s`` in the JSON: the hash matrix of ``FastLHServer``, the utility
table of ``ExponentialCategorical``, numba compilation of multi-freq-ldpy's clients by a
first call) and converting the values to what its API takes (Python ints, bools, strings,
one-hot bytes).

A peer cell whose time at the row's n would exceed ``--budget`` seconds (default 60), judged
by a pilot run of 2,000 reports (and, when that falls short, again by the affine fit through
the pilot and the first run), is measured at the largest n in 1, 2, 5 x 10**j that fits,
and marked "(extrapolated from n = ...)": the time is taken as affine in n (a fixed part
plus the same cost per report, as for these per-report loops), fitted through the pilot and
the measured run.  "Best peer" is the fastest peer implementing the row's mechanism;
pure-LDP's ``FastLHServer`` (a fixed set of hash functions shared by all clients: cheaper
decoding, larger errors) is shown in the OLH rows and judged apart.  multi-freq-ldpy's
unary encoding hands its aggregator a list of ``n`` float64 vectors of length k: its n is
also capped at 1 GiB of them.  A cell measured at an n whose time is under ``budget / 12``
takes the best of up to 3 runs; ours take the best of ``--repeats`` (default 3).

Accuracy: the mean absolute error (MAE) over the k categories of the frequency estimate
against the true frequency of the n values.  Expected MAE of an unbiased estimator:
``mean_j sqrt(2 / pi) sd_j``, ``sd_j`` from the exact variance our mechanisms expose
(``exact_variance``; ``Binary.variance(..., population="fixed")``), checked against the
closed form of Wang et al. (USENIX Security 2017) written out here.  Our MAE is averaged over
``ceil(1024 / k)`` seeded runs (at least 3; binary RR, whose two errors are one: 1024), so
about 1024 absolute errors: the relative standard deviation of a mean of M independent
absolute normal errors is ``sqrt(pi / 2 - 1) / sqrt(M)``, 2.4% at M = 1024 and 1.2% at
4096, and "within 10% of the expected error" is a check at about 4 standard deviations.  A
peer's MAE is of its one timed run at its n and is shown beside the expected MAE of its
mechanism at that n.

Targets (issue 10), one core: at least 10 times the best peer on every row; OUE k = 1024 at
least 1 M reports/s; OLH k = 1024 at least 300 k reports/s including decoding; Hadamard
response at least 5 M reports/s; every accuracy within 10% of its expected error.

Writes ``benchmarks/results/peers.md`` and ``peers.json`` and prints the markdown.  Run:
``scripts/bench-peers`` (``--quick``: n = 10**4, a 5 s budget, nothing written).
"""

from __future__ import annotations

import os

for _var in (
    "OPENBLAS_NUM_THREADS",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "NUMBA_NUM_THREADS",
):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import copy  # noqa: E402
import datetime  # noqa: E402
import importlib.metadata  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import random  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from deniable.designs import Binary  # noqa: E402
from deniable.oracles import (  # noqa: E402
    GRR,
    OLH,
    OUE,
    SUE,
    HadamardResponse,
    LinearOLH,
    exact_variance,
)

OUT = Path(__file__).resolve().parent / "results"
SEED = 20261201
EPSILON = 1.0
NS = (10**5, 10**6)
PILOT_N = 2000
#: Absolute errors our accuracy column averages over (module docstring).
ERRORS = 1024
#: The largest list of report vectors a peer's API makes us hold (multi-freq-ldpy UE).
MEMORY_CAP = 1 << 30
LIBRARIES = ("pure-LDP", "multi-freq-ldpy", "OpenDP", "diffprivlib")
#: Distribution names, for the versions in the results.
PACKAGES = (
    "deniable",
    "numpy",
    "scipy",
    "pure-ldp",
    "multi-freq-ldpy",
    "opendp",
    "diffprivlib",
    "scikit-learn",
    "statsmodels",
    "xxhash",
    "numba",
)

#: (key, label, k) of each workload, in table order.
WORKLOADS = (
    ("binary", "binary RR", 2),
    ("grr", "GRR", 16),
    ("grr", "GRR", 1024),
    ("sue", "SUE", 16),
    ("sue", "SUE", 1024),
    ("oue", "OUE", 16),
    ("oue", "OUE", 1024),
    ("olh", "OLH", 16),
    ("olh", "OLH", 1024),
    ("hr", "Hadamard response", 16),
    ("hr", "Hadamard response", 1024),
)


# ---- data, closed forms


def population(k: int, n: int) -> np.ndarray:
    """``n`` values with frequencies proportional to ``1 / (j + 1)`` (seeded per k)."""
    gen = np.random.default_rng((SEED, 1, k))  # apart from the randomizers' seeds
    weights = 1 / np.arange(1, k + 1)
    return gen.choice(k, size=n, p=weights / weights.sum()).astype(np.int64)


def textbook_pq(key: str, k: int, epsilon: float, g: int = 0) -> tuple[float, float]:
    """Support probabilities ``(p, q)`` of each mechanism at ``epsilon`` (Wang et al. 2017;
    Hadamard response: Acharya, Sun & Zhang 2019; the one-bit Hadamard mechanism of Cormode,
    Kulkarni & Srivastava 2018 has the same)."""
    e = math.exp(epsilon)
    if key in ("binary", "grr"):
        return e / (e + k - 1), 1 / (e + k - 1)
    if key == "sue":
        half = math.exp(epsilon / 2)
        return half / (half + 1), 1 / (half + 1)
    if key == "oue":
        return 0.5, 1 / (e + 1)
    if key == "olh":
        return e / (e + g - 1), 1 / g
    if key == "hr":
        return e / (e + 1), 0.5
    raise ValueError(key)


def wang_variance(p: float, q: float, n: int, freqs: np.ndarray) -> np.ndarray:
    """Var of ``(c / n - q) / (p - q)`` for a fixed population with frequencies ``freqs``,
    in the form of Wang et al. (2017, eq. 2 over n**2): ``q (1 - q) / (n (p - q)^2) + f (1 -
    p - q) / (n (p - q))``."""
    return q * (1 - q) / (n * (p - q) ** 2) + freqs * (1 - p - q) / (n * (p - q))


def expected_mae(variances: np.ndarray) -> float:
    """``mean_j E|X_j|`` for ``X_j`` normal with mean 0: ``sqrt(2 / pi) sd_j``."""
    return float(np.mean(math.sqrt(2 / math.pi) * np.sqrt(variances)))


def unbiased(counts: np.ndarray, n: int, p: float, q: float) -> np.ndarray:
    """``(c / n - q) / (p - q)``: the estimate a peer without an estimator gets."""
    return (np.asarray(counts, dtype=float) / n - q) / (p - q)


# ---- ours


def our_mechanism(key: str, k: int) -> Any:
    if key == "binary":
        return Binary(EPSILON)
    return {
        "grr": lambda: GRR.from_epsilon(EPSILON, k),
        "sue": lambda: SUE.from_epsilon(EPSILON, k),
        "oue": lambda: OUE.from_epsilon(EPSILON, k),
        # OLH with a linear hash over GF(2) (what choose_oracle picks at eps = 1): the same
        # channel, estimate and variance as OLH at its g, decoded by one Walsh-Hadamard
        # transform; the multiply-shift OLH is timed beside it (`ours_alt`)
        "olh": lambda: LinearOLH.from_epsilon(EPSILON, k),
        "hr": lambda: HadamardResponse.from_epsilon(EPSILON, k),
    }[key]()


def our_variances(mech: Any, key: str, n: int, freqs: np.ndarray) -> np.ndarray:
    """The exact variance our mechanism exposes, at the true frequencies."""
    if key == "binary":
        var = mech.variance(float(freqs[1]), n, population="fixed")
        return np.array([var, var])
    return np.asarray(exact_variance(mech, n, freqs))


def our_pq(mech: Any, key: str, k: int) -> tuple[float, float]:
    """The textbook (p, q) at our mechanism's own epsilon (and ``g``)."""
    return textbook_pq(key, k, float(mech.epsilon), int(getattr(mech, "g", 0)))


def our_run(mech: Any, key: str, values: np.ndarray, run: int) -> tuple[float, np.ndarray]:
    """Seconds of randomize + tally + estimate, and the k estimated frequencies.

    The randomizer's seed ``(SEED, 2, run)`` and the population's ``(SEED, 1, k)`` are
    distinct seed sequences: with one integer seed for both, a run whose seed equals the
    population's would randomize with the very words that drew the values (the values are
    thresholds of ``random()``, the reports thresholds of the same words) and be biased.
    """
    rng = np.random.default_rng((SEED, 2, run))
    t0 = time.perf_counter()
    reports = mech.randomize(values, rng=rng)
    tally = mech.tally(reports)
    est = mech.estimate(tally)
    seconds = time.perf_counter() - t0
    if key == "binary":
        return seconds, np.array([1 - est.value, est.value])
    return seconds, np.asarray(est.values, dtype=float)


def measure_ours(
    key: str, k: int, n: int, repeats: int, runs: int, mech: Any = None
) -> dict[str, Any]:
    mech = our_mechanism(key, k) if mech is None else mech
    values = population(k, n)
    if key == "binary":
        values = values.astype(np.uint8)
    truth = np.bincount(values, minlength=k) / n
    times, maes = [], []
    for r in range(max(runs, repeats)):
        seconds, est = our_run(mech, key, values, r)
        if r < repeats:
            times.append(seconds)
        maes.append(float(np.mean(np.abs(est - truth))))
    var = our_variances(mech, key, n, truth)
    p, q = our_pq(mech, key, k)
    own = wang_variance(p, q, n, truth)
    best = min(times)
    return {
        "mechanism": repr(mech) if key == "binary" else type(mech).__name__,
        "epsilon": float(mech.epsilon),
        "seconds": best,
        "per_s": n / best,
        "runs": len(maes),
        "mae": float(np.mean(maes)),
        "expected_mae": expected_mae(var),
        "variance_check_max_rel_diff": float(np.max(np.abs(var / own - 1))),
    }


# ---- peers


@dataclass
class Peer:
    """One peer mechanism for one workload: ``setup(k)`` (not timed) returns ``prepare``
    (values -> the API's inputs and a fresh server where it has one; not timed, called before
    each run) and ``run`` (inputs, n -> the k estimated frequencies; timed)."""

    library: str
    variant: str
    key: str
    setup: Callable[[int], tuple[Callable[[np.ndarray], Any], Callable[[Any, int], Any]]]
    #: (p, q) of the mechanism it implements, for its expected error; None: as ours.
    pq: Callable[[int], tuple[float, float]] | None = None
    #: The largest n its API can take within MEMORY_CAP (None: no cap).
    max_n: Callable[[int], int] | None = None
    note: str = ""
    #: False for a variant that is not the row's mechanism (pure-LDP's FastLH heuristic: a
    #: fixed set of hash functions, larger errors): shown, and judged apart.
    same_mechanism: bool = True


def _seed_all() -> None:
    random.seed(SEED)
    np.random.seed(SEED)  # noqa: NPY002 - the peers draw from numpy's global state


def pure_ldp_peers() -> list[Peer]:
    flh_hashes = 1000
    from pure_ldp.frequency_oracles import (
        DEClient,
        DEServer,
        FastLHClient,
        FastLHServer,
        HadamardMechClient,
        HadamardMechServer,
        HadamardResponseClient,
        HadamardResponseServer,
        LHClient,
        LHServer,
        UEClient,
        UEServer,
    )

    def pair(make_client: Callable[[int], Any], make_server: Callable[[int], Any]) -> Any:
        """A client made once, a new server for each run (a server accumulates), made
        before the run's timer starts."""

        def setup(k: int) -> Any:
            client = make_client(k)
            domain = range(1, k + 1)  # pure-LDP's default index_mapper takes 1..d

            def prepare(values: np.ndarray) -> tuple[list[int], Any]:
                return (values + 1).tolist(), make_server(k)

            def run(inputs: tuple[list[int], Any], n: int) -> np.ndarray:
                items, server = inputs
                _seed_all()
                privatise, aggregate = client.privatise, server.aggregate
                for item in items:
                    aggregate(privatise(item))
                est = server.estimate_all(domain, suppress_warnings=True)
                return np.asarray(est, dtype=float) / n

            return prepare, run

        return setup

    def hr_setup(k: int) -> Any:
        hashes = HadamardResponseServer(EPSILON, k).get_hash_funcs()  # None for epsilon <= 1
        return pair(
            lambda k: HadamardResponseClient(EPSILON, k, hashes),
            lambda k: HadamardResponseServer(EPSILON, k),
        )(k)

    def flh_setup(k: int) -> Any:
        # the server's hash matrix (k x hashes xxhash calls, built twice by its constructor)
        # is made once here; each run gets a copy of the fresh server
        fresh = FastLHServer(EPSILON, k, flh_hashes, use_olh=True)
        return pair(
            lambda k: FastLHClient(EPSILON, k, flh_hashes, use_olh=True),
            lambda k: copy.deepcopy(fresh),
        )(k)

    de = pair(lambda k: DEClient(EPSILON, k), lambda k: DEServer(EPSILON, k))
    sue = pair(lambda k: UEClient(EPSILON, k), lambda k: UEServer(EPSILON, k))
    return [
        Peer("pure-LDP", "DE", "binary", de),
        Peer("pure-LDP", "DE", "grr", de),
        Peer("pure-LDP", "UE", "sue", sue),
        Peer(
            "pure-LDP", "UE", "oue",
            pair(lambda k: UEClient(EPSILON, k, use_oue=True),
                 lambda k: UEServer(EPSILON, k, use_oue=True)),
        ),
        Peer(
            "pure-LDP", "LH", "olh",
            pair(lambda k: LHClient(EPSILON, k, use_olh=True),
                 lambda k: LHServer(EPSILON, k, use_olh=True)),
            pq=lambda k: textbook_pq("olh", k, EPSILON, round(math.e) + 1),
        ),
        Peer(
            "pure-LDP", "FLH", "olh", flh_setup,
            pq=lambda k: textbook_pq("olh", k, EPSILON, round(math.e) + 1),
            note=f"pure-LDP FLH: its heuristic fast OLH, {flh_hashes:,} hash functions in all "
            "(not OLH: shared hash functions, larger errors; not counted as the best peer)",
            same_mechanism=False,
        ),
        Peer(
            "pure-LDP", "HM", "hr",
            pair(lambda k: HadamardMechClient(EPSILON, k, 1),
                 lambda k: HadamardMechServer(EPSILON, k, 1)),
            note="pure-LDP HM: its Hadamard mechanism with t = 1, the one-bit form ours implements",
        ),
        Peer(
            "pure-LDP", "HR", "hr", hr_setup,
            note="pure-LDP HR: Hadamard response of Acharya, Sun & Zhang (its high-privacy form)",
        ),
    ]  # fmt: skip


def multi_freq_peers() -> list[Peer]:
    import numba
    from multi_freq_ldpy.pure_frequency_oracles.GRR import GRR_Aggregator_MI, GRR_Client
    from multi_freq_ldpy.pure_frequency_oracles.LH import LH_Aggregator_MI, LH_Client
    from multi_freq_ldpy.pure_frequency_oracles.UE import UE_Aggregator_MI, UE_Client

    @numba.njit  # type: ignore[misc]
    def seed_numba(seed: int) -> None:  # numba-compiled clients draw from numba's own state
        np.random.seed(seed)  # noqa: NPY002

    def setup_grr(k: int) -> Any:
        GRR_Client(0, k, EPSILON)  # compile

        def run(items: list[int], n: int) -> np.ndarray:
            _seed_all()
            seed_numba(SEED)
            reports = [GRR_Client(x, k, EPSILON) for x in items]
            return np.asarray(GRR_Aggregator_MI(reports, k, EPSILON))

        return _tolist, run

    def setup_ue(optimal: bool) -> Any:
        def setup(k: int) -> Any:
            UE_Client(0, k, EPSILON, optimal)  # compile

            def run(items: list[int], n: int) -> np.ndarray:
                _seed_all()
                seed_numba(SEED)
                reports = [UE_Client(x, k, EPSILON, optimal) for x in items]
                return np.asarray(UE_Aggregator_MI(reports, EPSILON, optimal))

            return _tolist, run

        return setup

    def setup_lh(k: int) -> Any:
        GRR_Client(0, 4, EPSILON)  # compile the randomized response LH_Client calls

        def run(items: list[int], n: int) -> np.ndarray:
            _seed_all()
            seed_numba(SEED)
            reports = [LH_Client(x, k, EPSILON, True) for x in items]
            return np.asarray(LH_Aggregator_MI(reports, k, EPSILON, True))

        return _tolist, run

    seed_numba(SEED)  # compile
    ue_cap = lambda k: MEMORY_CAP // (8 * k)  # noqa: E731 - a float64 vector per report
    return [
        Peer("multi-freq-ldpy", "GRR", "binary", setup_grr),
        Peer("multi-freq-ldpy", "GRR", "grr", setup_grr),
        Peer("multi-freq-ldpy", "SUE", "sue", setup_ue(False), max_n=ue_cap),
        Peer("multi-freq-ldpy", "OUE", "oue", setup_ue(True), max_n=ue_cap),
        Peer(
            "multi-freq-ldpy", "OLH", "olh", setup_lh,
            pq=lambda k: textbook_pq("olh", k, EPSILON, round(math.e) + 1),
        ),
    ]  # fmt: skip


def _tolist(values: np.ndarray) -> list[int]:
    return values.tolist()  # type: ignore[no-any-return]


#: Each peer's epsilon as its library computes it, where it does (OpenDP's privacy map).
CLAIMED_EPSILON: dict[tuple[str, str, int], float] = {}


def opendp_peers() -> list[Peer]:
    import opendp.prelude as dp

    dp.enable_features("contrib")

    def setup_bool(k: int) -> Any:
        p, q = textbook_pq("binary", 2, EPSILON)
        meas = dp.m.make_randomized_response_bool(p)
        CLAIMED_EPSILON["OpenDP", "binary", k] = float(meas.map(1))

        def prepare(values: np.ndarray) -> list[bool]:
            return (values == 1).tolist()  # type: ignore[no-any-return]

        def run(items: list[bool], n: int) -> np.ndarray:
            yes = sum([meas(x) for x in items])
            est = unbiased(np.array([n - yes, yes]), n, p, q)  # GRR over 2: its own complement
            return est

        return prepare, run

    def setup_grr(k: int) -> Any:
        p, q = textbook_pq("grr", k, EPSILON)
        meas = dp.m.make_randomized_response(list(range(k)), p)
        CLAIMED_EPSILON["OpenDP", "grr", k] = float(meas.map(1))

        def run(items: list[int], n: int) -> np.ndarray:
            reports = [meas(x) for x in items]
            return unbiased(np.bincount(reports, minlength=k), n, p, q)

        return _tolist, run

    def setup_sue(k: int) -> Any:
        p, q = textbook_pq("sue", k, EPSILON)
        # keep each bit with probability 1 - f / 2 = p: f = 2 q; epsilon = 2 ln((2 - f) / f)
        meas = dp.m.make_randomized_response_bitvec(
            dp.bitvector_domain(max_weight=1), dp.discrete_distance(), f=2 * q
        )
        CLAIMED_EPSILON["OpenDP", "sue", k] = float(meas.map(1))
        one_hot = [np.packbits(np.eye(k, dtype=np.uint8)[j]).tobytes() for j in range(k)]

        def prepare(values: np.ndarray) -> list[bytes]:
            return [one_hot[j] for j in values.tolist()]

        def run(items: list[bytes], n: int) -> np.ndarray:
            reports = b"".join([meas(x) for x in items])
            bits = np.unpackbits(np.frombuffer(reports, dtype=np.uint8).reshape(n, -1), axis=1)
            return unbiased(bits[:, :k].sum(axis=0, dtype=np.int64), n, p, q)

        return prepare, run

    return [
        Peer(
            "OpenDP",
            "bool RR",
            "binary",
            setup_bool,
            note="OpenDP draws from the OS CSPRNG (no seed)",
        ),
        Peer("OpenDP", "RR", "grr", setup_grr),
        Peer("OpenDP", "bitvec RR", "sue", setup_sue),
    ]


def diffprivlib_peers() -> list[Peer]:
    from diffprivlib.mechanisms import Binary as DPBinary
    from diffprivlib.mechanisms import ExponentialCategorical

    def setup_binary(k: int) -> Any:
        p, q = textbook_pq("binary", 2, EPSILON)
        mech = DPBinary(epsilon=EPSILON, value0="0", value1="1", random_state=SEED)

        def prepare(values: np.ndarray) -> list[str]:
            return [str(x) for x in values.tolist()]

        def run(items: list[str], n: int) -> np.ndarray:
            randomise = mech.randomise
            yes = [randomise(x) for x in items].count("1")
            return unbiased(np.array([n - yes, yes]), n, p, q)

        return prepare, run

    def setup_grr(k: int) -> Any:
        p, q = textbook_pq("grr", k, EPSILON)
        names = [str(j) for j in range(k)]
        utility = [(a, b, 1) for i, a in enumerate(names) for b in names[i + 1 :]]
        mech = ExponentialCategorical(epsilon=EPSILON, utility_list=utility, random_state=SEED)
        index = {name: j for j, name in enumerate(names)}

        def prepare(values: np.ndarray) -> list[str]:
            return [names[j] for j in values.tolist()]

        def run(items: list[str], n: int) -> np.ndarray:
            randomise = mech.randomise
            reports = [index[randomise(x)] for x in items]
            return unbiased(np.bincount(reports, minlength=k), n, p, q)

        return prepare, run

    return [
        Peer("diffprivlib", "Binary", "binary", setup_binary),
        Peer(
            "diffprivlib", "ExponentialCategorical", "grr", setup_grr,
            note="diffprivlib ExponentialCategorical, utility 1 between any two categories: k-RR",
        ),
    ]  # fmt: skip


def load_peers() -> tuple[list[Peer], dict[str, str]]:
    """Every peer that imports, and for each library that does not, why."""
    peers: list[Peer] = []
    failures: dict[str, str] = {}
    loaders = zip(
        LIBRARIES, (pure_ldp_peers, multi_freq_peers, opendp_peers, diffprivlib_peers), strict=True
    )
    for library, load in loaders:
        try:
            peers += load()
        except Exception as exc:  # a peer that breaks with current dependencies is reported
            failures[library] = _reason(exc)
    return peers, failures


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[-1][:120] if text else ''}".rstrip(": ")


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
        best, est, spent = math.inf, None, 0.0
        for _ in range(tries):
            inputs = self.prepare(values)
            t0 = time.perf_counter()
            est = self.run(inputs, n)
            seconds = time.perf_counter() - t0
            best, spent = min(best, seconds), spent + seconds
            if spent > BUDGET[0] / 12:
                break
        truth = np.bincount(values, minlength=self.k) / n
        p, q = self.peer.pq(self.k) if self.peer.pq else textbook_pq(self.peer.key, self.k, EPSILON)
        out = {
            "n": n,
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
            got = self._time(n_used, budget)
            if n_used < n:
                better, why = _fit(n, cap, budget, [self.pilot, (n_used, got["seconds"])])
                if better > n_used:
                    n_used, got = better, self._time(better, budget)
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

    def _time(self, n: int, budget: float) -> dict[str, Any]:
        """``time_at``, the best of 3 runs where the pilot says they are cheap."""
        assert self.pilot is not None
        n0, t0 = self.pilot
        return self.time_at(n, 3 if t0 * n / n0 < budget / 12 else 1)


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


#: The per-cell time budget in seconds (set by main; read by PeerCell.time_at).
BUDGET = [60.0]


def _ladder_floor(n: int) -> int:
    """The largest of 1, 2, 5 x 10**j at most ``n`` (at least 1,000)."""
    best = 1000
    for power in range(3, 10):
        for m in (1, 2, 5):
            if m * 10**power <= n:
                best = m * 10**power
    return best


# ---- the run


def run_all(ns: tuple[int, ...], repeats: int, budget: float, only: set[str]) -> dict[str, Any]:
    warnings.filterwarnings("ignore")  # the peers' warnings (few reports, deprecations)
    peers, failures = load_peers()
    rows = []
    for key, label, k in WORKLOADS:
        if only and key not in only:
            continue
        cells = [PeerCell(p, k) for p in peers if p.key == key]
        for cell in cells:
            cell.start()
        for n in ns:
            print(f"  {label} k={k} n={n:,}", flush=True)
            runs = ERRORS if key == "binary" else max(3, math.ceil(ERRORS / k))
            ours = measure_ours(key, k, n, repeats, runs)
            alt = None
            if key == "olh":  # the multiply-shift OLH, O(n k) decoding
                alt = measure_ours(key, k, n, repeats, repeats, OLH.from_epsilon(EPSILON, k))
            peer_cells = []
            for cell in cells:
                got = cell.measure(n, budget)
                peer_cells.append(
                    {
                        "library": cell.peer.library,
                        "variant": cell.peer.variant,
                        "note": cell.peer.note,
                        "same_mechanism": cell.peer.same_mechanism,
                        "claimed_epsilon": CLAIMED_EPSILON.get((cell.peer.library, key, k)),
                        **got,
                    }
                )
            row = {"workload": key, "label": label, "k": k, "n": n, "ours": ours,
                   "peers": peer_cells}  # fmt: skip
            if alt is not None:
                row["ours_alt"] = alt
            rows.append(row)
    return {"rows": rows, "library_failures": failures}


def best_peer(row: dict[str, Any], same: bool = True) -> dict[str, Any] | None:
    """The fastest peer of the row among those of its mechanism (``same``) or the others."""
    ok = [c for c in row["peers"] if "per_s" in c and c["same_mechanism"] == same]
    return max(ok, key=lambda c: c["per_s"]) if ok else None


def _against(rows: list[dict[str, Any]], same: bool) -> tuple[list[Any], list[str]]:
    ratios, slow = [], []
    for r in rows:
        best = best_peer(r, same)
        if best is None:
            continue
        ratio = r["ours"]["per_s"] / best["per_s"]
        ratios.append((ratio, r, best))
        if ratio < 10:
            slow.append(f"{_row_name(r)}: {ratio:.1f}x {best['library']} {best['variant']}")
    return ratios, slow


def verdicts(rows: list[dict[str, Any]]) -> list[str]:
    out = []
    ratios, slow = _against(rows, True)
    if ratios:
        low, r, best = min(ratios, key=lambda t: t[0])
        lowest = f"lowest {_ratio(low)} ({_row_name(r)}, {best['library']} {best['variant']})"
        text = "at least 10x the best peer on every row (peers of the row's mechanism): "
        if slow:
            out.append(text + f"NOT met ({lowest}; " + "; ".join(slow) + ")")
        else:
            out.append(text + f"met ({lowest})")
    others, slow = _against(rows, False)
    for ratio, r, best in others:
        if ratio >= 10:
            continue
        rel = best["mae"] / best["expected_mae"]
        out.append(
            f"against {best['library']} {best['variant']}, another mechanism for the row: "
            f"NOT 10x at {_row_name(r)}: {ratio:.1f}x ({_rate(best['per_s'])}/s, its MAE "
            f"{rel:.2f}x the expected MAE of OLH at its n; ours {_rate(r['ours']['per_s'])}/s)"
        )
    for key, k, minimum, text in (
        ("oue", 1024, 1e6, "OUE k = 1024 >= 1 M reports/s"),
        ("olh", 1024, 3e5, "OLH k = 1024 >= 300 k reports/s including decoding"),
        ("hr", None, 5e6, "Hadamard response >= 5 M reports/s"),
    ):
        got = [r for r in rows if r["workload"] == key and (k is None or r["k"] == k)]
        if not got:
            continue
        # every implementation of ours in the row must meet it (OLH: linear and multiply-shift)
        worst = min(got, key=lambda r: min(r[x]["per_s"] for x in ("ours", "ours_alt") if x in r))
        rate = min(worst[x]["per_s"] for x in ("ours", "ours_alt") if x in worst)
        out.append(
            f"{text}: {'met' if rate >= minimum else 'NOT met'} (slowest {_rate(rate)}/s at "
            f"{_row_name(worst)})"
        )
    dev = [(r["ours"]["mae"] / r["ours"]["expected_mae"] - 1, r) for r in rows]
    if dev:
        worst, r = max(dev, key=lambda t: abs(t[0]))
        misses = [f"{_row_name(x)}: {d:+.1%}" for d, x in dev if abs(d) > 0.10]
        text = "every accuracy within 10% of its expected error: "
        if misses:
            out.append(text + "NOT met (" + "; ".join(misses) + ")")
        else:
            out.append(text + f"met (largest deviation {worst:+.1%}, {_row_name(r)})")
    checks = [r["ours"]["variance_check_max_rel_diff"] for r in rows]
    if checks:
        out.append(
            "our exposed variances against the closed form of Wang et al.: largest relative "
            f"difference {max(checks):.1e} ({'agree' if max(checks) < 1e-9 else 'DISAGREE'})"
        )
    return out


# ---- markdown


def _rate(x: float) -> str:
    if x >= 1e6:
        return f"{x / 1e6:.2f} M"
    if x >= 1e4:
        return f"{x / 1e3:.0f} k"
    return f"{x / 1e3:.2f} k"


def _ratio(x: float) -> str:
    return f"{x:,.0f}x" if x >= 10 else f"{x:.1f}x"


def _n(n: int) -> str:
    return f"10^{round(math.log10(n))}" if n == 10 ** round(math.log10(n)) else f"{n:,}"


def _row_name(r: dict[str, Any]) -> str:
    k = "" if r["workload"] == "binary" else f" k = {r['k']}"
    return f"{r['label']}{k} n = {_n(r['n'])}"


def _cell(cells: list[dict[str, Any]]) -> str:
    if not cells:
        return "n/a: no such mechanism"
    parts = []
    for c in cells:
        label = f"{c['variant']} " if len(cells) > 1 else ""
        if "failure" in c:
            parts.append(f"{label}fails: {c['failure']}")
            continue
        text = f"{label}{_rate(c['per_s'])}"
        if c["extrapolated"]:
            text += f" (extrapolated from n={c['n_used']:,})"
        parts.append(text)
    return "; ".join(parts)


def markdown(data: dict[str, Any]) -> str:
    meta = data["meta"]
    versions = ", ".join(f"{k} {v}" for k, v in meta["versions"].items())
    lines = [
        "# deniable against the Python LDP libraries",
        "",
        f"epsilon = {EPSILON}; Zipf-like values; reports per second of randomize + tally + "
        f"estimate for all n reports, one core (`taskset -c 0`, one BLAS/OpenMP/numba thread); "
        f"{meta['cpu']}, {meta['cpus_allowed']} CPU(s) allowed, shared; Python "
        f"{meta['python']}; {meta['date']}.  Whole run: {meta['run_minutes']:.1f} min.",
        "",
        f"Versions: {versions}.",
        "",
        f"Ours: best of {meta['repeats']} runs.  A peer cell that would take more than "
        f"{meta['budget_s']:.0f} s at the row's n is measured at a smaller n and extrapolated "
        "(time affine in n through a 2,000-report pilot and that run; multi-freq-ldpy's "
        "unary encoding is also capped at 1 GiB of report vectors).  Our MAE is the mean over "
        "the runs of the table (binary RR 1,024 runs, k = 16: 64, k = 1024: 3; about 1,024 "
        "absolute errors or more, so the ratio to the expected MAE has a standard deviation "
        "of about 2.5%: 10% is some 4 standard deviations); a peer's MAE is of its one timed "
        "run, shown as a multiple of the expected MAE of its mechanism at the n it ran.",
        "",
        "| workload | k | n | ours /s | "
        + " | ".join(f"{lib} /s" for lib in LIBRARIES)
        + " | ours / best peer | our MAE | expected MAE | ours / expected | best peer's MAE |",
        "| --- | ---: | ---: | ---: | "
        + " | ".join("---" for _ in LIBRARIES)
        + " | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in data["rows"]:
        ours = r["ours"]
        best = best_peer(r)
        cells = [_cell([c for c in r["peers"] if c["library"] == lib]) for lib in LIBRARIES]
        for i, lib in enumerate(LIBRARIES):
            if lib in data["library_failures"]:
                cells[i] = f"fails: {data['library_failures'][lib]}"
        if best is None:
            ratio, peer_mae = "-", "-"
        else:
            ratio = f"{_ratio(ours['per_s'] / best['per_s'])} ({best['library']})"
            other = best_peer(r, same=False)
            if other is not None and other["per_s"] > best["per_s"]:
                ratio += f"; {_ratio(ours['per_s'] / other['per_s'])} ({other['variant']})"
            peer_mae = f"{best['mae']:.2e} ({best['mae'] / best['expected_mae']:.2f}x its expected)"
        mine = _rate(ours["per_s"])
        if "ours_alt" in r:
            mine += f" (OLH-linear); {_rate(r['ours_alt']['per_s'])} (OLH, multiply-shift)"
        lines.append(
            f"| {r['label']} | {r['k']} | {_n(r['n'])} | {mine} | "
            + " | ".join(cells)
            + f" | {ratio} | {ours['mae']:.3e} | {ours['expected_mae']:.3e} "
            f"| {ours['mae'] / ours['expected_mae']:.3f} | {peer_mae} |"
        )
    lines += ["", "Targets (issue 10, one core):", ""]
    lines += [f"* {v}" for v in data["targets"]]
    notes = sorted({c["note"] for r in data["rows"] for c in r["peers"] if c["note"]})
    lines += ["", "Notes:", ""]
    lines += [f"* {n}" for n in notes]
    lines += [
        "* Our OLH rows: `LinearOLH` (OLH with a linear hash over GF(2), what `choose_oracle` "
        "picks at epsilon = 1: the same channel, estimate and exact variance as OLH at its g, "
        "decoded by one Walsh-Hadamard transform in O(n g + k log k)) gives the ratio and the "
        "MAE; the multiply-shift `OLH` (O(n k) decoding) is timed beside it.",
        "* multi-freq-ldpy's `*_Aggregator_MI` clips negative estimates to 0 and renormalizes "
        "to sum 1: a biased estimator, whose MAE can fall below the unbiased one's.",
        "* OpenDP and diffprivlib have no estimator for these mechanisms: their reports are "
        "tallied by numpy and estimated by `(c / n - q) / (p - q)`, timed with the rest.",
        "* Not timed: a peer's setup (client and server objects, FastLHServer's hash matrix, "
        "ExponentialCategorical's utility table, numba compilation) and converting the values "
        "into the Python objects its API takes; both are in `peers.json` (`setup_s`).",
        "* Full per-cell data (n used, seconds, MAE, expected MAE, each peer's epsilon where "
        "its library computes one): `benchmarks/results/peers.json`.",
    ]
    return "\n".join(lines) + "\n"


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _versions() -> dict[str, str]:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="n = 10**4, 5 s budget, no files")
    parser.add_argument("--repeats", type=int, default=3, help="our timed runs (best of)")
    parser.add_argument("--budget", type=float, default=60.0, help="seconds per peer cell")
    parser.add_argument("--only", nargs="*", default=[], help="workload keys (binary, grr, ...)")
    args = parser.parse_args()
    start = time.perf_counter()
    ns = (10**4,) if args.quick else NS
    budget = 5.0 if args.quick else args.budget
    BUDGET[0] = budget
    data = run_all(ns, args.repeats, budget, set(args.only))
    data["targets"] = verdicts(data["rows"])
    data["meta"] = {
        "date": datetime.date.today().isoformat(),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpu": _cpu(),
        "cpus_allowed": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "versions": _versions(),
        "epsilon": EPSILON,
        "ns": list(ns),
        "repeats": args.repeats,
        "budget_s": budget,
        "pilot_n": PILOT_N,
        "seed": SEED,
        "run_minutes": (time.perf_counter() - start) / 60,
    }
    data = {"meta": data.pop("meta"), **data}
    text = markdown(data)
    if not args.quick and not args.only:
        OUT.mkdir(exist_ok=True)
        (OUT / "peers.md").write_text(text, encoding="utf-8")
        (OUT / "peers.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
