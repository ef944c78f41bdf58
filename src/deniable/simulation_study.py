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
``phi_hat = M^-1 (lambda_hat - c)`` (see :mod:`deniable.designs._twogroup`) depends on the
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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
from scipy import stats

from deniable import _validation as v
from deniable._estimate import normal_quantile
from deniable.designs import (
    BinaryDesign,
    Categorical,
    CheaterDetection,
    Design,
    StochasticLieDetector,
    SymmetricCheaterDetection,
    TwoGroupDesign,
    UnrelatedUnknown,
)
from deniable.exceptions import ParameterError, ParameterTypeError
from deniable.randomness import resolve_rng

__all__ = [
    "TWO_GROUP_OPTIONS",
    "ParameterStudy",
    "SimulationStudy",
    "TwoGroupSetting",
    "TwoGroupSimulationStudy",
    "exact_bounds",
    "group_sizes",
    "population_targets",
    "realized_parameters",
    "simulation_study",
    "two_group_options",
]

#: Replications drawn per block by :func:`simulation_study` (results depend on the seed only).
STUDY_BLOCK = 8192

#: Keywords of :func:`~deniable.simulation.simulate` and :func:`simulation_study` that only
#: the two-group designs take.
TWO_GROUP_OPTIONS = ("group_share", "unrelated_prevalence", "cheating", "honesty")

FloatArray = npt.NDArray[np.float64]


# --------------------------------------------------------------------------- population


class Latent(NamedTuple):
    """The latent quantity of a two-group design: its keyword in :func:`simulate`, its
    keyword in the design's ``randomize``, its default (``None``: required) and meaning."""

    option: str
    keyword: str
    default: float | None
    meaning: str


def latent_of(design: TwoGroupDesign) -> Latent:
    """The latent quantity that :func:`simulate` draws for ``design``."""
    if isinstance(design, UnrelatedUnknown):
        return Latent(
            "unrelated_prevalence",
            "unrelated",
            None,
            "the share who would say yes to the unrelated question",
        )
    if isinstance(design, CheaterDetection | SymmetricCheaterDetection):
        return Latent(
            "cheating", "cheater", 0.0, "the share of respondents who cheat and always say no"
        )
    if isinstance(design, StochasticLieDetector):
        return Latent("honesty", "honest", 1.0, "carriers' probability of answering honestly")
    raise ParameterError(
        f"simulation does not know the latent quantity of design {design.name!r}."
    )  # pragma: no cover - every registered two-group design is handled above


class TwoGroupSetting(NamedTuple):
    """Validated two-group options: the latent quantity and its value, the share of
    respondents in group 1, and the share whose reports are set to "no" after randomizing
    (0 for the cheater detection models, whose non-compliers are the cheaters)."""

    latent: Latent
    value: float
    group_share: float
    zeroed: float


def _is_cheater_design(design: Design) -> bool:
    return isinstance(design, CheaterDetection | SymmetricCheaterDetection)


def two_group_options(
    design: Design, options: Mapping[str, Any], non_compliance: float
) -> TwoGroupSetting | None:
    """Check the two-group keywords (``None`` = not given) against ``design``.

    One-group designs take none of them; a two-group design takes ``group_share`` (default
    0.5, in (0, 1)) and its own latent keyword (see :func:`latent_of`).
    """
    given = {k: x for k, x in options.items() if x is not None}
    if not isinstance(design, TwoGroupDesign):
        if given:
            first = next(iter(given))
            raise ParameterError(
                f"`{first}` applies to the two-group designs only ({', '.join(TWO_GROUP_OPTIONS)}"
                f"); design {design.name!r} has one group."
            )
        return None
    latent = latent_of(design)
    for key in given:
        if key not in ("group_share", latent.option):
            raise ParameterError(
                f"`{key}` does not apply to design {design.name!r}: its latent quantity is "
                f"`{latent.option}` ({latent.meaning})."
            )
    share = v.probability(
        "group_share", given.get("group_share", 0.5), low_open=True, high_open=True
    )
    value = given.get(latent.option)
    zeroed = non_compliance
    if _is_cheater_design(design):
        if value is not None and non_compliance > 0:
            raise ParameterError(
                f"for design {design.name!r} `non_compliance` and `cheating` are the same thing "
                "(respondents who say no whatever the randomizer says): give one, got "
                f"cheating={value!r} and non_compliance={non_compliance!r}."
            )
        if value is None and non_compliance > 0:
            value = non_compliance
        zeroed = 0.0
    if value is None:
        if latent.default is None:
            raise ParameterError(
                f"design {design.name!r} needs `{latent.option}` ({latent.meaning}), e.g. "
                f"{latent.option}=0.5."
            )
        value = latent.default
    return TwoGroupSetting(latent, v.probability(latent.option, value), share, zeroed)


