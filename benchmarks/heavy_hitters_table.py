"""Precision and recall of PEM and TreeHist on planted strings (the table of
``docs/heavy-hitters.md``).

Seeded and deterministic: ``n`` devices, 20 planted 6-byte strings with Zipf frequencies
(exponent 1) summing to 0.5, the other half random 6-byte lowercase strings (none
frequent).  A planted string is *heavy* when its frequency is at least ``phi = 0.01`` (12
of the 20 at this setting).  Recall is the share of the heavy strings found, precision the
share of found strings that are heavy, averaged over ``--runs`` seeds; "false" counts the
found strings no device holds (false discoveries in the strict sense), summed over the
runs.  Not timed, not run by the tests.

    PYTHONPATH=src python benchmarks/heavy_hitters_table.py [--n 100000] [--runs 5]
"""

from __future__ import annotations

import argparse

import numpy as np

from deniable.oracles import PEM, TreeHist

PHI = 0.01
HEAVY = [f"key{i:03d}" for i in range(20)]


def items(n: int, seed: int) -> tuple[list[bytes], dict[str, float]]:
    """The devices' strings and the planted frequencies."""
    rng = np.random.default_rng(seed)
    weights = 1 / np.arange(1, len(HEAVY) + 1)
    counts = np.floor(0.5 * n * weights / weights.sum()).astype(int)
    out = [h.encode() for h, c in zip(HEAVY, counts, strict=True) for _ in range(c)]
    rest = rng.integers(97, 123, size=(n - len(out), 6), dtype=np.uint8)
    out += [row.tobytes() for row in rest]
    return out, {h: c / n for h, c in zip(HEAVY, counts, strict=True)}


def study(n: int, runs: int) -> list[tuple[str, float, str, float, float, int]]:
    rows = []
    protocols = [
        ("PEM (step 4)", lambda e, a: PEM(e, 6, start_bits=8, step_bits=4, top_k=32, alpha=a)),
        ("PEM (step 8)", lambda e, a: PEM(e, 6, start_bits=8, step_bits=8, top_k=32, alpha=a)),
        ("TreeHist", lambda e, a: TreeHist(e, 6, top_k=32, alpha=a)),
    ]
    for name, make in protocols:
        for eps in (2.0, 4.0):
            for alpha in (0.05, None):
                recall = precision = 0.0
                false = 0
                for seed in range(runs):
                    data, freq = items(n, seed)
                    heavy = {h for h, f in freq.items() if f >= PHI}
                    held = {d.decode() for d in data}
                    found = set(make(eps, alpha).run(data, rng=1000 + seed).strings)
                    recall += len(found & heavy) / len(heavy)
                    precision += len(found & heavy) / len(found) if found else 1.0
                    false += len(found - held)
                label = "top-k" if alpha is None else f"alpha = {alpha:g}"
                rows.append((name, eps, label, recall / runs, precision / runs, false))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(f"n = {args.n}, {args.runs} runs, heavy: frequency >= {PHI}")
    print()
    print("| protocol | epsilon | rule | recall | precision | false |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, eps, label, rec, prec, false in study(args.n, args.runs):
        print(f"| {name} | {eps:g} | {label} | {rec:.2f} | {prec:.2f} | {false} |")


if __name__ == "__main__":
    main()
