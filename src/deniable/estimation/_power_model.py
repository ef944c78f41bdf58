"""The model behind power computations: the estimator's variance from the channel, the
normal-approximation power of the Wald test, and a validated test description.

See ``deniable.estimation`` for the formulas and references.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.designs import Design, TwoGroupDesign
from deniable.estimation._power_exact import exact_power_table
from deniable.estimation._power_results import PowerResult
from deniable.exceptions import ParameterError, ParameterTypeError

__all__ = [
    "ALTERNATIVES",
    "METHODS",
    "PowerTest",
    "binary_view",
    "control_size",
    "make_test",
    "normal_power",
    "two_group_var",
    "unit_var",
]

ALTERNATIVES = ("two-sided", "greater", "less")
METHODS = ("normal", "exact")

FloatArray = npt.NDArray[np.float64]


# --------------------------------------------------------------------------- the channel


def binary_view(design: Design, category: int | None) -> tuple[float, float] | None:
    """``(P1, P0)`` when one binary count is sufficient, else ``None`` (Kuk, draws > 1):
    the design's own :meth:`~deniable.designs.Design.binary_count`."""
    if not isinstance(design, Design):  # validation: the argument's type
        raise ParameterTypeError(
            "`design` must be a design with a binary true answer (a BinaryDesign, Kuk, "
            f"Categorical or TwoGroupDesign), got {type(design).__name__} {design!r}."
        )
    return design.binary_count(category)


def unit_var(design: Design, pi: FloatArray, category: int | None) -> FloatArray:
    """Per-respondent variance ``s(pi)^2`` of the efficient estimator, elementwise."""
    view = binary_view(design, category)
    if view is not None:
        p1, p0 = view
        lam = p0 + pi * (p1 - p0)
        out: FloatArray = lam * (1 - lam) / (p1 - p0) ** 2
        return np.maximum(out, 0.0)  # lam rounds to 1 + tiny: no negative variance
    ch = np.asarray(design.channel)  # no sufficient count: the information of the tally
    b1, b0 = ch[:, 1], ch[:, 0]
    mix = pi[..., None] * b1 + (1 - pi[..., None]) * b0
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where((b1 - b0) == 0, 0.0, (b1 - b0) ** 2 / mix)
    info = terms.sum(axis=-1)
    with np.errstate(divide="ignore"):
        return np.where(np.isinf(info), 0.0, 1 / info)  # a revealing report: no variance


def two_group_var(
    design: TwoGroupDesign,
    pi: FloatArray,
    share: float,
    nuisance: Mapping[str, float],
    known: bool = False,
) -> FloatArray:
    """``s(pi)^2`` of a two-group design for one respondent, a share ``share`` of them in
    group 1: the efficient variance (nuisance estimated), or the naive one (``known``)."""
    f = design.prevalence_variance_known if known else design.prevalence_variance
    flat = np.asarray(pi, dtype=float).ravel()
    uniq, inverse = np.unique(flat, return_inverse=True)
    vals = np.array([f(share, 1 - share, prevalence=float(x), **nuisance) for x in uniq])
    out: FloatArray = vals[inverse].reshape(np.shape(pi))
    return out


# --------------------------------------------------------------------------- normal power


def _tail(margin: FloatArray, se1: FloatArray) -> FloatArray:
    """``P(N(0, se1^2) < margin)``; a point mass (``se1 = 0``) rejects iff ``margin > 0``."""
    from scipy import stats

    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(se1 > 0, margin / np.where(se1 > 0, se1, 1.0), 0.0)
    out: FloatArray = np.where(se1 > 0, stats.norm.cdf(z), (margin > 0).astype(float))
    return out


def normal_power(
    delta: float, se0: FloatArray, se1: FloatArray, alternative: str, alpha: float
) -> FloatArray:
    """The Wald test's power (module docstring), elementwise in the two SEs."""
    from scipy import stats

    if alternative == "two-sided":
        z = float(stats.norm.isf(alpha / 2))
        return np.minimum(_tail(delta - z * se0, se1) + _tail(-delta - z * se0, se1), 1.0)
    z = float(stats.norm.isf(alpha))
    sign = 1.0 if alternative == "greater" else -1.0
    return _tail(sign * delta - z * se0, se1)


# --------------------------------------------------------------------------- the test


def control_size(n: npt.ArrayLike, ratio: float) -> npt.NDArray[np.int64]:
    """``ceil(ratio * n)``, with products within ``1e-9`` of a whole number taken as it
    (``0.1 * 10`` is ``1.0000000000000002`` in floats and means 1 control, not 2)."""
    x = np.asarray(n, dtype=float) * ratio
    r = np.round(x)
    snapped = np.abs(x - r) <= 1e-9 * np.maximum(1.0, x)
    return np.maximum(np.where(snapped, r, np.ceil(x)), 1).astype(np.int64)