def group_sizes(n: int, group_share: float) -> tuple[int, int]:
    """``(n1, n2)`` with ``n1 = floor(n * group_share + 1/2)``; both must be at least 1."""
    n1 = math.floor(n * group_share + 0.5)
    if not 1 <= n1 <= n - 1:
        raise ParameterError(
            f"`group_share` * `n` must leave at least one respondent in each group, got "
            f"n1 = floor({group_share:g} * {n} + 1/2) = {n1} of n = {n}."
        )
    return n1, n - n1


def _types(design: TwoGroupDesign, pi: float, x: float) -> list[float]:
    """P(type) in the order of ``design.respondent_types`` (latent independent of truth)."""
    if isinstance(design, UnrelatedUnknown):
        return [pi * x, pi * (1 - x), (1 - pi) * x, (1 - pi) * (1 - x)]
    if _is_cheater_design(design):
        return [pi * (1 - x), (1 - pi) * (1 - x), pi * x, (1 - pi) * x]
    return [pi * x, pi * (1 - x), 1 - pi]  # SLD: honest carrier, lying carrier, non-carrier


def population_targets(design: TwoGroupDesign, pi: float, x: float) -> dict[str, float]:
    """The population value of every estimated parameter (module docstring table)."""
    if isinstance(design, UnrelatedUnknown):
        return {"prevalence": pi, "unrelated_prevalence": x}
    if _is_cheater_design(design):
        return {"prevalence": pi * (1 - x), "beta": (1 - pi) * (1 - x), "cheating": x}
    return {"prevalence": pi, "honesty": x}


def group_yes_probabilities(
    design: TwoGroupDesign, pi: float, setting: TwoGroupSetting
) -> FloatArray:
    """``(lambda_1, lambda_2)``: ``(1 - s) sum_type P(type) P(yes | type, g)``."""
    types = np.array(_types(design, pi, setting.value))
    lam = [float(design.group_channel(g)[1] @ types) for g in (1, 2)]
    out: FloatArray = (1 - setting.zeroed) * np.clip(np.array(lam), 0.0, 1.0)
    return out


def realized_parameters(
    design: TwoGroupDesign, truth: npt.NDArray[Any], latent: npt.NDArray[Any]
) -> dict[str, float]:
    """The estimands computed on one simulated population (not the population values):
    e.g. the share of honest carriers among these respondents, or the share of these
    carriers who answer honestly (NaN without carriers)."""
    t, x = truth.astype(bool), latent.astype(bool)
    n = t.size
    if isinstance(design, UnrelatedUnknown):
        return {"prevalence": int(t.sum()) / n, "unrelated_prevalence": int(x.sum()) / n}
    if _is_cheater_design(design):
        return {"prevalence": int((t & ~x).sum()) / n, "beta": int((~t & ~x).sum()) / n,
                "cheating": int(x.sum()) / n}  # fmt: skip
    carriers = int(t.sum())
    honest = int((t & x).sum()) / carriers if carriers else math.nan
    return {"prevalence": carriers / n, "honesty": honest}


# --------------------------------------------------------------------------- one group


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


def _unsupported(design: Design) -> ParameterError:
    m = design.n_reports
    what = (
        f"reports one of k = {design.k} categories"
        if isinstance(design, Categorical)
        else f"reports one of {m} values"
        + (" (a count of red cards)" if design.name == "kuk" else "")
    )
    return ParameterError(
        "simulation_study summarises designs with one yes/no report per respondent and the "
        f"two-group designs; design {design.name!r} {what}: run simulate(...) per survey "
        "instead."
    )


