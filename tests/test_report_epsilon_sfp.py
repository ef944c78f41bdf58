"""What one SFP report costs a stream (oracles.report_epsilon): the two sketches' exact
epsilons added, ``eps/2`` each at the default split, checked by enumerating every report
``(position, fragment report, whole-string report)`` of a tiny SFP over every string."""

from __future__ import annotations

import hashlib
import itertools
import math

import numpy as np
import pytest

from deniable.oracles import SFP, report_epsilon


def _hcms_log_channel(sketch: object, strings: list[str]) -> np.ndarray:
    """``log P(report | string)`` of an HCMS over its ``2 k m`` reports ``(j, l, b)``, from
    the implemented flip probability (the threshold over ``2**53``)."""
    k, m = sketch.k, sketch.m  # type: ignore[attr-defined]
    f = sketch.flip_threshold / 2**53  # type: ignore[attr-defined]
    cols = sketch.columns(strings)  # type: ignore[attr-defined]
    j, coef, b = np.meshgrid(np.arange(k), np.arange(m), [0, 1], indexing="ij")
    out = []
    for c in cols:
        sign = np.array([bin(int(x)).count("1") % 2 for x in (coef & c[j]).ravel()])
        out.append(np.log(1 / (k * m)) + np.where(sign != b.ravel(), np.log(f), np.log(1 - f)))
    return np.array(out)


def _record(value: str, pos: int, positions: int) -> str:
    """The record "l:p:i.j" of docs/specs.md: alphabet "ab" (a = 0, b = 1, padding 2), one
    puzzle bit (the top bit of SHA-256("deniable.sfp/1" || 0x00 || s))."""
    symbols = ["ab".index(c) for c in value] + [2] * (2 * positions - len(value))
    p = hashlib.sha256(b"deniable.sfp/1\x00" + value.encode()).digest()[0] >> 7
    return f"{pos}:{p}:{symbols[2 * pos]}.{symbols[2 * pos + 1]}"


@pytest.mark.parametrize("share", [0.5, 0.25])
def test_an_sfp_reports_epsilon_is_both_halves_added_by_enumeration(share: float) -> None:
    sfp = SFP(epsilon=2.0, max_length=4, alphabet="ab", puzzle_bits=1, k=2, m=8,
              fragment_share=share)  # fmt: skip
    strings = ["".join(t) for n in range(1, 5) for t in itertools.product("ab", repeat=n)]
    word = _hcms_log_channel(sfp.word_sketch, strings)  # (strings, 2 k m)
    per_position = []
    for pos in range(sfp.positions):
        records = [_record(s, pos, sfp.positions) for s in strings]
        frag = _hcms_log_channel(sfp.fragment_sketch, records)
        # every report (pos, u, w): log(1 / P) + log P_f(u | record) + log P_w(w | string)
        joint = np.log(1 / sfp.positions) + frag[:, :, None] + word[:, None, :]
        per_position.append(joint.reshape(len(strings), -1))
    logs = np.concatenate(per_position, axis=1)
    enumerated = float(np.max(logs.max(axis=0) - logs.min(axis=0)))
    # the closed form: each HCMS half ln((1 - f) / f), f = 1 / (1 + e^eps_half)
    halves = (2.0 * share, 2.0 * (1 - share))
    closed = sum(math.log((1 - f) / f) for f in (1 / (1 + math.exp(e)) for e in halves))
    assert report_epsilon(sfp) == pytest.approx(closed, rel=1e-12)
    assert report_epsilon(sfp) == pytest.approx(2.0, rel=1e-12)  # eps/2 + eps/2 at share 1/2
    assert enumerated <= report_epsilon(sfp) * (1 + 1e-12)  # never under-charged
    assert enumerated == pytest.approx(report_epsilon(sfp), rel=1e-9)  # and exact


def test_the_charge_is_the_classs_own_and_the_stated_per_device_epsilon() -> None:
    sfp = SFP(epsilon=3.0, max_length=3, alphabet="xyz", puzzle_bits=2, k=4, m=16)
    assert report_epsilon(sfp) == sfp.fragment_epsilon + sfp.word_epsilon
    assert report_epsilon(sfp) == sfp.epsilon_per_device <= sfp.epsilon