@dataclass(frozen=True)
class PowerTest:
    """A validated test: everything but the sample size."""

    design: Design
    prevalence: float
    null: float | None
    control: float | None
    alternative: str
    alpha: float
    method: str
    category: int | None
    share: float = 0.5
    nuisance: tuple[tuple[str, float], ...] = ()
    #: two samples with stated null prevalences: the control group's (``null`` is the
    #: treatment group's); ``None`` for one sample and for the pooled test of equality
    null_control: float | None = None

    @property
    def two_group(self) -> bool:
        return self.design.n_groups == 2

    @property
    def stated(self) -> bool:
        """A two-sample test with stated null prevalences (R's rr convention)."""
        return self.control is not None and self.null is not None

    @property
    def null_difference(self) -> float:
        """The difference of prevalences under H0 (two samples: 0 for the pooled test)."""
        if self.stated:
            assert self.null is not None and self.null_control is not None
            return self.null - self.null_control
        return 0.0

    @property
    def delta(self) -> float:
        """How far the truth is from H0 in the tested quantity (the prevalence, or the
        difference of prevalences)."""
        if self.control is None:
            assert self.null is not None
            return self.prevalence - self.null
        return (self.prevalence - self.control) - self.null_difference

    def var(self, pi: FloatArray, known: bool = False) -> FloatArray:
        """``s(pi)^2`` (see ``unit_var``; two-group: efficient, or naive when ``known``)."""
        if self.two_group:
            design = cast(TwoGroupDesign, self.design)
            return two_group_var(design, pi, self.share, dict(self.nuisance), known)
        return unit_var(self.design, pi, self.category)

    def ses(
        self, n: npt.ArrayLike, n_b: npt.ArrayLike, known: bool = False
    ) -> tuple[FloatArray, FloatArray]:
        """``(SE0, SE1)`` at sizes ``n`` (and ``n_b`` controls), elementwise."""
        na = np.asarray(n, dtype=float)
        ones = np.ones(na.shape)
        if self.control is None:
            assert self.null is not None
            v0, v1 = self.var(self.null * ones, known), self.var(self.prevalence * ones, known)
            return np.sqrt(v0 / na), np.sqrt(v1 / na)
        nb = np.asarray(n_b, dtype=float)
        va = self.var(self.prevalence * ones, known)
        vb = self.var(self.control * ones, known)
        if self.stated:  # each group's SE at its stated null prevalence (R's rr)
            assert self.null is not None and self.null_control is not None
            v0a, v0b = self.var(self.null * ones, known), self.var(self.null_control * ones, known)
            se0 = np.sqrt(v0a / na + v0b / nb)
        else:  # the pooled prevalence estimates the common one under H0: pi_a = pi_b
            pooled = (na * self.prevalence + nb * self.control) / (na + nb)
            se0 = np.sqrt(self.var(pooled, known) * (1 / na + 1 / nb))
        return se0, np.sqrt(va / na + vb / nb)

    def exact_setup(self) -> tuple[float, float, str]:
        """``(lambda0, lambda1, tail)``: null and true report probabilities, and the tail of
        the yes count that rejects (a "no" points to a carrier when ``P1 < P0``)."""
        view = binary_view(self.design, self.category)
        assert view is not None and self.null is not None
        p1, p0 = view
        lam0, lam1 = p0 + self.null * (p1 - p0), p0 + self.prevalence * (p1 - p0)
        if self.alternative == "two-sided":
            return lam0, lam1, "both"
        up = (self.alternative == "greater") == (p1 > p0)
        return lam0, lam1, "upper" if up else "lower"

    def power(self, n: npt.ArrayLike, n_b: npt.ArrayLike, known: bool = False) -> FloatArray:
        """Power at every size in ``n`` (with ``n_b`` controls for two samples); ``known``:
        the naive power of a two-group design with its nuisance taken as known."""
        if self.method == "exact":
            lam0, lam1, tail = self.exact_setup()
            return exact_power_table(n, lam0, lam1, tail, self.alpha)[0]
        se0, se1 = self.ses(n, n_b, known)
        return normal_power(self.delta, se0, se1, self.alternative, self.alpha)

    def result(self, n: int, n_b: int | None) -> PowerResult:
        nb = n if n_b is None else n_b
        se0, se1 = (float(x[0]) for x in self.ses([n], [nb]))
        region: tuple[int, int] | None = None
        size: float | None = None
        known: tuple[float, float, float] | None = None
        if self.two_group:
            k0, k1 = (float(x[0]) for x in self.ses([n], [nb], known=True))
            kp = normal_power(
                self.delta, np.array([k0]), np.array([k1]), self.alternative, self.alpha
            )
            known = (float(kp[0]), k0, k1)
        if self.method == "exact":
            lam0, lam1, tail = self.exact_setup()
            pw, sz, lo, hi = exact_power_table([n], lam0, lam1, tail, self.alpha)
            region, size = (int(lo[0]), int(hi[0])), float(sz[0])
        else:
            pw = normal_power(
                self.delta, np.array([se0]), np.array([se1]), self.alternative, self.alpha
            )
        return PowerResult(
            design=self.design,
            power=float(pw[0]),
            n=n,
            prevalence=self.prevalence,
            null=self.null,
            control=self.control,
            n_control=None if self.control is None else nb,
            alternative=self.alternative,
            alpha=self.alpha,
            method=self.method,
            se_null=se0,
            se_alternative=se1,
            category=self.category,
            critical_region=region,
            size=size,
            power_known=None if known is None else known[0],
            se_null_known=None if known is None else known[1],
            se_alternative_known=None if known is None else known[2],
            group_share=self.share if self.two_group else None,
            nuisance=dict(self.nuisance) if self.two_group else None,
            null_control=self.null_control,
        )


