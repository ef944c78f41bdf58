"""Seeded simulation: one synthetic survey (:func:`simulate`), or a Monte Carlo study of an
estimator's bias, standard error, interval coverage and power (:func:`simulation_study`).

A simulated survey can mix in two things real surveys have: **groups** with different
prevalences (to study grouped estimates), and **non-compliance**: a share ``s`` of
respondents who say "no" whatever the randomizer tells them (self-protective no-sayers;
see e.g. Clark & Desharnais 1998, Ostapczuk et al. 2009).  With a binary design whose
compliant respondents say "yes" with probability ``lambda_c = P0 + pi (P1 - P0)``,

    lambda = (1 - s) lambda_c + s * 0

so the moment estimator ``(lambda_hat - P0) / (P1 - P0)`` has expectation
``pi - s lambda_c / (P1 - P0)``: its bias ``-s lambda_c / (P1 - P0)`` is downward when
``P1 > P0`` (upward for a design with ``P1 < P0``, e.g. Warner with ``p < 1/2``).
"""

from __future__ import annotations

import math
import numbers
import secrets
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import stats

from deniable import _validation as v
from deniable._estimate import Estimate, normal_quantile
from deniable.designs import BinaryDesign, Categorical, CategoricalEstimate, Design
from deniable.exceptions import ParameterError, ParameterTypeError
from deniable.randomness import resolve_rng

__all__ = ["Simulation", "SimulationStudy", "simulate", "simulation_study"]

#: Replications drawn per block by :func:`simulation_study` (results depend on the seed only).
STUDY_BLOCK = 8192


@dataclass(frozen=True)
class Simulation:
    """One simulated survey: true answers, randomized reports and the estimate from them.

    ``truth`` and ``complied`` exist only because this is a simulation: a real collector
    never sees them.  ``groups`` holds each respondent's group label (``None`` without
    groups); ``complied[i]`` is ``False`` for a respondent who said "no" regardless of the
    randomizer (``None`` when ``non_compliance`` is 0, i.e. everyone complied).
    """

    design: Design
    truth: npt.NDArray[np.integer[Any]] = field(repr=False)
    reports: npt.NDArray[np.integer[Any]] = field(repr=False)
    estimate: Estimate | CategoricalEstimate
    seed: int | None
    groups: npt.NDArray[Any] | None = field(default=None, repr=False)
    complied: npt.NDArray[np.bool_] | None = field(default=None, repr=False)
    non_compliance: float = 0.0

    @property
    def n(self) -> int:
        return int(self.truth.size)

    @property
    def true_share(self) -> float | npt.NDArray[np.float64]:
        """The realised share of carriers (of each category for categorical designs)."""
        if isinstance(self.design, Categorical):
            return np.bincount(self.truth, minlength=self.design.k) / self.n
        return float(np.count_nonzero(self.truth)) / self.n

    def group_labels(self) -> list[Any]:
        """The distinct group labels, sorted (empty without groups)."""
        if self.groups is None:
            return []
        return [x.item() if isinstance(x, np.generic) else x for x in np.unique(self.groups)]

    def group_estimates(self) -> dict[Any, Estimate]:
        """The estimate from each group's reports alone, by group label."""
        if self.groups is None:
            raise ParameterError("`groups`: this simulation has no groups (simulate(groups=...)).")
        design = self.design
        assert isinstance(design, BinaryDesign)
        return {g: design.estimate(self.reports[self.groups == g]) for g in self.group_labels()}

    def to_frame(self, *, truth: bool = False) -> Any:
        """The reports (and groups) as a pandas DataFrame, one row per respondent.

        Columns ``report`` and, with groups, ``group``.  ``truth=True`` adds ``truth`` and
        ``complied``, which exist only in a simulation.  Needs ``pip install deniable[data]``.
        """
        from deniable.analysis import require_pandas

        pd = require_pandas()
        cols: dict[str, Any] = {}
        if self.groups is not None:
            cols["group"] = self.groups
        cols["report"] = self.reports
        if truth:
            cols["truth"] = self.truth
            cols["complied"] = (
                np.ones(self.n, dtype=bool) if self.complied is None else self.complied
            )
        return pd.DataFrame(cols)


