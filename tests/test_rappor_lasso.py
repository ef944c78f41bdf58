"""RAPPOR's Lasso selection (deniable.oracles._lasso, Rappor.decode(method="lasso")): the
solver against the non-negative Lasso's KKT conditions and scipy's NNLS, its penalty
bounds and stopping rule; the decoder's two methods end to end, what they record, and bad
input."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from deniable.exceptions import ParameterError, ParameterTypeError
from deniable.mechanisms import InMemoryMemoStore
from deniable.oracles import Rappor, RapporClient
from deniable.oracles._lasso import lambda_max, nonnegative_lasso

PAPER = {"m": 128, "h": 2, "f": 0.5, "p": 0.5, "q": 0.75}


def _problem(seed: int, rows: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """A random problem whose answer has positive and zero coefficients; correlated
    columns (a shared component) make coordinate descent work for it."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(rows, k)) + 0.5 * rng.normal(size=(rows, 1))
    truth = np.where(rng.random(k) < 0.4, rng.exponential(2.0, k), 0.0)
    return a, a @ truth + rng.normal(scale=2.0, size=rows)


def _kkt_violation(a: np.ndarray, y: np.ndarray, b: np.ndarray, lam: float) -> float:
    """The largest violation of the KKT conditions of min (1/2)||y - A b||^2 + lam sum(b),
    b >= 0, recomputed from scratch: g_k = a_k'(y - A b) must equal lam where b_k > 0 and
    be at most lam where b_k = 0; relative to ||a_k|| ||y||."""
    g = a.T @ (y - a @ b)
    scale = np.linalg.norm(a, axis=0) * np.linalg.norm(y)
    scale = np.where(scale > 0, scale, 1.0)  # a zero column: g_k = 0
    on = np.abs(g - lam) / scale
    off = np.maximum(g - lam, 0.0) / scale
    return float(np.where(b > 0, on, off).max())


# --------------------------------------------------------------------------- the solver


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(("rows", "k"), [(60, 15), (40, 40), (25, 70)])
@pytest.mark.parametrize("fraction", [0.02, 0.2, 0.7])
def test_the_solution_satisfies_the_kkt_conditions(
    seed: int, rows: int, k: int, fraction: float
) -> None:
    """Over- and underdetermined problems, penalties from near 0 to near lam_max: every
    coefficient non-negative, the KKT conditions within 1e-7 (the stopping rule's tol is
    1e-9), and the objective no larger than at nearby feasible points."""
    a, y = _problem(seed, rows, k)
    lam = fraction * float((a.T @ y).max())
    fit = nonnegative_lasso(a, y, lam)
    assert fit.converged and fit.penalty == lam
    assert (fit.coef >= 0).all()
    assert 0 < np.count_nonzero(fit.coef) < k
    assert _kkt_violation(a, y, fit.coef, lam) < 1e-7

    def objective(b: np.ndarray) -> float:
        return 0.5 * float(np.sum((y - a @ b) ** 2)) + lam * float(b.sum())

    rng = np.random.default_rng(seed + 100)
    best = objective(fit.coef)
    for _ in range(20):
        other = np.maximum(fit.coef + rng.normal(scale=1e-3, size=k), 0.0)
        assert objective(other) >= best - 1e-9 * abs(best)


def test_the_kkt_check_detects_a_wrong_answer() -> None:
    """The check above can fail: the unconstrained least squares answer and the Lasso
    answer at another penalty both violate the conditions."""
    a, y = _problem(0, 60, 15)
    lam = 0.2 * float((a.T @ y).max())
    ls = np.linalg.lstsq(a, y, rcond=None)[0]
    assert _kkt_violation(a, y, ls, lam) > 1e-3
    assert _kkt_violation(a, y, nonnegative_lasso(a, y, 0.5 * lam).coef, lam) > 1e-3


@pytest.mark.parametrize("seed", range(8))
def test_zero_penalty_is_scipys_nnls(seed: int) -> None:
    """Full column rank (rows > K): the NNLS solution is unique, and coordinate descent at
    penalty 0 reaches it."""
    from scipy.optimize import nnls

    a, y = _problem(seed, 50, 12)
    assert np.linalg.matrix_rank(a) == 12
    want, _ = nnls(a, y)
    got = nonnegative_lasso(a, y, 0.0).coef
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-7 * max(1.0, float(want.max())))
    assert ((got > 0) == (want > 0)).all()


