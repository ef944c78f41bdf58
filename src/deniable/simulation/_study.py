"""Monte Carlo studies of an estimator (:func:`simulation_study`), and the simulated population
of the two-group designs that :func:`~deniable.simulation.simulate` shares with them.

**One-group designs.**  Respondents are iid; each says "yes" with probability
``lambda = (1 - s) (P0 + pi (P1 - P0))`` (``s``: the share who say "no" whatever the
randomizer says), so a survey's "yes" count is exactly ``Binomial(n, lambda)`` and the moment
estimator depends on the reports only through it.

**Two-group designs.**  ``n1 = floor(n * group_share + 1/2)`` respondents, chosen at random,
are in group 1 and the other ``n2 = n - n1`` in group 2.  Respondents are iid *types* (the
true answer with the latent quantity of the design: the answer to the unrelated question,
being a cheater, a carrier's honesty) drawn independently of the group, so the "yes" counts
of the groups are independent, ``y_g ~ Binomial(n_g, lambda_g)`` with
``lambda_g = (1 - s) sum_type P(type) P(yes | type, g)``.  The moment estimator
``phi_hat = M^-1 (lambda_hat - c)`` (see :mod:`deniable.designs`) depends on the
reports only through ``(y1, y2)``, so drawing the two binomial counts directly is exactly
equivalent to simulating every respondent (``method="respondents"`` does that instead).

The population values of the estimated parameters (the *estimands*):

=====================  ===============================================================
design                 estimands, with prevalence ``pi`` and latent share ``x``
=====================  ===============================================================
``unrelated-unknown``  ``prevalence = pi``, ``unrelated_prevalence = x``
``cdm``, symmetric     cheaters (share ``x = cheating``) drawn independently of the truth:
                       ``prevalence = pi (1 - x)`` (honest carriers),
                       ``beta = (1 - pi)(1 - x)``, ``cheating = x``
``sld``                ``prevalence = pi``, ``honesty = x``
=====================  ===============================================================

For the cheater detection models a cheater *is* a respondent who says "no" whatever the
randomizer says, so ``non_compliance`` is the same thing as ``cheating`` there.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from deniable.common import epsilon_note, format_number, format_parameters, to_jsonable
from deniable.common import validation as v
from deniable.designs import BinaryDesign, Design, TwoGroupDesign
from deniable.exceptions import ParameterError, ParameterTypeError
from deniable.randomness import resolve_rng
from deniable.results import Result, Table, beta_quantile_bounds, normal_quantile
from deniable.simulation._population import MAX_RESPONDENTS, two_group_options
from deniable.simulation._population import Latent as Latent
from deniable.simulation._population import TwoGroupSetting as TwoGroupSetting
from deniable.simulation._population import group_sizes as group_sizes
from deniable.simulation._population import group_yes_probabilities as group_yes_probabilities
from deniable.simulation._population import latent_of as latent_of
from deniable.simulation._population import population_targets as population_targets
from deniable.simulation._population import realized_parameters as realized_parameters
from deniable.simulation._replicate import draw_counts, moment_figures
from deniable.simulation._study_twogroup import (
    TwoGroupSimulationStudy,
    two_group_study,
)

__all__ = [
    "SimulationStudy",
    "exact_bounds",
    "simulation_study",
]

#: Replications drawn per block by :func:`simulation_study` (results depend on the seed only).
STUDY_BLOCK = 8192


# --------------------------------------------------------------------------- one group


@dataclass(frozen=True)
class SimulationStudy(Result):
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
        out: dict[str, Any] = {
            "design": self.design.name,
            "parameters": self.design.parameters(),
            "epsilon": self.design.epsilon,
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
        result: dict[str, Any] = to_jsonable(out)
        return result

    def table(self) -> Table:
        """The setting, bias, SEs, RMSE, coverage of both intervals (and power), each with
        its Monte Carlo SE where it has one."""
        d, mc = self.design, self.mc_se_coverage
        rows = [
            ("design", f"{d.name} ({format_parameters(d.parameters())})"),
            ("ε", epsilon_note(d.epsilon)),
            ("n, replications, seed", f"{self.n}, {self.replications}, {self.seed}"),
            ("prevalence, non-compliance", f"{self.prevalence:g}, {self.non_compliance:g}"),
            ("expected estimate (closed form)", format_number(self.expected_estimate, 6)),
            ("bias (± Monte Carlo SE)", f"{self.bias:+.6f} ± {self.mc_se_bias:.6f}"),
            ("empirical SE (true SE)",
             f"{format_number(self.empirical_se, 6)} ({format_number(self.true_se, 6)})"),
            ("mean estimated SE (plug-in)", format_number(self.mean_se, 6)),
            ("RMSE", format_number(self.rmse, 6)),
            (f"coverage of {self.level:.0%} exact CI",
             f"{self.coverage_exact:.4f} ± {mc(self.coverage_exact):.4f}"),
            (f"coverage of {self.level:.0%} Wald CI",
             f"{self.coverage_wald:.4f} ± {mc(self.coverage_wald):.4f}"),
        ]  # fmt: skip
        if self.null is not None:
            assert self.rejection_exact is not None and self.rejection_wald is not None
            rows.append(
                (f"rejects π = {self.null:g} at {1 - self.level:.0%} (exact / Wald)",
                 f"{self.rejection_exact:.4f} / {self.rejection_wald:.4f}")
            )  # fmt: skip
        method = (
            "yes counts drawn from Binomial(n, λ)" if self.method == "binomial"
            else "every respondent"
        )  # fmt: skip
        rows.append(("simulated", method))
        return Table.pairs(rows, title="Simulation study")


def exact_bounds(
    yes: npt.NDArray[np.int64], n: int, level: float, p1: float, p0: float
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Vectorized Clopper-Pearson interval for ``lambda`` mapped through the design and clipped
    to [0, 1]: elementwise the same as ``design.estimate(yes=..., n=n).ci(level, "exact")``.
    Computed once per distinct ``yes``."""
    uniq, inverse = np.unique(yes, return_inverse=True)
    lo_l, hi_l = beta_quantile_bounds(uniq, n, (1 - level) / 2)
    slope = p1 - p0
    a, b = (lo_l - p0) / slope, (hi_l - p0) / slope
    lo, hi = np.clip(np.minimum(a, b), 0.0, 1.0), np.clip(np.maximum(a, b), 0.0, 1.0)
    return lo[inverse], hi[inverse]