def _group_assignment(
    gen: np.random.Generator, n: int, groups: Any
) -> tuple[npt.NDArray[Any], list[Any], npt.NDArray[np.intp]]:
    """``(labels per respondent, distinct labels, code of each respondent)``."""
    if isinstance(groups, Mapping):
        labels = list(groups)
        if not labels:
            raise ParameterError("`groups` must name at least one group, got an empty mapping.")
        shares = np.array(
            [v.probability(f"groups[{g!r}]", s) for g, s in groups.items()], dtype=float
        )
        if abs(shares.sum() - 1) > 1e-9:
            raise ParameterError(f"`groups` shares must sum to 1, got {shares.sum():.12g}.")
        kinds = {str if isinstance(x, str) else numbers.Real for x in labels}
        if len(kinds) != 1 or not all(isinstance(x, str | numbers.Real) for x in labels):
            raise ParameterTypeError(
                f"`groups` labels must be all numbers or all text, got {labels!r}."
            )
        table = np.asarray(labels)
        codes = gen.choice(len(labels), size=n, p=shares / shares.sum())
        per = table[codes]
        return per, labels, codes
    if isinstance(groups, str | bytes) or not hasattr(groups, "__len__"):
        raise ParameterTypeError(
            "`groups` must be a mapping {label: share} or a sequence of n labels, got "
            f"{type(groups).__name__} {groups!r}."
        )
    per = np.asarray(groups)
    if per.ndim != 1 or per.size != n:
        raise ParameterError(
            f"`groups` must hold one label per respondent (n = {n}), got shape {per.shape}."
        )
    try:
        uniq, codes = np.unique(per, return_inverse=True)
    except TypeError:
        raise ParameterTypeError(
            "`groups` labels must be sortable (all numbers or all text)."
        ) from None
    return per, [x.item() if isinstance(x, np.generic) else x for x in uniq], codes


def _prevalence_per_respondent(
    prevalence: Any, labels: list[Any], codes: npt.NDArray[np.intp]
) -> npt.NDArray[np.float64] | float:
    if not isinstance(prevalence, Mapping):
        return v.probability("prevalence", prevalence)
    missing = [g for g in labels if g not in prevalence]
    if missing:
        raise ParameterError(
            f"`prevalence` must give a prevalence for every group {labels!r}; "
            f"missing {', '.join(repr(g) for g in missing)}."
        )
    table = np.array([v.probability(f"prevalence[{g!r}]", prevalence[g]) for g in labels])
    return table[codes]


