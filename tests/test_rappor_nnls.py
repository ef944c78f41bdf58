"""RAPPOR's NNLS selection on the ``K x K`` normal-equations form
(``deniable.oracles._rappor_nnls``) against ``scipy.optimize.nnls`` on the full design.

* full column rank (seeded RAPPOR-like sparse designs and dense Gaussian ones): the reduced
  answer exists, satisfies the KKT conditions of the full problem (checked here from ``A``
  and ``y`` directly), selects the same columns and equals the full answer to ``1e3 eps
  cond(A'A) max b`` (both are the one minimizer computed two ways: they differ by rounding,
  about ``cond eps`` relative);
* rank-deficient designs (a repeated column, fewer rows than columns, a column within
  ``1e-9`` of another) and a degenerate coefficient (zero with a zero gradient): no reduced
  answer, and the selection is the full solver's, bit for bit;
* ``Rappor.decode``: the same estimates, standard errors, p-values and intervals as with the
  full solver, on a case where the reduced form is used.
"""

from __future__ import annotations

import numpy as np
import pytest

from deniable.oracles import Rappor, RapporReports
from deniable.oracles import _rappor_decode as rd
from deniable.oracles import _rappor_nnls as rn

EPS = float(np.finfo(np.float64).eps)


def rappor_like(seed: int, cohorts: int = 8, m: int = 32, k: int = 60, h: int = 2) -> tuple:
    """A weighted RAPPOR design (``h`` bits per column and cohort, rows scaled by a cohort
    size and a positive weight) and ``y = A b + noise`` with a few positive ``b``."""
    gen = np.random.default_rng(seed)
    x = np.zeros((cohorts, m, k))
    for c in range(cohorts):
        for j in range(k):
            x[c, gen.choice(m, size=h, replace=False), j] = 1.0
    a = (x * gen.integers(50, 200, cohorts)[:, None, None]).reshape(-1, k)
    a *= gen.uniform(0.01, 0.05, a.shape[0])[:, None]
    b = np.zeros(k)
    b[gen.choice(k, size=6, replace=False)] = gen.uniform(0.05, 0.3, 6)
    return a, a @ b + gen.normal(size=a.shape[0])


def dense(seed: int, rows: int = 120, k: int = 40) -> tuple:
    gen = np.random.default_rng(seed)
    a = gen.normal(size=(rows, k))
    b = np.maximum(gen.normal(size=k), 0.0)
    return a, a @ b + gen.normal(size=rows)


def assert_kkt(a: np.ndarray, y: np.ndarray, coef: np.ndarray, tol: float) -> None:
    """``b >= 0``; the gradient ``A'(A b - y)`` is 0 where ``b > 0`` and ``>= 0`` where
    ``b = 0`` (to ``tol`` relative to ``max |A'y|``): the minimizer's conditions."""
    grad = a.T @ (a @ coef - y)
    scale = float(np.abs(a.T @ y).max())
    assert (coef >= 0).all()
    assert np.abs(grad[coef > 0]).max(initial=0.0) <= tol * scale
    assert grad[coef == 0].min(initial=0.0) >= -tol * scale


FULL_RANK = [(rappor_like, s) for s in range(6)] + [(dense, s) for s in range(6)]


@pytest.mark.parametrize("make, seed", FULL_RANK)
def test_the_reduced_answer_is_the_full_one_at_full_rank(make, seed: int) -> None:
    a, y = make(seed)
    full, reduced = rn.nnls_full(a, y), rn.nnls_reduced(a, y)
    assert reduced is not None
    cond = float(np.linalg.cond(a.T @ a))
    assert_kkt(a, y, reduced, 1e3 * EPS * cond)
    assert np.array_equal(reduced > 0, full > 0)
    assert 0 < (full > 0).sum() < a.shape[1]  # both kinds of coefficient are exercised
    assert np.abs(reduced - full).max() <= 1e3 * EPS * cond * full.max()
    assert np.array_equal(rn.nnls_coefficients(a, y), reduced)


def _repeated(seed: int) -> tuple:
    a, y = rappor_like(seed)
    a[:, 1] = a[:, 0]  # a Bloom filter equal to another's in every cohort
    return a, y


def _short(seed: int) -> tuple:
    return rappor_like(seed, cohorts=1, m=32, k=60)  # 32 rows, 60 columns


def _nearly(seed: int) -> tuple:
    a, y = rappor_like(seed)
    a[:, 1] = a[:, 0] * (1 + 1e-9 * np.random.default_rng(seed).normal(size=a.shape[0]))
    return a, y


@pytest.mark.parametrize("make", [_repeated, _short, _nearly])
@pytest.mark.parametrize("seed", range(3))
def test_a_rank_deficient_design_is_solved_in_full(make, seed: int) -> None:
    # the minimizer is not unique (or not numerically): the old solver decides, bit for bit
    a, y = make(seed)
    assert rn.nnls_reduced(a, y) is None
    assert np.array_equal(rn.nnls_coefficients(a, y), rn.nnls_full(a, y))


def test_a_degenerate_coefficient_is_solved_in_full() -> None:
    # A = I: b = max(y, 0); y_1 = 0 gives b_1 = 0 with gradient 0, at the edge of rounding
    a = np.vstack([np.eye(3), np.zeros((2, 3))])
    y = np.array([1.0, 0.0, -1.0, 0.0, 0.0])
    assert rn.nnls_reduced(a, y) is None
    assert rn.nnls_coefficients(a, y).tolist() == [1.0, 0.0, 0.0]
    y[1] = 0.5  # clear of 0: the reduced form answers, b = max(y, 0)
    assert rn.nnls_reduced(a, y) == pytest.approx([1.0, 0.5, 0.0], abs=1e-15)


def test_rappor_decode_is_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    r = Rappor(m=32, h=2, cohorts=8, f=0.5, p=0.5, q=0.75)
    gen = np.random.default_rng(17)
    cand = [f"w{i}" for i in range(60)]  # 256 rows, 60 columns: full rank
    values = np.array(cand)[gen.choice(6, size=20_000, p=[0.3, 0.2, 0.2, 0.1, 0.1, 0.1])]
    cohorts = gen.integers(0, r.cohorts, values.size)
    bloom = r.bloom(values, cohorts)
    tally = r.tally(RapporReports(cohorts, r.instantaneous(r.permanent(bloom, rng=gen), rng=gen)))
    seen: list[bool] = []

    def spy(a: np.ndarray, y: np.ndarray) -> np.ndarray:
        seen.append(rn.nnls_reduced(a, y) is not None)
        return rn.nnls_coefficients(a, y)

    monkeypatch.setattr(rd, "nnls_coefficients", spy)
    new = r.decode(tally, cand)
    monkeypatch.setattr(rd, "nnls_coefficients", rn.nnls_full)
    old = r.decode(tally, cand)
    assert seen == [True]
    assert new.reported.sum() >= 3
    assert np.array_equal(new.selected, old.selected)
    assert np.array_equal(new.reported, old.reported)
    for name in ("values", "se", "p_values"):
        assert np.array_equal(getattr(new, name), getattr(old, name), equal_nan=True), name
    for x, z in zip(new.ci(0.95), old.ci(0.95), strict=True):
        assert np.array_equal(x, z, equal_nan=True)
    assert new.scale == old.scale
