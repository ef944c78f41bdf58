"""The heavy-hitter rows of bench_peers.py (issue 18, part 5): ours against pure-LDP's
PEM, TreeHist and SFP on strings nobody listed in advance.

Workload: ``n`` strings of exactly ``LENGTH`` characters over ``ALPHABET`` (``"w"`` and four
digits: ``DOMAIN`` distinct strings), the string of rank ``j`` with frequency proportional
to ``1 / (j + 1)`` (the Zipf-like shape of the other rows), the ranks given to the strings by
a seeded permutation (the frequent strings share no prefix by construction); one seeded draw
per n, given to both libraries.  The true top ``TOP``: the ``TOP`` most frequent strings of
the draw itself.  Strings of the full length only: pure-LDP's TreeHist finds only strings of
``max_string_length`` characters (its padding character may not be in the alphabet, and
every candidate ends in padding), and its PEM hands its index mapper a prefix cut at the
first padding character, so padded strings alias one another (``"w0*5"`` and ``"w0**"``).

* Ours (``deniable.oracles``): ``PEM(eps, max_bytes=5, start_bits=8, step_bits=8,
  top_k=20, alpha=None, alphabet=ALPHABET)`` (one byte a round: five groups, the rule of
  Wang et al. 2019: keep the ``top_k`` largest; each round extends a kept prefix by the 11
  alphabet bytes and the padding byte, as the peer's PEM extends by its 11 characters),
  ``TreeHist(eps, max_bytes=5, top_k=20, alpha=None)`` (one bit a
  round: 40 groups) and ``SFP(eps, max_length=5, alphabet=ALPHABET, puzzle_bits=8, k=64,
  m=1024, sketch="hcms")`` (its default false-discovery rule, ``alpha = 0.01``); ``run`` =
  ``randomize`` + ``estimate`` on the list of strings, with a seeded generator and with the
  default randomness (``rng=None``).  PEM and SFP are given the alphabet (public
  configuration: the per-device epsilon is unchanged); TreeHist knows nothing of it (one bit
  a round over all 256 bytes).
* pure-LDP 1.2.0, through ``pure_ldp.heavy_hitters``: ``PEMClient`` / ``PEMServer``
  (``start_length=0, fragment_length=1, max_string_length=5``, alphabet the 11 characters:
  one character a round, five groups), ``TreeHistClient`` / ``TreeHistServer``
  (``fragment_length=1``: two reports a device at ``eps / 2`` each) and ``SFPClient`` /
  ``SFPServer`` (``fragment_length=1``: it needs ``max_string_length`` a multiple of it;
  ``eps / 2`` to the fragment and to the word).  Each with the frequency oracle its author's
  experiments use, Apple's Hadamard count mean sketch (``CMSClient`` / ``CMSServer``,
  ``is_hadamard=True``, ``K`` rows of ``M`` columns: ``fo_client`` / ``fo_server``), and
  PEM also with its default oracle (OLH: ``LHClient`` / ``LHServer``, ``use_olh``; index
  mapper the base-11 value of the prefix), whose server hashes every one of the
  ``11**l`` prefixes of its group for each report.  TreeHist's and SFP's default oracle is
  not run: TreeHist's needs an index mapper of every prefix length into ``11**5`` slots
  (none is one-to-one) and hashes ``2 x 11**5`` items a report; SFPClient reads
  ``fo_client.sketch_based`` of ``None`` without one, and its default word oracle gets the
  fragment domain (``11 x 256``) for words of ``11**5``.  Servers that build an ``LHServer``
  or ``CMSServer`` with ``d=None`` are built under ``peers.sketches._numpy1_zeros``.
  ``privatise`` one string, ``aggregate`` its report, then ``find_heavy_hitters(k=TOP)``;
  one client per run (a ``PEMClient`` picks the group inside ``privatise``: there is no
  client per group in its API; its ``update_params(d=...)`` a report only sets numbers).

The reported list: each library's output, cut to its ``TOP`` largest estimates when longer
(PEM and TreeHist with top-k give exactly ``TOP``; SFP gives what clears its thresholds,
ours, or the products of the top ``TOP`` fragments of each position, pure-LDP's).  Recall =
reported strings in the true top ``TOP`` / ``TOP``; precision = the same / reported strings.

One timed run is every report of ``n`` devices and the decoding (``run`` / the loop and
``find_heavy_hitters``); a row's time is the best of ``--repeats`` runs, for both libraries.
Not timed: building pure-LDP's clients (HCMS: its Hadamard matrix) and servers, and the list
of strings both take.  A pure-LDP run that would exceed ``--budget`` seconds is measured on
the first reports of the row: two pilots (``PILOT_N`` reports, then as many as a quarter of
the budget allows by the first; ten times more while that takes under 1.5 times the first
and would fit half the budget: the decoding's fixed cost would hide the cost a report), the
affine fit through them (a fixed part, the decoding, and a cost per report) gives the n
that fits (1, 2, 5 x 10**j), measured there (best of ``--repeats``) and extrapolated
affinely to n through the larger pilot and that run, marked so.  Its recall and precision
are of its runs at that n (Python's and numpy's global generators, which it draws from,
seeded per run); ours at the same first reports (mean of ``OURS_AT_PEER_N`` seeded runs)
is shown beside it, and ours at the row's n.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from deniable.oracles import PEM, SFP, TreeHist
from peers.cells import _affine, _fit
from peers.libraries import _reason
from peers.model import SEED
from peers.sketches import _numpy1_zeros

ALPHABET = "w0123456789"
LENGTH = 5
DOMAIN = 10_000
EPSILONS = (1.0, 2.0, 4.0)
TOP = 20
#: pure-LDP's Hadamard count mean sketch as the oracle of its heavy hitters (our SFP's).
K, M = 64, 1024
#: The first pilot of a pure-LDP cell (reports).
PILOT_N = 200
#: Our seeded runs at the n pure-LDP ran, when under the row's.
OURS_AT_PEER_N = 5
PROTOCOLS = (("pem", "PEM"), ("treehist", "TreeHist"), ("sfp", "SFP"))


def names() -> list[str]:
    """The strings by rank: ``names()[j]`` has the ``j``-th largest probability."""
    perm = np.random.default_rng((SEED, 8, DOMAIN)).permutation(DOMAIN)
    return [f"w{j:04d}" for j in perm.tolist()]


def population(n: int) -> np.ndarray:
    """Ranks of ``n`` strings (Zipf-like, seeded; prefixes agree)."""
    weights = 1 / np.arange(1, DOMAIN + 1)
    gen = np.random.default_rng((SEED, 9, DOMAIN))
    return gen.choice(DOMAIN, size=n, p=weights / weights.sum()).astype(np.int64)


def true_top(idx: np.ndarray) -> set[str]:
    """The ``TOP`` most frequent strings of the draw (ties: the lower rank)."""
    counts = np.bincount(idx, minlength=DOMAIN)
    order = np.argsort(-counts, kind="stable")[:TOP]
    ranked = names()
    return {ranked[j] for j in order.tolist()}


def accuracy(found: list[tuple[Any, float]], top: set[str]) -> dict[str, float]:
    """Recall and precision of the true top ``TOP`` among ``found`` (string, estimate) pairs,
    cut to the ``TOP`` largest estimates."""
    best = sorted(found, key=lambda t: -t[1])[:TOP]
    hits = sum(1 for s, _ in best if s in top)
    return {
        "recall": hits / TOP,
        "precision": hits / len(best) if best else math.nan,
        "reported": len(best),
        "output": len(found),
    }


def summary(accs: list[dict[str, float]]) -> dict[str, float]:
    out = {f: float(np.nanmean([a[f] for a in accs])) for f in accs[0]}
    recall = np.array([a["recall"] for a in accs])
    out["recall_se"] = float(recall.std(ddof=1) / math.sqrt(recall.size)) if recall.size > 1 else 0
    return out


# ---- ours


def our_protocol(key: str, eps: float) -> Any:
    if key == "pem":
        return PEM(eps, max_bytes=LENGTH, start_bits=8, step_bits=8, top_k=TOP, alpha=None,
                   alphabet=ALPHABET)  # fmt: skip
    if key == "treehist":
        return TreeHist(eps, max_bytes=LENGTH, top_k=TOP, alpha=None)
    return SFP(eps, max_length=LENGTH, alphabet=ALPHABET, puzzle_bits=8, k=K, m=M, sketch="hcms")


def our_config(key: str) -> str:
    return {
        "pem": "PEM(max_bytes=5, start_bits=8, step_bits=8, top_k=20, alpha=None, alphabet)",
        "treehist": "TreeHist(max_bytes=5, top_k=20, alpha=None)",
        "sfp": f"SFP(max_length=5, alphabet, puzzle_bits=8, k={K}, m={M}, hcms, alpha=0.01)",
    }[key]


def our_alphabet(key: str) -> str:
    """What our protocol knows of the strings' characters (the table's configuration)."""
    if key == "treehist":
        return "no alphabet: every byte"
    return f"the peer's alphabet `{ALPHABET}`"


def measure_ours(key: str, eps: float, n: int, repeats: int, sources: tuple[str, ...]) -> Any:
    """Per source: the best of ``repeats`` runs, and the accuracy of every run."""
    ranked = np.asarray(names())
    idx = population(n)
    values, top = ranked[idx].tolist(), true_top(idx)
    proto = our_protocol(key, eps)
    out: dict[str, Any] = {}
    for source in sources:
        times, accs = [], []
        for r in range(repeats):
            rng = np.random.default_rng((SEED, 10, r)) if source == "seeded" else None
            t0 = time.perf_counter()
            found = proto.run(values, rng=rng)
            times.append(time.perf_counter() - t0)
            accs.append(accuracy(list(zip(found.strings, found.frequencies, strict=True)), top))
        best = min(times)
        out[source] = {"source": source, "seconds": best, "per_s": n / best, "runs": repeats,
                       **summary(accs)}  # fmt: skip
    out["epsilon_per_device"] = float(proto.epsilon_per_device)
    return out


# ---- pure-LDP


def _base11(s: str) -> int:
    v = 0
    for c in s:
        v = v * len(ALPHABET) + ALPHABET.index(c)
    return v


def _hcms(eps: float) -> tuple[Any, Any]:
    from pure_ldp.frequency_oracles import CMSClient, CMSServer

    with _numpy1_zeros():
        server = CMSServer(eps, K, M, is_hadamard=True)
    return CMSClient(eps, server.get_hash_funcs(), M, is_hadamard=True), server


def _identity(x: str) -> str:
    return x


Maker = Callable[[float], tuple[Any, Callable[[], Any]]]


def _pem_olh(eps: float) -> tuple[Any, Callable[[], Any]]:
    from pure_ldp.heavy_hitters import PEMClient, PEMServer

    args = (eps, 0, LENGTH, 1)
    kw = {"alphabet": list(ALPHABET), "index_mapper": _base11}
    return PEMClient(*args, **kw), lambda: PEMServer(*args, **kw)


def _pem_hcms(eps: float) -> tuple[Any, Callable[[], Any]]:
    from pure_ldp.heavy_hitters import PEMClient, PEMServer

    fo_client, fo_server = _hcms(eps)
    args = (eps, 0, LENGTH, 1)
    kw = {"alphabet": list(ALPHABET), "index_mapper": _identity}

    def server() -> Any:
        with _numpy1_zeros():
            return PEMServer(*args, **kw, fo_server=fo_server)

    return PEMClient(*args, **kw, fo_client=fo_client), server


def _treehist_hcms(eps: float) -> tuple[Any, Callable[[], Any]]:
    from pure_ldp.heavy_hitters import TreeHistClient, TreeHistServer

    fo_client, fo_server = _hcms(eps)
    kw = {"alphabet": list(ALPHABET), "index_mapper": _identity}

    def server() -> Any:
        with _numpy1_zeros():
            return TreeHistServer(eps, LENGTH, 1, **kw, fo_server=fo_server)

    return TreeHistClient(eps, 1, LENGTH, **kw, fo_client=fo_client), server


def _sfp_hcms(eps: float) -> tuple[Any, Callable[[], Any]]:
    from pure_ldp.heavy_hitters import SFPClient, SFPServer

    fo_client, fo_server = _hcms(eps)
    kw = {"alphabet": set(ALPHABET), "index_mapper": _identity}

    def server() -> Any:
        with _numpy1_zeros():
            return SFPServer(eps, 1, LENGTH, **kw, fo_server=fo_server)

    return SFPClient(eps, 1, LENGTH, **kw, fo_client=fo_client), server


_DEFAULT = "default oracle (OLH: LHClient / LHServer)"
_SKETCH = f"HCMS oracle (CMSClient / CMSServer is_hadamard=True, k = {K}, m = {M})"
#: (protocol, variant, maker) of each pure-LDP configuration, in table order.
PEERS: tuple[tuple[str, str, Maker], ...] = (
    ("pem", "PEMClient / PEMServer, one character a round, " + _SKETCH, _pem_hcms),
    ("pem", "PEMClient / PEMServer, one character a round, " + _DEFAULT, _pem_olh),
    (
        "treehist",
        "TreeHistClient / TreeHistServer, one character a round, " + _SKETCH,
        _treehist_hcms,
    ),
    ("sfp", "SFPClient / SFPServer, fragments of one character, " + _SKETCH, _sfp_hcms),
)


def _peer_at(client: Any, server: Callable[[], Any], idx: np.ndarray, tries: int) -> Any:
    """The best of ``tries`` runs on the strings ``idx`` and the accuracy of each run."""
    ranked = names()
    values = [ranked[i] for i in idx.tolist()]  # what its API takes (not timed)
    top = true_top(idx)
    best, accs = math.inf, []
    for t in range(tries):
        srv = server()
        random.seed(SEED + t)
        np.random.seed(SEED + t)  # noqa: NPY002 - pure-LDP draws from numpy's global state
        privatise, aggregate = client.privatise, srv.aggregate
        t0 = time.perf_counter()
        for x in values:
            aggregate(privatise(x))
        strings, freqs = srv.find_heavy_hitters(k=TOP)
        best = min(best, time.perf_counter() - t0)
        found = [(str(s).rstrip("*"), float(f)) for s, f in zip(strings, freqs, strict=True)]
        accs.append(accuracy(found, top))
    return best, summary(accs)


def measure_peer(maker: Maker, eps: float, n: int, repeats: int, budget: float) -> Any:
    """pure-LDP at ``n``, or on the first reports and extrapolated (module docstring)."""
    try:
        t0 = time.perf_counter()
        client, server = maker(eps)
        setup = time.perf_counter() - t0
        idx = population(n)
        first = (min(PILOT_N, n), _peer_at(client, server, idx[:PILOT_N], 1)[0])
        m2 = min(n, max(2 * PILOT_N, int(budget / 4 / (first[1] / first[0]))))
        pilot = (m2, _peer_at(client, server, idx[:m2], 1)[0])
        while pilot[1] < 1.5 * first[1] and m2 < n:  # the decoding hides the cost a report
            slope = max(pilot[1] - first[1], 0.0) / (pilot[0] - first[0])
            if pilot[1] + slope * 9 * m2 > budget / 2:
                break
            m2 = min(n, 10 * m2)
            pilot = (m2, _peer_at(client, server, idx[:m2], 1)[0])
        used, why = _fit(n, n, budget, [first, pilot])
        seconds, acc = _peer_at(client, server, idx[:used], repeats)
    except Exception as exc:  # a peer that breaks is reported, not fatal
        return {"failure": _reason(exc)}
    at_n = _affine([pilot, (used, seconds)], n) if used < n else seconds
    return {
        "n_used": used,
        "extrapolated": used < n,
        "why": why if used < n else "",
        "pilots": [first, pilot],
        "seconds": seconds,
        "seconds_at_n": at_n,
        "per_s": n / at_n,
        "setup_s": setup,
        "runs": repeats,
        **acc,
    }


def run_rows(ns: tuple[int, ...], repeats: int, budget: float) -> list[dict[str, Any]]:
    rows = []
    for key, label in PROTOCOLS:
        for eps in EPSILONS:
            for n in ns:
                print(f"  {label} eps={eps:g} n={n:,}", flush=True)
                ours = measure_ours(key, eps, n, repeats, ("seeded", "default"))
                peers = []
                for pkey, variant, maker in PEERS:
                    if pkey != key:
                        continue
                    print(f"    pure-LDP {variant.split(',')[0]} ...", flush=True)
                    got = measure_peer(maker, eps, n, repeats, budget)
                    peer = {"library": "pure-LDP", "variant": variant, **got}
                    used = got.get("n_used", n)
                    if used < n:  # our accuracy on the peer's first reports
                        runs = max(repeats, OURS_AT_PEER_N)
                        peer["ours_at_peer_n"] = measure_ours(key, eps, used, runs, ("seeded",))[
                            "seeded"
                        ]
                    peers.append(peer)
                rows.append({"workload": key, "label": label, "epsilon": eps, "n": n,
                             "config": our_config(key), "our_alphabet": our_alphabet(key),
                             "epsilon_per_device": ours["epsilon_per_device"],
                             "ours": ours["seeded"], "ours_default": ours["default"],
                             "peers": peers})  # fmt: skip
    return rows
