"""The peer libraries of bench_peers.py, each through its public API (module docstring of
``benchmarks/bench_peers.py``): pure-LDP, multi-freq-ldpy, OpenDP and diffprivlib."""

from __future__ import annotations

import copy
import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from peers.model import EPSILON, LIBRARIES, MEMORY_CAP, SEED, textbook_pq, unbiased


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