def _unsupported(design: Design) -> ParameterError:
    m = design.n_reports
    what = (
        f"reports one of k = {m} categories"
        if design.n_truths > 2
        else f"reports one of {m} values"
        + (" (a count of red cards)" if design.name == "kuk" else "")
    )
    return ParameterError(
        "simulation_study summarises designs with one yes/no report per respondent and the "
        f"two-group designs; design {design.name!r} {what}: run simulate(...) per survey "
        "instead."
    )


# --------------------------------------------------------------------------- entry point


#: Largest number of replications of :func:`simulation_study` (time and memory are linear
#: in it; about a second at the limit).
MAX_REPLICATIONS = 10**6
#: Largest ``n``: the binomial counts are drawn as 64-bit integers.
MAX_BINOMIAL_N = 2**62


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
    group_share: float | None = None,
    unrelated_prevalence: float | None = None,
    cheating: float | None = None,
    honesty: float | None = None,
) -> SimulationStudy | TwoGroupSimulationStudy:
    """Repeat a survey ``replications`` times and summarise the moment estimator.

    **One-group designs** (one yes/no report per respondent): a :class:`SimulationStudy`
    with the bias and the bias of the bounded estimate, empirical SE, mean estimated
    (plug-in) SE, RMSE, coverage of the exact (Clopper-Pearson mapped) and Wald intervals at
    ``level``, and with ``null`` the rejection rate of ``H0: pi = null`` at ``1 - level``
    (exact: ``null`` outside the exact interval; Wald: ``|pi_hat - null| > z se``).

    ``method="binomial"`` (default) draws each survey's number of "yes" reports directly:
    respondents are iid, each says "yes" with probability
    ``lambda = (1 - s) (P0 + pi (P1 - P0))``, so the count is exactly ``Binomial(n, lambda)``
    and the moment estimator depends on the reports only through it.  (The randomizer
    realises ``P1``, ``P0`` to within ``2**-53``.)  ``method="respondents"`` runs
    :func:`~deniable.simulation.simulate` for every replication instead: slower, the same
    distribution.  ``progress(done, total)`` is called after each block of replications
    (after each replication with ``method="respondents"``).

    **Two-group designs**: a :class:`TwoGroupSimulationStudy`, one :class:`ParameterStudy`
    per estimated parameter (bias, empirical SE, mean delta-method SE, RMSE, coverage of the
    Wald interval, the closed-form expectation and SE) and with ``null`` the Wald rejection
    rate of ``H0: prevalence = null``.  ``group_share`` and the latent keyword
    (``unrelated_prevalence``, ``cheating`` or ``honesty``) are as in
    :func:`~deniable.simulation.simulate`.  ``method="binomial"`` draws both groups' "yes"
    counts, ``y_g ~ Binomial(n_g, lambda_g)``: exactly equivalent to simulating every
    respondent under iid sampling (module docstring).

    Categorical designs and Kuk with several draws (more than two report values) are not
    summarised here (:class:`~deniable.exceptions.ParameterError`).

    >>> from deniable import TwoCoin
    >>> st = simulation_study(TwoCoin(), 500, 0.3, replications=4000, seed=1)
    >>> abs(st.bias) < 4 * st.mc_se_bias, abs(st.coverage_exact - 0.95) < 0.02
    (True, True)
    >>> from deniable.designs import StochasticLieDetector
    >>> st = simulation_study(StochasticLieDetector(2 / 12, 10 / 12), 2000, 0.3, honesty=0.8,
    ...                       replications=2000, seed=1)
    >>> [abs(p.bias) < 4 * p.mc_se_bias for p in st.parameters.values()]
    [True, True]
    """
    if not isinstance(design, Design):
        raise ParameterTypeError(
            f"`design` must be a deniable Design, got {type(design).__name__}."
        )
    n = v.integer("n", n, minimum=1, maximum=MAX_BINOMIAL_N, why="64-bit counts")
    pi = v.probability("prevalence", prevalence)
    reps = v.integer(
        "replications", replications, minimum=2, maximum=MAX_REPLICATIONS,
        why="time and memory linear in replications",
    )  # fmt: skip
    s = v.probability("non_compliance", non_compliance)
    lvl = v.level(level)
    pi0 = None if null is None else v.probability("null", null)
    v.choice("method", method, ("binomial", "respondents"))
    if method == "respondents" and n * reps > MAX_RESPONDENTS:
        raise ParameterError(
            f"`n` * `replications` must be an integer in [2, {v.fmt_limit(MAX_RESPONDENTS)}] with "
            f"method 'respondents' (every respondent is simulated; method 'binomial' draws "
            f"the same counts in time linear in replications), got {n} * {reps} = {n * reps}."
        )
    options = {"group_share": group_share, "unrelated_prevalence": unrelated_prevalence,
               "cheating": cheating, "honesty": honesty}  # fmt: skip
    setting = two_group_options(design, options, s)
    used_seed = secrets.randbelow(2**32) if seed is None else v.integer("seed", seed, minimum=0)
    if design.n_groups == 2:
        assert setting is not None
        return two_group_study(
            cast(TwoGroupDesign, design), n, pi, setting, reps=reps, used_seed=used_seed, s=s,
            lvl=lvl, pi0=pi0, method=method, progress=progress,
            options={k: x for k, x in options.items() if x is not None}, block=STUDY_BLOCK,
        )  # fmt: skip
    if not isinstance(design, BinaryDesign) or design.n_reports != 2:
        raise _unsupported(design)
    gen = resolve_rng(used_seed)
    assert isinstance(gen, np.random.Generator)
    p1, p0 = design.p_yes_given_1, design.p_yes_given_0
    slope = p1 - p0
    lam_c = p0 + pi * slope
    lam = (1 - s) * lam_c
    from deniable.simulation._simulate import simulate

    def binomial(m: int) -> npt.NDArray[np.int64]:
        return gen.binomial(n, lam, size=m)

    def survey(sd: int) -> int:
        return int(np.count_nonzero(simulate(design, n, pi, seed=sd, non_compliance=s).reports))

    yes = draw_counts(gen, reps, STUDY_BLOCK, method, progress, binomial, survey)
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
        bias_bounded=float(np.clip(est, 0.0, 1.0).mean() - pi),
        coverage_exact=float(np.mean((lo <= pi) & (pi <= hi))),
        **moment_figures(est, se, pi, z),
        rejection_exact=rej_exact,
        rejection_wald=rej_wald,
        estimates=est,
    )