def simulate(
    design: Design,
    n: int,
    prevalence: float | npt.ArrayLike | Mapping[Hashable, float],
    *,
    seed: int | None = None,
    groups: Mapping[Hashable, float] | npt.ArrayLike | None = None,
    non_compliance: float = 0.0,
) -> Simulation:
    """Draw ``n`` true answers (iid with ``prevalence``), randomize them, and estimate.

    ``prevalence`` is a probability for binary designs and a probability vector of length
    ``k`` for :class:`~deniable.Categorical`.  One seed drives both the population and the
    randomization (``seed=None`` draws fresh entropy; the result is then not reproducible).

    Binary designs only:

    * ``groups``: a mapping ``{label: share}`` (each respondent falls in a group at random
      with these probabilities) or a sequence of ``n`` labels.  ``prevalence`` may then be a
      mapping ``{label: prevalence}``; a mapping ``prevalence`` without ``groups`` puts the
      respondents in its groups with equal shares.
    * ``non_compliance``: each respondent independently, with this probability, says "no"
      whatever the randomizer says (an "always no" self-protective respondent).  The expected
      estimate is then ``pi - s lambda_c / (P1 - P0)`` (see the module docstring).

    Draws happen in a fixed order (groups, truths, randomization, compliance), so adding
    neither groups nor non-compliance reproduces earlier results for the same seed.

    >>> from deniable import TwoCoin
    >>> sim = simulate(TwoCoin(), 10_000, 0.3, seed=1)
    >>> abs(sim.estimate.value - sim.true_share) < 4 * sim.estimate.se
    True
    >>> sim = simulate(TwoCoin(), 10_000, {"a": 0.1, "b": 0.5}, seed=1)
    >>> sim.group_labels(), sorted(round(e.value, 1) for e in sim.group_estimates().values())
    (['a', 'b'], [0.1, 0.5])
    """
    n = v.integer("n", n, minimum=1)
    s = v.probability("non_compliance", non_compliance)
    gen = resolve_rng(np.random.SeedSequence().entropy if seed is None else seed)
    assert isinstance(gen, np.random.Generator)
    labels_per: npt.NDArray[Any] | None = None
    if isinstance(design, Categorical):
        if groups is not None or isinstance(prevalence, Mapping) or s > 0:
            raise ParameterError(
                "`groups` and `non_compliance` apply to designs with yes/no answers; "
                f"design {design.name!r} has k = {design.k} categories."
            )
        probs = np.asarray(prevalence, dtype=float)
        if probs.shape != (design.k,) or np.any(probs < 0) or abs(probs.sum() - 1) > 1e-9:
            raise ParameterError(
                f"`prevalence` must be a probability vector of length k = {design.k}, "
                f"got {prevalence!r}."
            )
        truth: npt.NDArray[np.integer[Any]] = gen.choice(design.k, size=n, p=probs)
    else:
        if groups is None and isinstance(prevalence, Mapping):
            groups = {g: 1 / len(prevalence) for g in prevalence}
        if groups is None:
            pi: npt.NDArray[np.float64] | float = v.probability("prevalence", prevalence)
        else:
            labels_per, labels, codes = _group_assignment(gen, n, groups)
            pi = _prevalence_per_respondent(prevalence, labels, codes)
        truth = (gen.random(n) < pi).view(np.uint8)
    reports = design.randomize(truth, rng=gen)
    complied: npt.NDArray[np.bool_] | None = None
    if s > 0:
        if design.n_reports != 2:
            raise ParameterError(
                f"`non_compliance` needs yes/no reports; design {design.name!r} has "
                f"{design.n_reports} report values."
            )
        complied = gen.random(n) >= s
        reports = np.where(complied, reports, 0).astype(reports.dtype)
    est = design.estimate(reports)  # type: ignore[attr-defined]
    return Simulation(design, truth, reports, est, seed, labels_per, complied, s)


# --------------------------------------------------------------------------- studies


