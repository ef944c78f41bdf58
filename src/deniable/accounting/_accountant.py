"""An explicit privacy accountant: events in, total epsilon / delta out, by any method.

No global state: a :class:`PrivacyAccountant` is a frozen value holding its events;
:meth:`PrivacyAccountant.add` returns a new one.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np

from deniable.accounting._composition import (
    MAX_EXACT_COUNT,
    CompositionRow,
    CompositionTable,
    advanced_composition,
    basic_composition,
    common_lattice,
    kov_composition,
    optimal_rr_delta,
    optimal_rr_epsilon,
)
from deniable.accounting._conversions import (
    compose_gdp,
    gdp_delta,
    gdp_epsilon,
    pure_to_zcdp,
    zcdp_delta,
    zcdp_epsilon,
)
from deniable.accounting._events import Event, Gaussian, Laplace, RandomizedResponse
from deniable.accounting._measures import GDP, ZCDP
from deniable.accounting._pld import (
    MAX_KARY_PLD_COUNT,
    MAX_PLD_COUNT,
    PrivacyLossDistribution,
    compose_all,
    gaussian_pld,
    laplace_pld,
    rr_pld,
)
from deniable.accounting._rdp import (
    FloatArray,
    alpha_array,
    check_delta,
    check_epsilon,
    laplace_rdp,
    rdp_curve_delta,
    rdp_curve_epsilon,
    rr_rdp,
    scalar_or_array,
)
from deniable.accounting._safety import MARGIN, half_square_up, up, upper_root
from deniable.common import _validation as v
from deniable.common._format import format_epsilon
from deniable.exceptions import ParameterError, ParameterTypeError, PrivacyError

__all__ = ["COMPOSITION_METHODS", "PrivacyAccountant"]

COMPOSITION_METHODS = ("basic", "advanced", "kov", "optimal", "pld", "rdp", "zcdp", "gdp", "best")
_ROUTES = {
    "basic": "sum of epsilons",
    "advanced": "Dwork-Rothblum-Vadhan 2010, min with basic",
    "kov": "Kairouz-Oh-Viswanath 2015, Thm 3.4/3.5",
    "rdp": "Renyi curves summed, CKS 2020 conversion",
    "zcdp": "rho summed, CKS 2020 conversion",
    "gdp": "exact (Dong-Roth-Su 2019)",
}
_MAX_GRID = 2**20  # entries of a discretised PLD; the step is coarsened beyond this
_CLOSED_FORMS = "basic, advanced, kov, rdp and zcdp take any count"


@dataclass(frozen=True)
class PrivacyAccountant:
    """Total privacy loss of a sequence of events (one respondent's view).

    Methods: ``"basic"``, ``"advanced"``, ``"kov"`` (pure-DP bounds; ``inf`` with Gaussian
    events, which have no pure-DP epsilon), ``"optimal"`` (the default: the exact answer
    wherever one exists, else the pessimistic PLD; :meth:`route` says which),
    ``"pld"`` (pessimistic discretisation with ``step``), ``"rdp"``, ``"zcdp"``, ``"gdp"``
    (Gaussian events only) and ``"best"`` (minimum of all that apply).

    The exact routes of ``"optimal"``, in order: one binary RR group, the binomial sum
    (Kairouz, Oh & Viswanath 2015, Thm 3.3); one k-ary RR group, its exact three-atom PLD on
    the lattice ``epsilon Z``; several RR groups whose epsilons share a lattice, the exact
    lattice PLD; only Gaussian events, the exact GDP composition (Dong, Roth & Su 2019,
    Cor. 2.13 and 3.3).  Anything else (Laplace, epsilons without a common lattice, mixed
    kinds) goes through the pessimistic PLD, an upper bound (:meth:`epsilon_bounds` brackets
    the truth).

    >>> acct = PrivacyAccountant([RandomizedResponse(0.5, count=10)])
    >>> acct.epsilon(1e-6, method="basic")
    5.0
    >>> acct.epsilon(1e-6) <= acct.epsilon(1e-6, method="rdp")
    True
    >>> acct.route()
    'exact: binomial sum (KOV 2015 Thm 3.3)'
    """

    events: tuple[Event, ...] = ()
    step: float = 1e-4
    _cache: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        evs = tuple(self.events)
        for e in evs:
            if not isinstance(e, RandomizedResponse | Laplace | Gaussian):
                raise ParameterTypeError(
                    "`events` must hold RandomizedResponse, Laplace or Gaussian events, got "
                    f"{type(e).__name__} {e!r}."
                )
        object.__setattr__(self, "events", evs)
        object.__setattr__(self, "step", v.positive("step", self.step))

    def __hash__(self) -> int:
        return hash((self.events, self.step))

    def add(self, *events: Event) -> PrivacyAccountant:
        """A new accountant with ``events`` appended."""
        return replace(self, events=self.events + tuple(events))

    # ----------------------------------------------------------------- summaries
    @cached_property
    def _active(self) -> tuple[Event, ...]:
        out: list[Event] = []
        for e in self.events:
            if e.count == 0:
                continue
            if isinstance(e, Gaussian) and e.mu == 0:
                continue
            if not isinstance(e, Gaussian) and e.pure_epsilon == 0:
                continue
            out.append(e)
        return tuple(out)

    @cached_property
    def _blatant(self) -> bool:
        """Some event reveals the answer with probability 1 (epsilon = inf / no noise)."""
        return any(
            (e.mu if isinstance(e, Gaussian) else e.pure_epsilon) == math.inf for e in self._active
        )

    @cached_property
    def _overflows(self) -> bool:
        """The losses of the pure-DP events sum beyond the largest double (1.8e308): every
        route then needs a loss no double holds, and the answers are the safe ``inf`` /
        ``delta = 1``."""
        pure = [e for e in self._active if not isinstance(e, Gaussian)]
        eps = [e.pure_epsilon for e in pure]
        return bool(pure) and basic_composition(eps, counts=[e.count for e in pure]) == math.inf

    @cached_property
    def _pure(self) -> tuple[list[float], list[int]]:
        eps = [e.pure_epsilon for e in self._active]
        return eps, [e.count for e in self._active]

    @cached_property
    def _rr_groups(self) -> dict[tuple[float, int], int] | None:
        """``{(epsilon, k): total count}`` if every active event is RR, else None."""
        groups: dict[tuple[float, int], int] = {}
        for e in self._active:
            if not isinstance(e, RandomizedResponse):
                return None
            groups[(e.epsilon, e.k)] = groups.get((e.epsilon, e.k), 0) + e.count
        return groups

    @cached_property
    def lattice(self) -> float | None:
        """The common lattice step of the RR epsilons, if the optimum is computed exactly."""
        groups = self._rr_groups
        if not groups or self._blatant:
            return None
        keys = list(groups)
        return common_lattice([e for e, _ in keys], counts=[groups[k] for k in keys])

    @property
    def optimal_is_exact(self) -> bool:
        """Whether ``method="optimal"`` is the exact optimum (no discretisation)."""
        return self._exact_kind() is not None

    def _exact_kind(self) -> str | None:
        """The exact route of ``"optimal"``: ``"none"`` (no active event), ``"blatant"``,
        ``"binomial"``, ``"rr-pld"`` (one k-ary group), ``"lattice"``, ``"gdp"``; or
        ``None`` (the pessimistic PLD)."""
        if not self._active:
            return "none"
        if self._blatant or self._overflows:
            return "blatant"
        if all(isinstance(e, Gaussian) for e in self._active):
            return "gdp"
        groups = self._rr_groups
        if groups is None:
            return None
        if len(groups) == 1:
            return "binomial" if next(iter(groups))[1] == 2 else "rr-pld"
        return "lattice" if self.lattice is not None else None

    def route(self, method: str = "optimal") -> str:
        """How ``method`` computes its answer for these events, in words (for ``"optimal"``:
        which exact route, or that the pessimistic PLD is used).

        >>> from deniable.accounting import Gaussian, Laplace
        >>> PrivacyAccountant([Gaussian(2.0, count=4)]).route()
        'exact: GDP composition (Dong-Roth-Su 2019)'
        >>> PrivacyAccountant([RandomizedResponse(1.0, k=4, count=3)]).route()
        'exact: k-ary RR PLD on the lattice epsilon Z'
        >>> PrivacyAccountant([Laplace(1.0)]).route()
        'not exact here: pessimistic PLD (see pld)'
        """
        m = v.choice("method", method, COMPOSITION_METHODS)
        if m == "optimal":
            kind = self._exact_kind()
            if kind == "lattice":
                return f"exact: lattice PLD, step {self.lattice:g}"
            return {
                "none": "exact: every event has epsilon = 0",
                "blatant": "exact: an event has epsilon = inf (or the losses overflow)",
                "binomial": "exact: binomial sum (KOV 2015 Thm 3.3)",
                "rr-pld": "exact: k-ary RR PLD on the lattice epsilon Z",
                "gdp": "exact: GDP composition (Dong-Roth-Su 2019)",
            }.get(kind or "", "not exact here: pessimistic PLD (see pld)")
        if m == "pld":
            return f"pessimistic PLD, step {self.grid_step():g}"
        if m == "best":
            return "the smallest of " + ", ".join(self._applicable())
        return _ROUTES[m]

    def zcdp(self) -> ZCDP:
        """The zCDP guarantee: sharp ``eps tanh(eps/2)`` per pure-DP use, ``mu^2/2`` per
        Gaussian use, summed."""
        rho = 0.0
        for e in self._active:
            # mu^2 / 2 per Gaussian use, scaled so that a tiny mu does not underflow to 0
            if isinstance(e, Gaussian):
                per = half_square_up(e.mu)
            else:
                per = pure_to_zcdp(e.pure_epsilon).rho
            rho += _as_float(e.count) * per
        return ZCDP(up(rho) if math.isfinite(rho) else math.inf)

    def rdp_curve(self, alphas: Any) -> Any:
        """The summed Renyi curve at ``alphas`` (k-ary RR, Laplace and Gaussian exactly): a
        ``float`` for a scalar order, an array of the same shape for an array of orders.

        >>> acct = PrivacyAccountant([RandomizedResponse(1.0, count=2)])
        >>> acct.rdp_curve(math.inf), acct.rdp_curve([2.0, math.inf]).shape
        (2.0, (2,))
        """
        return scalar_or_array(self._rdp_curve(alpha_array(alphas)), alphas)

    def _rdp_curve(self, a: FloatArray) -> FloatArray:
        total = np.zeros_like(a)
        for e in self._active:
            if isinstance(e, RandomizedResponse):
                part = rr_rdp(e.epsilon, a, k=e.k)
            elif isinstance(e, Laplace):
                part = laplace_rdp(e.pure_epsilon, a)
            else:
                part = a * half_square_up(e.mu) * (1 + MARGIN)
            total = total + _as_float(e.count) * np.asarray(part)
        out: FloatArray = total * (1 + MARGIN)
        return out

    def gdp(self) -> GDP:
        """The composed Gaussian-DP guarantee; only for Gaussian events."""
        if any(not isinstance(e, Gaussian) for e in self._active):
            raise PrivacyError(
                "`method` 'gdp' needs Gaussian events only; use 'pld', 'rdp' or 'zcdp'."
            )
        mus: list[float] = []
        for e in self._active:
            assert isinstance(e, Gaussian)
            mus.append(math.sqrt(_as_float(e.count)) * e.mu)
        return compose_gdp(mus)

    # ----------------------------------------------------------------- size limits
    def _limit(self, method: str) -> str | None:
        """Why ``method`` would take too long or too much memory here (None: it will not)."""
        if method not in ("optimal", "pld") or self._blatant or self._overflows:
            return None
        single = self._single_binary()
        if method == "optimal" and single is not None:
            if single[1] <= MAX_EXACT_COUNT:
                return None
            return (
                f"`count` must be an integer in [0, {v.fmt_limit(MAX_EXACT_COUNT)}] for method "
                f"'optimal' "
                f"(an exact sum of count + 1 binomial terms; {_CLOSED_FORMS}), got {single[1]}."
            )
        pure = [e for e in self._active if not isinstance(e, Gaussian)]
        total = sum(e.count for e in pure)
        kary = sum(e.count for e in pure if isinstance(e, RandomizedResponse) and e.k > 2)
        if total > MAX_PLD_COUNT:
            return (
                f"`count` must be an integer in [0, {v.fmt_limit(MAX_PLD_COUNT)}] in all for "
                f"method {method!r} (a privacy loss distribution with a point per loss value; "
                f"{_CLOSED_FORMS}), got {total}."
            )
        if kary > MAX_KARY_PLD_COUNT:
            return (
                f"`count` must be an integer in [0, {MAX_KARY_PLD_COUNT}] in all for k-ary "
                f"questions (k > 2) with method {method!r} (time quadratic in the count; "
                f"{_CLOSED_FORMS}), got {kary}."
            )
        return None

    def _check_size(self, method: str) -> None:
        reason = self._limit(method)
        if reason is not None:
            raise ParameterError(reason)

    # ----------------------------------------------------------------- PLDs
    def pld(self, rounding: str = "up") -> PrivacyLossDistribution:
        """The discretised PLD of all events (``rounding`` ``"up"`` or ``"down"``)."""
        v.choice("rounding", rounding, ("up", "down"))
        key = f"pld-{rounding}"
        if key not in self._cache:
            self._cache[key] = self._build_pld(rounding)
        out: PrivacyLossDistribution = self._cache[key]
        return out

    def exact_pld(self) -> PrivacyLossDistribution | None:
        """The exact PLD when every event is RR, in one group (any epsilon: the lattice
        ``epsilon Z``) or on a common lattice, else None."""
        if "pld-exact" not in self._cache:
            groups, g = self._rr_groups, self.lattice
            pld = None
            if groups and len(groups) == 1 and not self._blatant:
                (e, k), c = next(iter(groups.items()))
                pld = rr_pld(e, k=k, count=c)  # exact, on the lattice e Z
            elif groups and g is not None:
                parts = [
                    rr_pld(e, k=k, count=c, step=g, rounding="exact")
                    for (e, k), c in groups.items()
                ]
                pld = compose_all(parts)
            self._cache["pld-exact"] = pld
        res: PrivacyLossDistribution | None = self._cache["pld-exact"]
        return res

    def grid_step(self) -> float:
        """The discretisation step used by ``pld``: ``step``, coarsened so the composed grid
        has at most 2^20 points."""
        # each part's span is divided by the grid size before summing, so that a huge
        # epsilon (1e300) does not overflow the total
        per_point = 0.0
        mu2 = 0.0
        for e in self._active:
            if isinstance(e, Gaussian):
                mu2 += _as_float(e.count) * (e.mu * e.mu)
            else:
                per_point += 2 * _as_float(e.count) * (e.pure_epsilon / _MAX_GRID)
        if mu2:
            per_point += (2 * 37.5 * math.sqrt(mu2) + 2) / _MAX_GRID
        return max(self.step, per_point) if math.isfinite(per_point) else self.step

    def _build_pld(self, rounding: str) -> PrivacyLossDistribution:
        h = self.grid_step()
        parts: list[PrivacyLossDistribution] = []
        mus: list[float] = []
        for e in self._active:
            if isinstance(e, RandomizedResponse):
                parts.append(rr_pld(e.epsilon, k=e.k, count=e.count, step=h, rounding=rounding))
            elif isinstance(e, Laplace):
                parts.append(
                    laplace_pld(
                        e.scale, sensitivity=e.sensitivity, count=e.count, step=h, rounding=rounding
                    )
                )
            else:
                mus.append(math.sqrt(_as_float(e.count)) * e.mu)
        if mus:
            # Gaussian PLDs compose exactly: N(mu^2/2, mu^2) with mu = sqrt(sum mu_i^2), taken
            # from the GDP composition (hypot: no underflow of a tiny mu^2, no overflow)
            mu = compose_gdp(mus).mu if rounding == "up" else math.hypot(*mus)
            parts.append(gaussian_pld(1.0, sensitivity=mu, step=h, rounding=rounding))
        if not parts:
            return rr_pld(0.0, step=h, rounding=rounding)
        return compose_all(parts)

    def epsilon_bounds(self, delta: float) -> tuple[float, float]:
        """``(lower, upper)`` bracket on the exact optimal epsilon at ``delta`` from the
        optimistic and pessimistic discretisations (equal when the PLD is exact)."""
        d = check_delta(delta)
        exact = self._exact_epsilon(d)
        if exact is not None:
            return exact, exact
        return self.pld("down").epsilon(d), self.pld("up").epsilon(d)

    # ----------------------------------------------------------------- answers
    def epsilon(self, delta: float, method: str = "optimal") -> float:
        """Total epsilon at ``delta`` (in (0, 1)) by ``method``; never below the true value."""
        d = check_delta(delta)
        m = v.choice("method", method, COMPOSITION_METHODS)
        if not self._active:
            return 0.0
        if self._blatant or self._overflows:
            return math.inf
        if m == "best":
            return min(self.epsilon(d, x) for x in self._applicable())
        self._check_size(m)
        eps, cnt = self._pure
        if m in ("basic", "advanced", "kov"):
            if any(isinstance(e, Gaussian) for e in self._active):
                return math.inf  # Gaussian noise has no pure-DP epsilon
            if m == "basic":
                return basic_composition(eps, counts=cnt)
            fn = advanced_composition if m == "advanced" else kov_composition
            return fn(eps, d, counts=cnt)
        if m in ("optimal", "pld"):
            exact = self._exact_epsilon(d) if m == "optimal" else None
            out = exact if exact is not None else self.pld("up").epsilon(d)
            return min(out, self._basic())  # delta(basic) = 0 exactly
        if m == "rdp":
            return rdp_curve_epsilon(self._rdp_curve, d)
        if m == "zcdp":
            return zcdp_epsilon(self.zcdp(), d)
        return gdp_epsilon(self.gdp(), d)

    def delta(self, epsilon: float, method: str = "optimal") -> float:
        """Total delta at ``epsilon`` by ``method``; never below the true value (1 is vacuous)."""
        t = check_epsilon(epsilon)
        m = v.choice("method", method, COMPOSITION_METHODS)
        if not self._active or t == math.inf:
            return 0.0
        if self._blatant or self._overflows:
            return 1.0
        if m == "best":
            return min(self.delta(t, x) for x in self._applicable())
        self._check_size(m)
        eps, cnt = self._pure
        if m in ("basic", "advanced", "kov"):
            if any(isinstance(e, Gaussian) for e in self._active):
                return 1.0
            if t >= basic_composition(eps, counts=cnt):
                return 0.0
            if m == "basic":
                return 1.0
            fn = advanced_composition if m == "advanced" else kov_composition
            return _invert_in_delta(lambda d: fn(eps, d, counts=cnt), t)
        if m in ("optimal", "pld") and t >= self._basic():
            return 0.0
        if m == "optimal":
            single = self._single_binary()
            if single is not None:
                return optimal_rr_delta(single[0], t, count=single[1])
            if self._exact_kind() == "gdp":
                return gdp_delta(self.gdp(), t)
            exact = self.exact_pld()
            return (exact if exact is not None else self.pld("up")).delta(t)
        if m == "pld":
            return self.pld("up").delta(t)
        if m == "rdp":
            return rdp_curve_delta(self._rdp_curve, t)
        if m == "zcdp":
            return zcdp_delta(self.zcdp(), t)
        return gdp_delta(self.gdp(), t)

    def compare(self, delta: float, description: str = "") -> CompositionTable:
        """Every applicable method side by side at ``delta``."""
        d = check_delta(delta)
        rows = []
        for m in self._applicable(with_pure=True):
            rows.append(CompositionRow(m, self.epsilon(d, m), self._note(m, d)))
        skipped = [m for m in ("optimal", "pld") if self._limit(m) is not None]
        if skipped:
            total = sum(e.count for e in self._active)
            description += (
                f"{'; ' if description else ''}{' and '.join(skipped)} not computed "
                f"(count {total} is beyond their size limit)"
            )
        return CompositionTable(d, tuple(rows), description)

    # ----------------------------------------------------------------- helpers
    def _basic(self) -> float:
        eps, cnt = self._pure
        return basic_composition(eps, counts=cnt)

    def _single_binary(self) -> tuple[float, int] | None:
        groups = self._rr_groups
        if groups and len(groups) == 1:
            (e, k), c = next(iter(groups.items()))
            if k == 2:
                return e, c
        return None

    def _exact_epsilon(self, d: float) -> float | None:
        if not self._active:
            return 0.0
        if self._blatant:
            return math.inf
        self._check_size("optimal")
        single = self._single_binary()
        if single is not None:
            return optimal_rr_epsilon(single[0], d, count=single[1])
        if self._exact_kind() == "gdp":
            return gdp_epsilon(self.gdp(), d)
        exact = self.exact_pld()
        return exact.epsilon(d) if exact is not None else None

    def _applicable(self, with_pure: bool = False) -> list[str]:
        gaussian = any(isinstance(e, Gaussian) for e in self._active)
        out = [] if gaussian and not with_pure else ["basic", "advanced", "kov"]
        out += [m for m in ("optimal", "pld") if self._limit(m) is None]
        out += ["rdp", "zcdp"]
        if self._active and all(isinstance(e, Gaussian) for e in self._active):
            out.append("gdp")
        return out

    def _note(self, m: str, d: float) -> str:
        gaussian = any(isinstance(e, Gaussian) for e in self._active)
        if m in ("basic", "advanced", "kov") and gaussian:
            return "n/a: Gaussian noise has no pure-DP epsilon"
        if self._blatant:
            return "an event has epsilon = inf"
        if self._overflows:
            return "the losses sum beyond the largest double"
        if m == "optimal":
            if not self._active:
                return "exact: every question has epsilon = 0"
            return self.route("optimal")
        if m == "zcdp":
            return f"rho = {self.zcdp().rho:.4g}, CKS 2020 conversion"
        if m == "pld":
            if not self._active or self._blatant:
                return "pessimistic PLD"
            lo = self.pld("down").epsilon(d)
            return f"pessimistic PLD, step {self.grid_step():g}; true value >= {format_epsilon(lo)}"
        return _ROUTES[m]


def _as_float(count: int) -> float:
    """A count as a float; ``inf`` beyond the largest double (a sum that large is ``inf``)."""
    return float(count) if count < 2**1023 else math.inf


def _invert_in_delta(eps_of: Callable[[float], float], target: float) -> float:
    """Smallest delta (rounded up) with ``eps_of(delta) <= target``; 1.0 if none below 1."""
    top = 1.0 - 2.0**-53
    if eps_of(top) > target:
        return 1.0
    return upper_root(eps_of, target, 1e-300, top)