@pytest.mark.parametrize("seed", range(4))
def test_lambda_max_is_the_smallest_penalty_that_zeroes_every_coefficient(seed: int) -> None:
    a, y = _problem(seed, 30, 20)
    top = max(0.0, float(max(a[:, j] @ y for j in range(20))))  # column by column
    assert lambda_max(a, y) == pytest.approx(top, rel=1e-12)
    for lam in (top, 1.5 * top, 1e9):
        fit = nonnegative_lasso(a, y, lam)
        assert fit.converged and fit.sweeps == 0
        assert not fit.coef.any()
    assert nonnegative_lasso(a, y, 0.99 * top).coef.any()  # just below: one enters


def test_no_positive_correlation_gives_zeros_and_zero_columns_stay_zero() -> None:
    a = np.array([[1.0, 0.0, 2.0], [1.0, 0.0, 1.0], [0.0, 0.0, 1.0]])
    assert lambda_max(a, -np.ones(3)) == 0.0
    assert not nonnegative_lasso(a, -np.ones(3), 0.0).coef.any()
    fit = nonnegative_lasso(a, np.array([3.0, 2.0, 1.0]), 0.0)
    assert fit.coef[1] == 0.0
    assert _kkt_violation(a, np.array([3.0, 2.0, 1.0]), fit.coef, 0.0) < 1e-9


def test_too_few_sweeps_warn_and_return_the_iterate() -> None:
    """Correlated columns: one sweep cannot meet the stopping rule."""
    rng = np.random.default_rng(3)
    base = rng.normal(size=(50, 1))
    a = base + 0.3 * rng.normal(size=(50, 6))
    y = a @ np.arange(1.0, 7.0)
    with pytest.warns(RuntimeWarning, match=r"did not converge in max_sweeps = 1 sweeps"):
        fit = nonnegative_lasso(a, y, 0.0, max_sweeps=1)
    assert not fit.converged and fit.sweeps == 1 and (fit.coef >= 0).all()
    assert nonnegative_lasso(a, y, 0.0).converged


# --------------------------------------------------------------------------- decoding


def _zipf_tally(seed: int) -> tuple[Rappor, list[str], np.ndarray, object]:
    r = Rappor(cohorts=16, **PAPER)
    k = 50
    cands = [f"https://site{i}.example/" for i in range(k)]
    w = 1 / np.arange(1, k + 1) ** 1.1
    rng = np.random.default_rng(seed)
    idx = rng.choice(k, 100_000, p=w / w.sum())
    values = np.asarray(cands)[idx]
    rep = RapporClient(r, InMemoryMemoStore()).report(np.arange(values.size), values, rng=rng)
    truth = np.bincount(idx, minlength=k) / values.size
    absent = [f"https://absent{i}.example/" for i in range(50)]
    return r, cands + absent, truth, r.tally(rep)


def test_the_lasso_selects_few_absent_candidates_and_recovers_the_top_strings() -> None:
    """100,000 clients, a Zipf(1.1) population over 50 strings, 50 absent candidates.  An
    absent candidate enters the Lasso when its noise correlation exceeds sqrt(2 ln 100) =
    3.03 sd: probability about 1.2e-3 each, so 3 or more of 50 have probability below
    4e-5.  NNLS keeps about every other absent candidate (a positive correlation suffices),
    so it selects more than 10 of them (P(Binomial(50, 1/2) <= 10) < 1e-5).  Both report
    the 5 most frequent strings (4 SE clear) and no absent one (Bonferroni at 0.05)."""
    r, cands, truth, tally = _zipf_tally(21)
    lasso = r.decode(tally, cands, method="lasso")
    nnls = r.decode(tally, cands)
    assert lasso.selected[50:].sum() <= 2
    assert nnls.selected[50:].sum() > 10
    for est in (lasso, nnls):
        assert est.reported[:5].all() and not est.reported[50:].any()
        idx = np.flatnonzero(est.reported)
        assert (np.abs(est.values[idx] - truth[idx]) < 4 * est.se[idx]).all()
    assert lasso.method == "lasso" and lasso.penalty == pytest.approx(
        math.sqrt(2 * math.log(100)), rel=1e-12
    )
    assert nnls.method == "nnls" and nnls.penalty is None


