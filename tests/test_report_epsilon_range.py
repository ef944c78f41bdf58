"""``oracles.report_epsilon`` of the range mechanisms and Square Wave, derived by
enumerating every report of tiny ones from their device specs (docs/specs.md): a range
report is ``(level, y)`` with the level uniform whatever the value, then the level oracle's
report of the value's node (HaarHRR: its bit XOR the value's side); its largest likelihood
ratio between two values is the largest level oracle's epsilon.  Square Wave's cell has
weight ``alpha`` inside the window and ``beta`` outside, mixed over two starts."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from deniable.oracles import (
    HaarHRR,
    HierarchicalHistogram,
    SquareWave,
    range_spec,
    report_epsilon,
    square_wave_spec,
)


def _level_channel(spec: dict[str, Any], k: int) -> np.ndarray:
    """``P[y | node]`` (reports by rows) of one level oracle, from its spec alone."""
    if spec["schema"] == "deniable.question/1":  # keep-or-forced, uniform forcing
        keep = spec["thresholds"]["keep"] / 2**53
        return keep * np.eye(k) + (1 - keep) / k * np.ones((k, k))
    rows, flip = spec["constants"]["rows"], spec["constants"]["flip"] / 2**53
    out = np.zeros((2 * rows, k))
    for j in range(rows):
        for v in range(k):
            bit = bin(j & v).count("1") & 1
            out[2 * j + bit, v] = (1 - flip) / rows
            out[2 * j + (1 - bit), v] = flip / rows
    return out


def _range_channel(mechanism: Any) -> np.ndarray:
    """``P[(level, y) | x]`` for every report and value ``0..D-1``."""
    spec = range_spec(mechanism)
    c = spec["constants"]
    h, b, d = c["height"], c["branching"], c["domain"]
    blocks = []
    for level, level_spec in enumerate(spec["levels"]):
        k = max(2, 1 << level) if spec["mechanism"] == "haar-hrr" else b ** (level + 1)
        chan = _level_channel(level_spec, k)
        block = np.zeros((chan.shape[0], d))
        for x in range(d):
            if spec["mechanism"] == "haar-hrr":
                node, side = x >> (h - level), (x >> (h - level - 1)) & 1
                col = chan[:, node].reshape(-1, 2)
                block[:, x] = (col[:, ::-1] if side else col).reshape(-1)  # the bit flipped
            else:
                block[:, x] = chan[:, x // b ** (h - 1 - level)]
        blocks.append(block / h)
    return np.vstack(blocks)


@pytest.mark.parametrize(
    "mechanism",
    [HierarchicalHistogram(4, 2, 1.0, oracle="grr"), HierarchicalHistogram(9, 3, 2.0, oracle="grr"),
     HierarchicalHistogram(8, 2, 1.5, oracle="hadamard"), HaarHRR(4, 1.0), HaarHRR(8, 2.0)],
    ids=lambda m: m.key[:40],
)  # fmt: skip
def test_a_range_reports_epsilon_is_its_largest_level_epsilon_by_enumeration(
    mechanism: Any,
) -> None:
    chan = _range_channel(mechanism)
    assert np.allclose(chan.sum(axis=0), 1.0)  # a channel: every value's reports sum to 1
    got = float(np.log(chan.max(axis=1) / chan.min(axis=1)).max())
    charge = report_epsilon(mechanism)
    assert charge == max(o.epsilon for o in mechanism.levels)
    # the enumerated channel never exceeds the charge and reaches the implemented epsilon
    assert got <= charge * (1 + 1e-12)
    assert got == pytest.approx(max(o.implemented_epsilon for o in mechanism.levels), rel=1e-9)


@pytest.mark.parametrize("mechanism", [SquareWave(1.0), SquareWave(3.0, lower=-2.0, upper=6.0)])
def test_square_waves_report_epsilon_by_enumeration(mechanism: SquareWave) -> None:
    spec = square_wave_spec(mechanism)
    c = spec["constants"]
    alpha, beta, w, grid = int(c["alpha"]), int(c["beta"]), c["window"], c["grid"]
    cells = c["cells"]

    def dist(v: Fraction) -> np.ndarray:  # P[cell | v], v in [0, 1], from the spec's rule
        whole = math.floor(v * grid)
        up = math.floor((v * grid - whole) * 2**53) / 2**53
        out = np.zeros(cells)
        for s, weight in ((whole, 1 - up), (whole + 1, up)):
            if weight:
                probs = np.full(cells, beta / 2**64)
                probs[s : s + w] = alpha / 2**64
                out += weight * probs
        return out

    table = np.array([dist(Fraction(i, 16)) for i in range(17)]).T  # cells by values
    assert np.allclose(table.sum(axis=0), 1.0)
    got = float(np.log(table.max(axis=1) / table.min(axis=1)).max())
    assert got == pytest.approx(math.log(alpha / beta), rel=1e-12)
    assert report_epsilon(mechanism) == mechanism.epsilon
    assert got <= report_epsilon(mechanism) * (1 + 1e-12)
