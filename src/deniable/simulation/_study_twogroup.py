"""Monte Carlo studies of the two-group designs' moment estimates: one
:class:`ParameterStudy` per estimated parameter, gathered in a
:class:`TwoGroupSimulationStudy` (the two-group half of
:func:`~deniable.simulation.simulation_study`; the population model is in the
docstring of :mod:`deniable.simulation`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import epsilon_note, format_number, format_parameters, to_jsonable
from deniable.common import validation as v
from deniable.designs import TwoGroupDesign
from deniable.exceptions import ParameterError
from deniable.randomness import resolve_rng
from deniable.results import Result, Table, normal_quantile
from deniable.simulation._population import (
    TwoGroupSetting,
    group_sizes,
    group_yes_probabilities,
    population_targets,
)
from deniable.simulation._replicate import draw_counts, moment_figures

__all__ = ["ParameterStudy", "TwoGroupSimulationStudy", "two_group_study"]

FloatArray = npt.NDArray[np.float64]


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
class TwoGroupSimulationStudy(Result):
    """Monte Carlo properties of a two-group design's moment estimates (one
    :class:`ParameterStudy` per estimated parameter; see
    :func:`~deniable.simulation.simulation_study`).

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
        out: dict[str, Any] = {
            "design": self.design.name,
            "parameters": self.design.parameters(),
            "epsilon": self.design.epsilon,
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
            "estimates": {k: p.to_dict() for k, p in self.parameters.items()},
        }
        if self.null is not None:
            out.update(null=self.null, rejection_wald=self.rejection_wald)
        result: dict[str, Any] = to_jsonable(out)
        return result

    def table(self) -> Table:
        """The setting, then one column per parameter: truth, expected estimate, bias, SEs,
        RMSE and Wald coverage (each with its Monte Carlo SE where it has one)."""
        d = self.design
        (n1, n2), (l1, l2) = self.group_sizes, self.yes_probabilities
        rows = [
            ("design", f"{d.name} ({format_parameters(d.parameters())})"),
            ("ε", epsilon_note(d.epsilon)),
            ("n (n1 + n2), replications, seed",
             f"{self.n} ({n1} + {n2}), {self.replications}, {self.seed}"),
            (f"prevalence, {self.latent}, non-compliance",
             f"{self.prevalence:g}, {self.latent_value:g}, {self.non_compliance:g}"),
            ("P(yes) in group 1, group 2", f"{format_number(l1, 6)}, {format_number(l2, 6)}"),
        ]  # fmt: skip
        if self.null is not None:
            rows.append((f"rejects π = {self.null:g} at {1 - self.level:.0%} (Wald)",
                         format_number(self.rejection_wald)))  # fmt: skip
        method = "yes counts drawn from Binomial(n_g, λ_g)" if self.method == "binomial" else (
            "every respondent")  # fmt: skip
        rows.append(("simulated", method))
        ps = list(self.parameters.values())
        lines = [
            ("truth", [format_number(p.truth, 6) for p in ps]),
            ("expected (closed form)",
             [format_number(p.expected, 6) + ("" if p.expected_exact else "*") for p in ps]),
            ("bias ± MC SE", [f"{p.bias:+.5f} ± {p.mc_se_bias:.5f}" for p in ps]),
            ("empirical SE (true)",
             [f"{format_number(p.empirical_se, 5)} ({format_number(p.true_se, 5)})" for p in ps]),
            ("mean estimated SE", [format_number(p.mean_se, 5) for p in ps]),
            ("RMSE", [format_number(p.rmse, 5) for p in ps]),
            (f"{self.level:.0%} Wald coverage",
             [f"{p.coverage_wald:.4f} ± {p.mc_se_coverage:.4f}" for p in ps]),
        ]  # fmt: skip
        if any(p.undefined for p in ps):
            lines.append(("undefined estimates (left out)", [str(p.undefined) for p in ps]))
        table = Table(
            ("", *(p.parameter for p in ps)),
            tuple((label, *cells) for label, cells in lines),
            notes=(
                "truth: population value"
                + (" (prevalence: honest carriers)" if "cheating" in self.parameters else "")
                + "; SE: delta method, plug-in (n_g); * large-n limit (not linear in the "
                "group shares)",
            ),
            align="l" + "r" * len(ps),
        )
        return Table.pairs(rows, title="Simulation study (two groups)", sections=(table,))


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


def two_group_study(
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
    block: int,
) -> TwoGroupSimulationStudy:
    """The two-group study of :func:`~deniable.simulation.simulation_study` (inputs
    validated there), ``block`` replications drawn at a time."""
    from deniable.simulation._simulate import simulate

    sizes = np.array(group_sizes(n, setting.group_share), dtype=float)
    lam = group_yes_probabilities(design, pi, setting)
    gen = resolve_rng(used_seed)
    assert isinstance(gen, np.random.Generator)

    def binomial(m: int) -> npt.NDArray[np.int64]:
        return gen.binomial(sizes.astype(np.int64), lam, size=(m, 2))

    def survey(sd: int) -> list[int]:
        sim = simulate(design, n, pi, seed=sd, non_compliance=s, **options)
        assert sim.group is not None
        return [int(np.count_nonzero(sim.reports[sim.group == g])) for g in (1, 2)]

    yes = draw_counts(gen, reps, block, method, progress, binomial, survey)
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
            **moment_figures(est, sei, truth, z),
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