# --------------------------------------------------------------------------- two groups


@dataclass(frozen=True)
class ParameterStudy:
    """Monte Carlo properties of one estimated parameter of a two-group design.

    ``truth``: the population value (the estimand); ``expected``: the expectation of the
    moment estimate in closed form (``expected_exact``: exact, for a parameter linear in the
    group shares; otherwise its large-n limit); ``true_se``: the delta-method SE at the
    truth (exact for a linear parameter).  Replications whose estimate is undefined (NaN,
    e.g. the SLD's honesty when the prevalence estimate is 0) are counted in ``undefined``
    and left out of the other figures.
    """

    parameter: str
    truth: float
    expected: float
    expected_exact: bool
    true_se: float
    bias: float
    empirical_se: float
    mean_se: float
    rmse: float
    coverage_wald: float
    defined: int
    undefined: int

    @property
    def expected_bias(self) -> float:
        return self.expected - self.truth

    @property
    def mc_se_bias(self) -> float:
        return self.empirical_se / math.sqrt(self.defined)

    @property
    def mc_se_coverage(self) -> float:
        c = self.coverage_wald
        return math.sqrt(c * (1 - c) / self.defined)

    def to_dict(self) -> dict[str, Any]:
        return {
            "parameter": self.parameter,
            "truth": self.truth,
            "expected_estimate": self.expected,
            "expected_exact": self.expected_exact,
            "expected_bias": self.expected_bias,
            "true_se": self.true_se,
            "bias": self.bias,
            "mc_se_bias": self.mc_se_bias,
            "empirical_se": self.empirical_se,
            "mean_se": self.mean_se,
            "rmse": self.rmse,
            "coverage_wald": self.coverage_wald,
            "mc_se_coverage_wald": self.mc_se_coverage,
            "undefined": self.undefined,
        }


