"""``oracles.report_epsilon`` of PEM and TreeHist, derived by enumerating every report of a
tiny protocol: one report is ``(group, A, y)`` of the device rule (docs/specs.md), and its
largest likelihood ratio between two strings is the OLH epsilon ``ln(p' / q')``, whatever
the number of groups."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from deniable.oracles import PEM, TreeHist, heavy_spec, report_epsilon


def _prefix(s: int, bits: int) -> int:
    """The top ``bits`` bits of the one byte ``s``."""
    return s >> (8 - bits)


def _largest_log_ratio(protocol: Any) -> float:
    """``max over reports and string pairs of ln P(report | x) / P(report | x')`` with every
    report enumerated: each group (probability ``1 / G`` whatever the string), every row
    matrix ``A`` of ``l`` rows of the group's bits, every bucket ``y``; the implemented
    keep probability ``p = keep / 2**53``."""
    spec = heavy_spec(protocol)
    g, l_rows = spec["constants"]["buckets"], spec["constants"]["rows"]
    p = spec["constants"]["keep"] / 2**53
    strings = np.arange(1, 128)  # every one-byte string (ASCII, no NUL)
    best = 0.0
    parity = np.array([bin(i).count("1") % 2 for i in range(256)], dtype=np.int64)
    for bits in spec["levels"]:
        x = _prefix(strings, bits)
        one = parity[np.arange(1 << bits)[:, None] & x[None, :]]  # (rows a, strings): a . x
        h = one  # the bucket A x of every matrix A (a row of h) and string, row by row
        for r in range(1, l_rows):
            h = (h[:, None, :] | (one[None, :, :] << r)).reshape(-1, x.size)
        for y in range(g):
            # P(report | x) = P(group) P(A) (p' if y = A x else q'): the first two equal
            prob = np.where(h == y, p + (1 - p) / g, (1 - p) / g)
            best = max(best, float(np.log(prob.max(axis=1) / prob.min(axis=1)).max()))
    return best


@pytest.mark.parametrize(
    "protocol",
    [TreeHist(epsilon=1.0, max_bytes=1, g=2), TreeHist(epsilon=2.0, max_bytes=1, g=4),
     PEM(epsilon=1.5, max_bytes=1, start_bits=3, step_bits=2, g=4)],
    ids=lambda p: p.key,
)  # fmt: skip
def test_a_heavy_reports_epsilon_is_the_olh_epsilon_by_enumeration(protocol: Any) -> None:
    got = _largest_log_ratio(protocol)
    charge = report_epsilon(protocol)
    g, p = protocol.base.g, protocol.base.p_truthful
    # the closed form: ln(p' / q') = ln(1 + g p / (1 - p)), the stated epsilon
    assert charge == pytest.approx(math.log1p(g * p / (1 - p)), rel=1e-12)
    assert charge == pytest.approx(protocol.epsilon, rel=1e-12)
    # the enumerated channel reaches the charge (tight) and never exceeds it
    assert got <= charge * (1 + 1e-12)
    assert got >= charge * (1 - 1e-9)
    assert got == pytest.approx(protocol.implemented_epsilon, rel=1e-12)


def test_the_charge_does_not_grow_with_the_groups() -> None:
    short = TreeHist(epsilon=2.0, max_bytes=1)
    long = TreeHist(epsilon=2.0, max_bytes=8)
    assert len(long.levels) == 8 * len(short.levels)
    assert report_epsilon(long) == report_epsilon(short) == short.epsilon_per_device
