"""Noise for a released count, calibrated to a privacy target (:func:`calibrate_noise`, what
``deniable privacy noise --mechanism`` prints)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from deniable.common import format_delta, format_epsilon, to_jsonable
from deniable.common import validation as v
from deniable.exceptions import ParameterError
from deniable.mechanisms._noise_common import _finite_noise, _float_up
from deniable.mechanisms._noise_continuous import GaussianMechanism, LaplaceMechanism
from deniable.mechanisms._noise_discrete import DiscreteGaussianMechanism, DiscreteLaplaceMechanism
from deniable.results import Result, Table

__all__ = ["NOISE_MECHANISMS", "NoiseCalibration", "calibrate_noise"]

#: The mechanisms :func:`calibrate_noise` calibrates.
NOISE_MECHANISMS = ("laplace", "gaussian", "discrete-laplace", "discrete-gaussian")
_PARAMETER = {"scale": "scale b", "sigma": "σ"}


@dataclass(frozen=True)
class NoiseCalibration(Result):
    """A noise mechanism calibrated to a privacy target (see :func:`calibrate_noise`).

    ``values`` holds, in this order where they apply: ``scale`` (Laplace ``b``; the
    discrete Laplace's ``t``, with ``scale_exact`` the exact rational) or ``sigma``
    (``sigma_exact`` for the discrete Gaussian), ``calibration``, ``rho`` (zCDP), ``mu``
    (Gaussian DP), ``epsilon`` and ``delta`` (the privacy at the target delta; ``delta`` 0
    for pure DP) and ``expected_abs_error`` (of the released count).
    """

    mechanism: str
    sensitivity: float
    values: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON dict: ``mechanism``, ``sensitivity`` and :attr:`values` (exact
        rationals as ``"p/q"``)."""
        out: dict[str, Any] = to_jsonable(
            {"mechanism": self.mechanism, "sensitivity": self.sensitivity, **self.values}
        )
        return out

    def table(self) -> Table:
        """The parameter (exact where it is a small fraction), the privacy and the expected
        absolute error."""
        row = self.values
        lines: list[tuple[str, str]] = [
            ("mechanism", f"{self.mechanism} (sensitivity {self.sensitivity:g})")
        ]
        for key in ("scale", "sigma"):
            if key in row:
                exact = row.get(f"{key}_exact")
                small = exact is not None and 1 < exact.denominator <= 10**6
                extra = f" (exactly {exact})" if small else ""
                lines.append((_PARAMETER[key], f"{row[key]:.6g}{extra}"))
        if "calibration" in row:
            lines.append(("calibration", row["calibration"]))
        if "rho" in row:
            lines.append(("ρ (zCDP)", f"{row['rho']:.6g}"))
        if "mu" in row:
            lines.append(("μ (Gaussian DP)", f"{row['mu']:.6g}"))
        if "epsilon" in row:
            kind = "pure DP" if row["delta"] == 0 else "exact curve"
            pair = f"({format_epsilon(row['epsilon'])}, {format_delta(row['delta'])})"
            lines.append(("(ε, δ)", f"{pair} {kind}"))
        lines.append(("expected |error|", f"{row['expected_abs_error']:.6g}"))
        return Table.pairs(lines, title="Noise for a released count")


def calibrate_noise(
    mechanism: str,
    *,
    epsilon: float | None = None,
    delta: float | None = None,
    rho: float | None = None,
    sensitivity: float = 1,
    method: str = "analytic",
) -> NoiseCalibration:
    """The noise ``mechanism`` (:data:`NOISE_MECHANISMS`) calibrated for a count of
    ``sensitivity``: the Laplaces to pure ``epsilon``-DP (``scale = sensitivity /
    epsilon``); the Gaussians to (``epsilon``, ``delta``)-DP (``method`` ``analytic``,
    Balle & Wang 2018, or ``classic``, Dwork & Roth 2014, continuous Gaussian only) or to
    ``rho``-zCDP.  The discrete mechanisms need a whole sensitivity.

    >>> c = calibrate_noise("laplace", epsilon=0.5)
    >>> c.values["scale"], c.values["expected_abs_error"]
    (2.0, 2.0)
    """
    v.choice("mechanism", mechanism, NOISE_MECHANISMS)
    v.choice("method", method, ("analytic", "classic"))
    sens = v.positive("sensitivity", sensitivity)
    if mechanism.startswith("discrete") and sens != math.floor(sens):
        raise ParameterError(
            f"`sensitivity` must be a whole number >= 1 for {mechanism!r}, got {sensitivity}."
        )
    values: dict[str, Any] = {}
    if mechanism in ("laplace", "discrete-laplace"):
        if rho is not None or delta is not None or epsilon is None:
            raise ParameterError(
                f"`mechanism` {mechanism!r} is pure epsilon-DP: give `epsilon` (and no "
                "`delta` or `rho`)."
            )
        if mechanism == "laplace":
            lap = LaplaceMechanism.from_epsilon(epsilon, sens)
            values.update(scale=lap.scale, epsilon=lap.epsilon, delta=0.0,
                          expected_abs_error=lap.expected_abs_error)  # fmt: skip
        else:
            dl = DiscreteLaplaceMechanism.from_epsilon(epsilon, int(sens))
            scale = _finite_noise(
                _float_up(Fraction(dl.scale)),
                "scale sensitivity / epsilon",
                f"`epsilon` = {epsilon:g} and `sensitivity` = {sens:g}",
                "give a larger `epsilon` or a smaller `sensitivity`",
            )
            values.update(scale=scale, scale_exact=dl.scale, epsilon=dl.epsilon,
                          delta=0.0, expected_abs_error=dl.expected_abs_error)  # fmt: skip
        return NoiseCalibration(mechanism, sens, values)
    if (epsilon is None) == (rho is None) or (epsilon is not None and delta is None):
        raise ParameterError(
            f"`mechanism` {mechanism!r} needs `epsilon` with `delta`, or `rho` (not both)."
        )
    if method != "analytic" and (mechanism != "gaussian" or rho is not None):
        raise ParameterError(
            "`method` 'classic' applies to the gaussian mechanism with `epsilon` and `delta`."
        )
    if mechanism == "gaussian":
        how = method
        if rho is not None:
            g = GaussianMechanism.from_zcdp(rho, sens)
            how = "zcdp"
        else:
            assert epsilon is not None and delta is not None
            g = GaussianMechanism.from_epsilon_delta(epsilon, delta, sens, method=method)
        values.update(sigma=g.sigma, calibration=how, rho=g.rho, mu=g.mu)
        if delta is not None:
            values.update(epsilon=g.epsilon_for_delta(delta), delta=delta)
        values["expected_abs_error"] = g.expected_abs_error
        return NoiseCalibration(mechanism, sens, values)
    if rho is not None:
        dg = DiscreteGaussianMechanism.from_zcdp(rho, int(sens))
    else:
        assert epsilon is not None and delta is not None
        dg = DiscreteGaussianMechanism.from_epsilon_delta(epsilon, delta, int(sens))
    values.update(sigma=float(dg.sigma), sigma_exact=dg.sigma, rho=dg.rho)
    if delta is not None:
        values.update(epsilon=dg.epsilon_for_delta(delta), delta=delta)
    values["expected_abs_error"] = dg.expected_abs_error
    return NoiseCalibration(mechanism, sens, values)