def test_penalty_zero_is_nnls_and_a_huge_penalty_selects_nothing() -> None:
    """Lasso at penalty 0 on the (full-rank) weighted system is NNLS on rescaled columns:
    the same selection, so the same refit; a penalty above every column's correlation
    selects and reports nothing."""
    r, cands, _, tally = _zipf_tally(22)
    nnls = r.decode(tally, cands, method="nnls")
    zero = r.decode(tally, cands, method="lasso", penalty=0)
    np.testing.assert_array_equal(zero.selected, nnls.selected)
    np.testing.assert_allclose(zero.values, nnls.values, rtol=1e-9, atol=1e-12)
    none = r.decode(tally, cands, method="lasso", penalty=1e6)
    assert not none.selected.any() and not none.reported.any()
    assert (none.values == 0).all() and (none.p_values == 1).all()
    assert "(0 of 100 selected)" in none.table().notes[0]
    assert none.penalty == 1e6
    # a larger penalty never selects more here (nested supports on this problem)
    counts = [
        int(r.decode(tally, cands, method="lasso", penalty=lam).selected.sum())
        for lam in (0.0, 1.0, 3.0, 10.0, 100.0)
    ]
    assert counts == sorted(counts, reverse=True) and counts[0] > counts[-1]


def test_the_method_and_penalty_are_recorded() -> None:
    r = Rappor(m=32, h=2, cohorts=4, **{k: PAPER[k] for k in ("f", "p", "q")})
    values = ["a"] * 3000 + ["b"] * 1000
    rep = RapporClient(r, InMemoryMemoStore()).report(np.arange(4000), values, rng=4)
    est = r.decode(r.tally(rep), ["a", "b", "c"], method="lasso")
    text = str(est.table())
    assert "non-negative Lasso, penalty 1.482 = sqrt(2 ln K)" in text
    assert "refit by weighted least squares" in text
    data = json.loads(json.dumps(est.to_dict()))
    assert data["method"] == "lasso"
    assert data["penalty"] == pytest.approx(math.sqrt(2 * math.log(3)), rel=1e-12)
    assert [c["selected"] for c in data["candidates"]] == est.selected.tolist()
    own = r.decode(r.tally(rep), ["a", "b", "c"], method="lasso", penalty=2.5)
    assert "penalty 2.5 noise sd" in str(own.table()) and own.to_dict()["penalty"] == 2.5
    plain = r.decode(r.tally(rep), ["a", "b", "c"]).to_dict()
    assert plain["method"] == "nnls" and plain["penalty"] is None
    assert "non-negative least squares" in str(r.decode(r.tally(rep), ["a", "b", "c"]).table())


LASSO = {"method": "lasso"}
PE, PTE = ParameterError, ParameterTypeError


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"method": "lars"}, PE, r"`method` must be one of 'nnls', 'lasso', got 'lars'"),
        ({"method": 1}, PE, r"`method` must be one of 'nnls', 'lasso', got 1"),
        ({**LASSO, "penalty": -1}, PE, r"`penalty` must be in \[0, inf\), got -1"),
        ({**LASSO, "penalty": math.inf}, PE, r"`penalty` must be in \[0, inf\), got inf"),
        ({**LASSO, "penalty": math.nan}, PE, r"`penalty` must be a number, got nan"),
        ({**LASSO, "penalty": "3"}, PTE, r"`penalty` must be a real number, got str '3'"),
        ({"penalty": 3.0}, PE,
         r"`penalty` applies to method='lasso' only, got penalty = 3.0 with method = 'nnls'"),
        ({"alpha": 0}, PE, r"`alpha` must be in \(0, 1\), got 0"),
        ({**LASSO, "alpha": 1.0}, PE, r"`alpha` must be in \(0, 1\), got 1.0"),
    ],
)  # fmt: skip
def test_bad_method_penalty_and_alpha_name_the_parameter(
    kwargs: dict[str, object], error: type[Exception], match: str
) -> None:
    r = Rappor(m=16, h=2, cohorts=2, f=0.5, p=0.5, q=0.75)
    tally = r.tally(RapporClient(r, InMemoryMemoStore()).report([1, 2], ["a", "b"], rng=1))
    with pytest.raises(error, match=match):
        r.decode(tally, ["a", "b"], **kwargs)  # type: ignore[arg-type]


def test_the_default_penalty_screens_more_loosely_than_the_report_threshold() -> None:
    """The documented claim: sqrt(2 ln K) < z(alpha / K) for alpha <= 0.05, K <= 10**9."""
    from scipy.stats import norm

    from deniable.oracles._rappor_decode import default_penalty

    ks = np.unique(np.round(np.logspace(0, 9, 2000)).astype(np.int64))
    z = norm.isf(0.05 / ks)
    assert all(default_penalty(int(k)) < zk for k, zk in zip(ks, z, strict=True))
    # the universal threshold sqrt(2 ln K) (Donoho & Johnstone 1994), in closed form
    assert default_penalty(1) == 0.0
    assert default_penalty(100) == pytest.approx(math.sqrt(2 * math.log(100)), rel=1e-15)