@dataclass(frozen=True)
class TwoGroupSimulationStudy:
    """Monte Carlo properties of a two-group design's moment estimates (one
    :class:`ParameterStudy` per estimated parameter; see :func:`simulation_study`).

    ``prevalence`` is the population share of carriers and ``latent_value`` the value of
    the design's latent quantity ``latent`` (``unrelated_prevalence``, ``cheating`` or
    ``honesty``); ``yes_probabilities`` are ``(lambda_1, lambda_2)``.
    """

    design: TwoGroupDesign
    n: int
    group_sizes: tuple[int, int]
    group_share: float
    prevalence: float
    latent: str
    latent_value: float
    non_compliance: float
    replications: int
    seed: int
    level: float
    method: str
    null: float | None
    rejection_wald: float | None
    yes_probabilities: tuple[float, float]
    parameters: Mapping[str, ParameterStudy]
    estimates: npt.NDArray[np.float64] = field(repr=False, compare=False)

    def __getitem__(self, name: str) -> ParameterStudy:
        if name not in self.parameters:
            v.choice("parameter", name, tuple(self.parameters))
        return self.parameters[name]

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON dict (infinite epsilon as ``"inf"``, NaN as ``"nan"``)."""

        def num(x: float) -> float | str:
            return x if math.isfinite(x) else ("nan" if math.isnan(x) else "inf")

        out: dict[str, Any] = {
            "design": self.design.name,
            "parameters": self.design.parameters(),
            "epsilon": num(self.design.epsilon),
            "n": self.n,
            "group_sizes": list(self.group_sizes),
            "group_share": self.group_share,
            "prevalence": self.prevalence,
            self.latent: self.latent_value,
            "non_compliance": self.non_compliance,
            "replications": self.replications,
            "seed": self.seed,
            "level": self.level,
            "method": self.method,
            "interval": "wald (delta method, plug-in SE with n_g)",
            "yes_probabilities": list(self.yes_probabilities),
            "estimates": {
                k: {f: num(x) if isinstance(x, float) else x for f, x in p.to_dict().items()}
                for k, p in self.parameters.items()
            },
        }
        if self.null is not None:
            out.update(null=self.null, rejection_wald=self.rejection_wald)
        return out

    def table(self) -> str:
        """A plain-text summary: the setting, then one line per parameter."""
        eps = self.design.epsilon
        (n1, n2), (l1, l2) = self.group_sizes, self.yes_probabilities
        head = [
            ("design", f"{self.design!r}, ε = {'∞' if math.isinf(eps) else f'{eps:.4f}'}"),
            ("n (n1 + n2), replications, seed",
             f"{self.n} ({n1} + {n2}), {self.replications}, {self.seed}"),
            (f"prevalence, {self.latent}, non-compliance",
             f"{self.prevalence:g}, {self.latent_value:g}, {self.non_compliance:g}"),
            ("P(yes) in group 1, 2", f"{l1:.6f}, {l2:.6f}"),
        ]  # fmt: skip
        if self.null is not None:
            head.append((f"rejects π = {self.null:g} (Wald)", f"{self.rejection_wald:.4f}"))
        width = max(len(k) for k, _ in head)
        lines = [f"{k.ljust(width)}  {val}" for k, val in head]
        cols = ("parameter", "truth", "expected", "bias ± MC SE", "emp. SE", "true SE",
                "mean SE", "RMSE", f"{self.level:.0%} Wald coverage")  # fmt: skip
        rows = [cols]
        for name, p in self.parameters.items():
            rows.append((name, f"{p.truth:.4f}", f"{p.expected:.4f}" + ("" if p.expected_exact
                         else "*"), f"{p.bias:+.5f} ± {p.mc_se_bias:.5f}", f"{p.empirical_se:.5f}",
                         f"{p.true_se:.5f}", f"{p.mean_se:.5f}", f"{p.rmse:.5f}",
                         f"{p.coverage_wald:.4f} ± {p.mc_se_coverage:.4f}"))  # fmt: skip
        widths = [max(len(r[i]) for r in rows) for i in range(len(cols))]
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                  for r in rows]  # fmt: skip
        if not all(p.expected_exact for p in self.parameters.values()):
            lines.append("* large-n limit (the parameter is not linear in the group shares)")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


def _vector_outputs(design: TwoGroupDesign, phi: FloatArray) -> tuple[FloatArray, FloatArray]:
    """The reported parameters and their Jacobians for every row of ``phi`` (r x 2)."""
    r, k = phi.shape[0], len(design.estimated)
    values, jac = np.empty((r, k)), np.empty((r, k, 2))
    affine = design._affine_outputs()
    for i, a in enumerate(affine):
        if a is not None:
            row, const = np.array(a[0]), a[1]
            values[:, i] = phi @ row + const
            jac[:, i, :] = row
    other = [i for i, a in enumerate(affine) if a is None]
    if other:  # a ratio (the SLD's honesty): the design's own formula, row by row
        for j in range(r):
            val, jj = design._outputs(phi[j])
            values[j, other], jac[j, other] = val[other], jj[other]
    return values, jac


def _two_group_study(
    design: TwoGroupDesign,
    n: int,
    pi: float,
    setting: TwoGroupSetting,
    *,
    reps: int,
    used_seed: int,
    s: float,
    lvl: float,
    pi0: float | None,
    method: str,
    progress: Callable[[int, int], None] | None,
    options: Mapping[str, Any],
) -> TwoGroupSimulationStudy:
    from deniable.simulation import simulate

    sizes = np.array(group_sizes(n, setting.group_share), dtype=float)
    lam = group_yes_probabilities(design, pi, setting)
    gen = resolve_rng(used_seed)
    assert isinstance(gen, np.random.Generator)
    yes = np.empty((reps, 2), dtype=np.int64)
    for start in range(0, reps, STUDY_BLOCK):
        m = min(STUDY_BLOCK, reps - start)
        if method == "binomial":
            yes[start : start + m] = gen.binomial(sizes.astype(np.int64), lam, size=(m, 2))
        else:
            for j, sd in enumerate(gen.integers(0, 2**63, size=m)):
                sim = simulate(design, n, pi, seed=int(sd), non_compliance=s, **options)
                assert sim.group is not None
                yes[start + j] = [np.count_nonzero(sim.reports[sim.group == g]) for g in (1, 2)]
                if progress is not None and j + 1 < m:
                    progress(start + j + 1, reps)
        if progress is not None:
            progress(start + m, reps)
    c, mat = design.linear_system()
    m_inv = np.asarray(np.linalg.inv(mat), dtype=np.float64)
    lam_hat = yes / sizes
    values, jac = _vector_outputs(design, (lam_hat - c) @ m_inv.T)
    cov_phi = np.einsum("ij,rj,kj->rik", m_inv, lam_hat * (1 - lam_hat) / sizes, m_inv)
    se = np.sqrt(np.einsum("rij,rjk,rik->ri", jac, cov_phi, jac))
    # closed forms at the truth: E[phi_hat] = M^-1 (lambda - c) exactly; delta-method SE
    limit, jac_limit = design._outputs(m_inv @ (lam - c))
    cov_limit = jac_limit @ m_inv @ np.diag(lam * (1 - lam) / sizes) @ m_inv.T @ jac_limit.T
    targets = population_targets(design, pi, setting.value)
    z = normal_quantile(lvl)
    affine = design._affine_outputs()
    summaries: dict[str, ParameterStudy] = {}
    for i, name in enumerate(design.estimated):
        ok = np.isfinite(values[:, i]) & np.isfinite(se[:, i])
        est, sei, truth = values[ok, i], se[ok, i], targets[name]
        defined = int(ok.sum())
        if defined < 2:
            raise ParameterError(
                f"the estimate of `{name}` is undefined in {reps - defined} of {reps} "
                "replications; nothing to summarise (is the prevalence 0?)."
            )
        summaries[name] = ParameterStudy(
            parameter=name,
            truth=truth,
            expected=float(limit[i]),
            expected_exact=affine[i] is not None,
            true_se=math.sqrt(max(float(cov_limit[i, i]), 0.0)),
            bias=float(est.mean() - truth),
            empirical_se=float(est.std(ddof=1)),
            mean_se=float(sei.mean()),
            rmse=float(math.sqrt(np.mean((est - truth) ** 2))),
            coverage_wald=float(np.mean(np.abs(est - truth) <= z * sei)),
            defined=defined,
            undefined=reps - defined,
        )
    rejection = None
    if pi0 is not None:  # NaN never rejects
        rejection = float(np.mean(np.abs(values[:, 0] - pi0) > z * se[:, 0]))
    n1, n2 = (int(x) for x in sizes)
    return TwoGroupSimulationStudy(
        design=design, n=n, group_sizes=(n1, n2), group_share=setting.group_share,
        prevalence=pi, latent=setting.latent.option, latent_value=setting.value,
        non_compliance=s, replications=reps, seed=used_seed, level=lvl, method=method,
        null=pi0, rejection_wald=rejection, yes_probabilities=(float(lam[0]), float(lam[1])),
        parameters=summaries, estimates=values,
    )  # fmt: skip


# --------------------------------------------------------------------------- entry point


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
    n = v.integer("n", n, minimum=1)
    pi = v.probability("prevalence", prevalence)
    reps = v.integer("replications", replications, minimum=2)
    s = v.probability("non_compliance", non_compliance)
    lvl = v.level(level)
    pi0 = None if null is None else v.probability("null", null)
    v.choice("method", method, ("binomial", "respondents"))
    options = {"group_share": group_share, "unrelated_prevalence": unrelated_prevalence,
               "cheating": cheating, "honesty": honesty}  # fmt: skip
    setting = two_group_options(design, options, s)
    used_seed = secrets.randbelow(2**32) if seed is None else v.integer("seed", seed, minimum=0)
    if isinstance(design, TwoGroupDesign):
        assert setting is not None
        return _two_group_study(
            design, n, pi, setting, reps=reps, used_seed=used_seed, s=s, lvl=lvl, pi0=pi0,
            method=method, progress=progress,
            options={k: x for k, x in options.items() if x is not None},
        )  # fmt: skip
    if not isinstance(design, BinaryDesign) or design.n_reports != 2:
        raise _unsupported(design)
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
            from deniable.simulation import simulate

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