def make_test(
    design: Any,
    prevalence: Any,
    null: Any,
    control: Any,
    alternative: Any,
    alpha: Any,
    method: Any,
    category: Any,
    share: Any = None,
    nuisance: Mapping[str, Any] | None = None,
    null_control: Any = None,
) -> PowerTest:
    """Validate a test description (see :func:`deniable.estimation.power`): the public entry
    points pass their arguments here once, and everything after takes checked values."""
    pi1 = v.probability("prevalence", prevalence)
    if null is None and control is None:
        raise ParameterError(
            "give `null` (one-sample test of H0: prevalence = null) or `control` (two-sample "
            "test; with `null` / `null_control` for stated null prevalences), got neither."
        )
    if control is None and null_control is not None:
        raise ParameterError(
            f"`null_control` applies to a two-sample test (give `control`), got {null_control!r}."
        )
    pi0 = None if null is None else v.probability("null", null)
    pib = None if control is None else v.probability("control", control)
    pic = None if null_control is None else v.probability("null_control", null_control)
    if pib is not None and (pi0 is not None or pic is not None):
        # stated null prevalences (R's rr): the one not given equals the other
        pi0, pic = (pic if pi0 is None else pi0), (pi0 if pic is None else pic)
    alt = v.choice("alternative", alternative, ALTERNATIVES)
    a = v.probability("alpha", alpha, low_open=True, high_open=True)
    m = v.choice("method", method, METHODS)
    if isinstance(design, Design) and design.n_groups == 2:
        return _two_group_test(
            cast(TwoGroupDesign, design), pi1, pi0, pib, alt, a, m, category, share, nuisance, pic
        )
    for name, given in (("share", share), ("nuisance", nuisance)):
        if given is not None:
            raise ParameterError(
                f"`{name}` applies to two-group designs only, got {given!r} for design "
                f"{getattr(design, 'name', type(design).__name__)!r}."
            )
    view = binary_view(design, category)  # validates design and category
    if m == "exact" and pib is not None:
        raise ParameterError(
            "`method` must be 'normal' for a two-sample test (the exact binomial test is "
            "one-sample), got 'exact'."
        )
    if m == "exact" and view is None:
        raise ParameterError(
            f"`method` must be 'normal' for design {design.name!r} with {design.n_reports} "
            "report values (the exact test needs one binomial count of yes reports), got "
            "'exact'."
        )
    return PowerTest(design, pi1, pi0, pib, alt, a, m, category, null_control=pic)


def _two_group_test(
    design: TwoGroupDesign,
    pi1: float,
    pi0: float | None,
    pib: float | None,
    alt: str,
    a: float,
    m: str,
    category: Any,
    share: Any,
    nuisance: Mapping[str, Any] | None,
    pic: float | None,
) -> PowerTest:
    if category is not None:
        raise ParameterError(
            f"`category` applies to design 'categorical' only, got {category!r} for design "
            f"{design.name!r}."
        )
    if m == "exact":
        raise ParameterError(
            f"`method` must be 'normal' for the two-group design {design.name!r} (no single "
            "binomial count), got 'exact'."
        )
    g = 0.5 if share is None else v.probability("share", share, low_open=True, high_open=True)
    if nuisance is not None and not isinstance(nuisance, Mapping):
        raise ParameterTypeError(
            f"`nuisance` must be a mapping of names to true values (e.g. {{'q': 0.3}}), got "
            f"{type(nuisance).__name__} {nuisance!r}."
        )
    given = dict(nuisance or {})
    if not given:  # report the defaults the design uses (e.g. honesty = 1 for the SLD)
        given = {k: float(x) for k, x in design.nuisance.items() if x is not None}
    if "prevalence" in given:
        raise ParameterError(
            "`nuisance` must not hold 'prevalence' (give it as `prevalence`, `null`, "
            f"`control`), got {given!r}."
        )
    t = PowerTest(design, pi1, pi0, pib, alt, a, m, None, g, tuple(sorted(given.items())), pic)
    for pi in (pi1, pi0, pib, pic):  # the design validates the truth keywords and ranges
        if pi is not None:
            t.var(np.array(pi))
    return t