@dataclass(frozen=True)
class SimulationStudy:
    """Monte Carlo properties of a binary design's moment estimator (see :func:`simulation_study`).

    All figures are against the population prevalence ``prevalence`` (the estimand under
    iid sampling).  ``mc_se_*`` are the Monte Carlo standard errors of the figures themselves.
    """

    design: BinaryDesign
    n: int
    prevalence: float
    replications: int
    seed: int
    non_compliance: float
    level: float
    method: str
    null: float | None
    expected_estimate: float
    true_se: float
    bias: float
    bias_bounded: float
    empirical_se: float
    mean_se: float
    rmse: float
    coverage_exact: float
    coverage_wald: float
    rejection_exact: float | None
    rejection_wald: float | None
    estimates: npt.NDArray[np.float64] = field(repr=False, compare=False)

    @property
    def expected_bias(self) -> float:
        """Closed-form bias ``-s lambda_c / (P1 - P0)`` (0 without non-compliance)."""
        return self.expected_estimate - self.prevalence

    @property
    def mc_se_bias(self) -> float:
        return self.empirical_se / math.sqrt(self.replications)

    def mc_se_coverage(self, coverage: float) -> float:
        """Binomial Monte Carlo SE of a coverage (or rejection) rate."""
        return math.sqrt(coverage * (1 - coverage) / self.replications)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON dict (infinite epsilon as ``"inf"``)."""
        eps = self.design.epsilon
        out: dict[str, Any] = {
            "design": self.design.name,
            "parameters": self.design.parameters(),
            "epsilon": eps if math.isfinite(eps) else "inf",
            "n": self.n,
            "prevalence": self.prevalence,
            "non_compliance": self.non_compliance,
            "replications": self.replications,
            "seed": self.seed,
            "level": self.level,
            "method": self.method,
            "expected_estimate": self.expected_estimate,
            "expected_bias": self.expected_bias,
            "true_se": self.true_se,
            "bias": self.bias,
            "mc_se_bias": self.mc_se_bias,
            "bias_bounded": self.bias_bounded,
            "empirical_se": self.empirical_se,
            "mean_se": self.mean_se,
            "rmse": self.rmse,
            "coverage_exact": self.coverage_exact,
            "coverage_wald": self.coverage_wald,
            "mc_se_coverage_exact": self.mc_se_coverage(self.coverage_exact),
        }
        if self.null is not None:
            out.update(
                null=self.null,
                rejection_exact=self.rejection_exact,
                rejection_wald=self.rejection_wald,
            )
        return out

    def table(self) -> str:
        """A plain-text summary."""
        eps = self.design.epsilon
        mc = self.mc_se_coverage
        rows = [
            ("design", f"{self.design!r}, ε = {'∞' if math.isinf(eps) else f'{eps:.4f}'}"),
            ("n, replications, seed", f"{self.n}, {self.replications}, {self.seed}"),
            ("prevalence, non-compliance", f"{self.prevalence:g}, {self.non_compliance:g}"),
            ("expected estimate (closed form)", f"{self.expected_estimate:.6f}"),
            ("bias (± MC SE)", f"{self.bias:+.6f} ± {self.mc_se_bias:.6f}"),
            ("empirical SE / true SE", f"{self.empirical_se:.6f} / {self.true_se:.6f}"),
            ("mean estimated SE (plug-in)", f"{self.mean_se:.6f}"),
            ("RMSE", f"{self.rmse:.6f}"),
            (
                f"coverage {self.level:.0%} exact / Wald",
                f"{self.coverage_exact:.4f} ± {mc(self.coverage_exact):.4f} / "
                f"{self.coverage_wald:.4f} ± {mc(self.coverage_wald):.4f}",
            ),
        ]
        if self.null is not None:
            assert self.rejection_exact is not None and self.rejection_wald is not None
            rows.append(
                (
                    f"rejects π = {self.null:g} (exact / Wald)",
                    f"{self.rejection_exact:.4f} / {self.rejection_wald:.4f}",
                )
            )
        width = max(len(k) for k, _ in rows)
        return "\n".join(f"{k.ljust(width)}  {val}" for k, val in rows)

    def __str__(self) -> str:
        return self.table()


def exact_bounds(
    yes: npt.NDArray[np.int64], n: int, level: float, p1: float, p0: float
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Vectorized Clopper-Pearson interval for ``lambda`` mapped through the design and clipped
    to [0, 1]: elementwise the same as ``design.estimate(yes=..., n=n).ci(level, "exact")``.
    Computed once per distinct ``yes``."""
    uniq, inverse = np.unique(yes, return_inverse=True)
    alpha = 1 - level
    with np.errstate(invalid="ignore"):
        lo_l = np.where(
            uniq == 0, 0.0, stats.beta.ppf(alpha / 2, np.maximum(uniq, 1), n - uniq + 1)
        )
        hi_l = np.where(
            uniq == n, 1.0, stats.beta.ppf(1 - alpha / 2, uniq + 1, np.maximum(n - uniq, 1))
        )
    slope = p1 - p0
    a, b = (lo_l - p0) / slope, (hi_l - p0) / slope
    lo, hi = np.clip(np.minimum(a, b), 0.0, 1.0), np.clip(np.maximum(a, b), 0.0, 1.0)
    return lo[inverse], hi[inverse]


