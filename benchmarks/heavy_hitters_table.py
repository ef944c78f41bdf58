"""Precision and recall of PEM, TreeHist, SFP and RAPPOR n-grams on planted strings (the
table of ``docs/heavy-hitters.md``).

Seeded and deterministic: ``n`` devices, 20 planted 6-byte strings with Zipf frequencies
(exponent 1) summing to 0.5, the other half random 6-byte lowercase strings (none
frequent).  A planted string is *heavy* when its frequency is at least ``phi = 0.01`` (13
of the 20 at this setting).  Recall is the share of the heavy strings found, precision the
share of found strings that are heavy, averaged over ``--runs`` seeds; "false" counts the
found strings no device holds (false discoveries in the strict sense), summed over the
runs.  Not timed, not run by the tests.

SFP and RAPPOR's n-grams need an alphabet: lowercase letters and digits (``ALPHABET``, 36
characters, the smallest that holds every string here), strings of at most 6 characters.
SFP: ``SFP(epsilon, 6, alphabet=ALPHABET)`` with its defaults otherwise (HCMS, ``k = 64``,
``m = 1024``, 8 puzzle bits, half the epsilon to each sketch).  RAPPOR n-grams: bigrams
(``gram = 2``, 3 positions), one pair of positions a device and the whole string, each
report through ``Rappor(m=128, h=2, cohorts=64, f=0, p=1-q, q=q)`` with ``q`` the largest
(to 1e-6) whose three reports total at most ``epsilon`` (``RapporNgram.epsilon``); ``f = 0``
is one collection, as every other row (no PRR to memoize: ``permanent_epsilon`` is
infinite).  Neither has a top-k rule: each is run at two threshold settings.

    PYTHONPATH=src python benchmarks/heavy_hitters_table.py [--n 100000] [--runs 5]
        [--protocols pem,treehist,sfp,ngram]
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from functools import partial

import numpy as np
from scipy.optimize import brentq

from deniable.oracles import PEM, SFP, Rappor, RapporNgram, TreeHist

PHI = 0.01
HEAVY = [f"key{i:03d}" for i in range(20)]
ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
Row = tuple[str, float, str, float, float, int]
#: The strings a protocol finds from the devices' strings and a seed.
Finder = Callable[[list[bytes], int], frozenset[str | bytes]]


def items(n: int, seed: int) -> tuple[list[bytes], dict[str, float]]:
    """The devices' strings and the planted frequencies."""
    rng = np.random.default_rng(seed)
    weights = 1 / np.arange(1, len(HEAVY) + 1)
    counts = np.floor(0.5 * n * weights / weights.sum()).astype(int)
    out = [h.encode() for h, c in zip(HEAVY, counts, strict=True) for _ in range(c)]
    rest = rng.integers(97, 123, size=(n - len(out), 6), dtype=np.uint8)
    out += [row.tobytes() for row in rest]
    return out, {h: c / n for h, c in zip(HEAVY, counts, strict=True)}


def ngram_model(eps: float) -> RapporNgram:
    """Bigrams of the 6-character strings, one pair and the whole string a device, at a
    total of at most ``eps`` (module docstring)."""

    def model(q: float) -> RapporNgram:
        def rappor() -> Rappor:
            return Rappor(m=128, h=2, cohorts=64, f=0.0, p=1 - q, q=q)

        return RapporNgram(
            ngram=rappor(), full=rappor(), alphabet=ALPHABET, gram=2, length=6, pairs=1
        )

    q = brentq(lambda q: model(q).epsilon - eps, 0.5 + 1e-9, 1 - 1e-9)
    out = model(math.floor(q * 1e6) / 1e6)
    assert out.epsilon <= eps
    return out


def _sfp(eps: float, alpha: float) -> Finder:
    def find(data: list[bytes], seed: int) -> frozenset[str | bytes]:
        sfp = SFP(eps, 6, alphabet=ALPHABET, alpha=alpha)
        assert sfp.epsilon_per_device <= eps
        return frozenset(sfp.run(data, rng=seed).strings)

    return find


def _ngram(eps: float, alpha: float, edge: float) -> Finder:
    def find(data: list[bytes], seed: int) -> frozenset[str | bytes]:
        ng = ngram_model(eps)
        reports = ng.randomize([d.decode() for d in data], rng=seed)
        return frozenset(ng.discover(reports, alpha=alpha, edge_threshold=edge).strings)

    return find


def _heavy(make: Callable[..., PEM | TreeHist], eps: float, alpha: float | None) -> Finder:
    def find(data: list[bytes], seed: int) -> frozenset[str | bytes]:
        return frozenset(make(eps, alpha=alpha).run(data, rng=seed).strings)

    return find


def protocols(eps: float) -> dict[str, list[tuple[str, str, Finder]]]:
    """Each protocol's rows at ``eps``: (name, rule, strings found from data and a seed)."""
    pem4 = partial(PEM, max_bytes=6, start_bits=8, step_bits=4, top_k=32)
    pem8 = partial(PEM, max_bytes=6, start_bits=8, step_bits=8, top_k=32)
    tree = partial(TreeHist, max_bytes=6, top_k=32)
    heavy: dict[str, list[tuple[str, Callable[..., PEM | TreeHist]]]] = {
        "pem": [("PEM (step 4)", pem4), ("PEM (step 8)", pem8)],
        "treehist": [("TreeHist", tree)],
    }
    out = {
        key: [
            (name, "top-k" if a is None else f"alpha = {a:g}", _heavy(make, eps, a))
            for name, make in rows
            for a in (0.05, None)
        ]
        for key, rows in heavy.items()
    }
    out["sfp"] = [("SFP", f"alpha = {a:g}", _sfp(eps, a)) for a in (0.05, 0.01)]
    out["ngram"] = [
        ("RAPPOR n-grams", f"alpha = {a:g}, edge {e:g}", _ngram(eps, a, e))
        for a, e in ((0.05, 0.02), (0.2, 0.01))
    ]
    return out


def study(n: int, runs: int, which: list[str]) -> list[Row]:
    rows: list[Row] = []
    for key in which:
        by_name: dict[tuple[str, str], list[Row]] = {}
        for eps in (2.0, 4.0):
            for name, label, find in protocols(eps)[key]:
                recall = precision = 0.0
                false = 0
                for seed in range(runs):
                    data, freq = items(n, seed)
                    heavy = {h for h, f in freq.items() if f >= PHI}
                    held = {d.decode() for d in data}
                    found = find(data, 1000 + seed)
                    recall += len(found & heavy) / len(heavy)
                    precision += len(found & heavy) / len(found) if found else 1.0
                    false += len(found - held)
                row = (name, eps, label, recall / runs, precision / runs, false)
                by_name.setdefault((name, ""), []).append(row)
        for group in by_name.values():
            rows += group
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--protocols", default="pem,treehist,sfp,ngram")
    args = parser.parse_args()
    which = args.protocols.split(",")
    unknown = set(which) - {"pem", "treehist", "sfp", "ngram"}
    if unknown:
        parser.error(f"--protocols: pem, treehist, sfp or ngram, got {sorted(unknown)}")
    print(f"n = {args.n}, {args.runs} runs, heavy: frequency >= {PHI}")
    print()
    print("| protocol | epsilon | rule | recall | precision | false |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, eps, label, rec, prec, false in study(args.n, args.runs, which):
        print(f"| {name} | {eps:g} | {label} | {rec:.2f} | {prec:.2f} | {false} |")


if __name__ == "__main__":
    main()
