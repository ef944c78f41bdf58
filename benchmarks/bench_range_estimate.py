"""Seconds of one range-mechanism estimate from a tally of a million reports (OLH levels for
the hierarchical histogram, ``B = 2``), the peak resident size of the process, and a digest
of every node's share (the same digest: the same floats).  The tally's support counts are
drawn, not decoded from reports: tallying OLH reports is O(n k) and takes far longer at
``D = 2^24`` than the estimate.  Run one estimate a process, with the tree's src first on
PYTHONPATH, alternating two trees to compare them in one sitting::

    python benchmarks/bench_range_estimate.py hh 24      # or: haar 24
"""

from __future__ import annotations

import hashlib
import resource
import sys
import time
from typing import Any

import numpy as np

from deniable.designs import Tally
from deniable.oracles import HaarHRR, HierarchicalHistogram

REPORTS = 1_000_000


def drawn_tally(mech: Any, seed: int = 1) -> Tally:
    """A tally of ``REPORTS`` reports split evenly by level, support counts drawn."""
    rng = np.random.default_rng(seed)
    parts = []
    for o in mech.levels:
        n = REPORTS // len(mech.levels)
        if int(o._tally_cells) == int(o.k):  # k-ary randomized response: a count a report
            parts.append(rng.multinomial(n, np.full(o.k, 1 / o.k)))
        else:
            parts.append(np.append(rng.binomial(n, float(o.q), size=o.k), n))
    return Tally(np.concatenate(parts).astype(np.int64), mechanism=mech.key)


def main() -> None:
    """Time ``estimate`` once for ``hh|haar`` and ``h`` (``D = 2^h``) from the command line."""
    which, height = sys.argv[1], int(sys.argv[2])
    domain = 1 << height
    mech: Any = (
        HierarchicalHistogram(domain, 2, 1.0, oracle="olh")
        if which == "hh"
        else HaarHRR(domain, 1.0)
    )
    tally = drawn_tally(mech)
    t0 = time.perf_counter()
    est = mech.estimate(tally)
    seconds = time.perf_counter() - t0
    digest = hashlib.sha256(b"".join(x.tobytes() for x in est.nodes)).hexdigest()[:16]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    print(f"{which} D=2^{height}: estimate {seconds:.2f} s, peak {peak:.2f} GB, nodes {digest}")


if __name__ == "__main__":
    main()