def simulation_study(
    design: Design,
    n: int,
    prevalence: float,
    *,
    replications: int,
    seed: int | None = None,
    non_compliance: float = 0.0,
    level: float = 0.95,
    null: float | None = None,
    method: str = "binomial",
    progress: Callable[[int, int], None] | None = None,
) -> SimulationStudy:
    """Repeat a survey ``replications`` times and summarise the moment estimator.

    Reports: bias and bias of the bounded estimate, empirical SE, mean estimated (plug-in)
    SE, RMSE, coverage of the exact (Clopper-Pearson mapped) and Wald intervals at
    ``level``, and with ``null`` the rejection rate of ``H0: pi = null`` at ``1 - level``
    (exact: ``null`` outside the exact interval; Wald: ``|pi_hat - null| > z se``).

    ``method="binomial"`` (default) draws each survey's number of "yes" reports directly:
    respondents are iid, each says "yes" with probability
    ``lambda = (1 - s) (P0 + pi (P1 - P0))``, so the count is exactly ``Binomial(n, lambda)``
    and the moment estimator depends on the reports only through it.  (The randomizer
    realises ``P1``, ``P0`` to within ``2**-53``.)  ``method="respondents"`` runs
    :func:`simulate` for every replication instead: slower, the same distribution.
    ``progress(done, total)`` is called after each block of replications (after each
    replication with ``method="respondents"``).

    >>> from deniable import TwoCoin
    >>> st = simulation_study(TwoCoin(), 500, 0.3, replications=4000, seed=1)
    >>> abs(st.bias) < 4 * st.mc_se_bias, abs(st.coverage_exact - 0.95) < 0.02
    (True, True)
    """
    if not isinstance(design, BinaryDesign) or design.n_reports != 2:
        if not isinstance(design, Design):
            raise ParameterTypeError(
                f"`design` must be a deniable Design, got {type(design).__name__}."
            )
        raise ParameterError(
            f"`design` must have yes/no reports for simulation_study, got {design.name!r} "
            f"with {design.n_reports} report values."
        )
    n = v.integer("n", n, minimum=1)
    pi = v.probability("prevalence", prevalence)
    reps = v.integer("replications", replications, minimum=2)
    s = v.probability("non_compliance", non_compliance)
    lvl = v.level(level)
    pi0 = None if null is None else v.probability("null", null)
    v.choice("method", method, ("binomial", "respondents"))
    used_seed = secrets.randbelow(2**32) if seed is None else v.integer("seed", seed, minimum=0)
    gen = resolve_rng(used_seed)
    assert isinstance(gen, np.random.Generator)
    p1, p0 = design.p_yes_given_1, design.p_yes_given_0
    slope = p1 - p0
    lam_c = p0 + pi * slope
    lam = (1 - s) * lam_c
    yes = np.empty(reps, dtype=np.int64)
    for start in range(0, reps, STUDY_BLOCK):
        m = min(STUDY_BLOCK, reps - start)
        if method == "binomial":
            yes[start : start + m] = gen.binomial(n, lam, size=m)
        else:
            seeds = gen.integers(0, 2**63, size=m)
            for j, sd in enumerate(seeds):
                sim = simulate(design, n, pi, seed=int(sd), non_compliance=s)
                yes[start + j] = int(np.count_nonzero(sim.reports))
                if progress is not None and j + 1 < m:
                    progress(start + j + 1, reps)
        if progress is not None:
            progress(start + m, reps)
    lam_hat = yes / n
    est = (lam_hat - p0) / slope
    se = np.sqrt(lam_hat * (1 - lam_hat) / n) / abs(slope)
    z = normal_quantile(lvl)
    lo, hi = exact_bounds(yes, n, lvl, p1, p0)
    rej_exact = rej_wald = None
    if pi0 is not None:
        rej_exact = float(np.mean((pi0 < lo) | (pi0 > hi)))
        rej_wald = float(np.mean(np.abs(est - pi0) > z * se))
    return SimulationStudy(
        design=design,
        n=n,
        prevalence=pi,
        replications=reps,
        seed=used_seed,
        non_compliance=s,
        level=lvl,
        method=method,
        null=pi0,
        expected_estimate=pi - s * lam_c / slope,  # = ((1 - s) lam_c - P0) / (P1 - P0)
        true_se=math.sqrt(lam * (1 - lam) / n) / abs(slope),
        bias=float(est.mean() - pi),
        bias_bounded=float(np.clip(est, 0.0, 1.0).mean() - pi),
        empirical_se=float(est.std(ddof=1)),
        mean_se=float(se.mean()),
        rmse=float(math.sqrt(np.mean((est - pi) ** 2))),
        coverage_exact=float(np.mean((lo <= pi) & (pi <= hi))),
        coverage_wald=float(np.mean(np.abs(est - pi) <= z * se)),
        rejection_exact=rej_exact,
        rejection_wald=rej_wald,
        estimates=est,
    )
