"""Empirical privacy audits and the "parallel databases" view of a query.

**Audit.**  Run a mechanism many times on two neighbouring inputs ``x0`` and ``x1`` and, for
each output event ``S``, bound ``ln(P[M(x0) in S] / P[M(x1) in S])`` from below with
Clopper-Pearson intervals (Clopper & Pearson 1934): the lower bound of ``p0`` over the upper
bound of ``p1``, and the same the other way round.  An epsilon-DP mechanism has every such
ratio at most ``e^eps``, so if the largest lower bound exceeds the claimed epsilon, the
claim is false, with confidence ``level`` (Ding et al. 2018, "Detecting violations of
differential privacy"; Jagielski, Ullman & Oprea 2020).  This is how a published LDP
library's unary encoding, calibrated per bit as if one answer changed one bit, was found to
be ``2 eps``- rather than ``eps``-LDP; :class:`UnaryEncoding` reproduces that mistake.

Multiple testing: with ``m`` events, two inputs and a lower and an upper bound each, every
one-sided Clopper-Pearson bound is taken at ``(1 - level) / (4 m)`` (Bonferroni), so the
reported maximum is a valid lower bound on the true epsilon with probability ``>= level``
whatever the mechanism.  Events must not be chosen by looking at the same samples: designs
use their whole report space (known in advance); for a user callable without ``event`` the
events are the distinct reports observed, which is a heuristic (the correction counts only
observed values); pass ``event`` for a guarantee.

**Approximate DP.**  With a ``claimed_delta`` the bound on each event is
``ln((p_lo - delta) / p_hi)`` (Jagielski, Ullman & Oprea 2020): an (eps, delta)-DP mechanism
has ``P[M(x0) in S] <= e^eps P[M(x1) in S] + delta``, so a bound above ``eps`` refutes the
(eps, delta) claim.  This is how the Gaussian mechanisms are audited: a pure-epsilon audit
does not apply to them (their likelihood ratio is unbounded, so with enough trials any finite
pure claim is refuted).

**Two-group designs** (:func:`audit_two_group`): each group's channel is audited between
every pair of respondent types whose true answers differ, the neighbouring relation of
:func:`~deniable.designs.types_epsilon`.

**Parallel databases** (Dwork & Roth 2014, sec. 2.3): compute a query on a table and on
every table with one row removed.  The largest change is the query's *empirical* (local)
sensitivity at this table, a lower bound on its global sensitivity; a mechanism that adds
Laplace noise of scale ``b`` to the query hides row ``i`` up to a privacy loss
``|f(D) - f(D - i)| / b``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import stats

from deniable import _validation as v
from deniable.designs import Design, TwoGroupDesign
from deniable.exceptions import DataError, ParameterError, ParameterTypeError, PrivacyError
from deniable.explain import Table
from deniable.randomness import bernoulli, resolve_rng

__all__ = [
    "AuditResult",
    "LeaveOneOut",
    "UnaryEncoding",
    "audit",
    "audit_design",
    "audit_two_group",
    "clopper_pearson_bounds",
    "leave_one_out",
]

Event = Callable[[Any], Any] | set[Any] | frozenset[Any]


# --------------------------------------------------------------------------- bounds


def clopper_pearson_bounds(
    counts: npt.ArrayLike, n: int, alpha: float
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """One-sided Clopper-Pearson bounds at error ``alpha`` each, vectorized over ``counts``.

    ``lower = Beta^-1(alpha; c, n - c + 1)`` (0 when ``c = 0``) and
    ``upper = Beta^-1(1 - alpha; c + 1, n - c)`` (1 when ``c = n``).

    >>> lo, hi = clopper_pearson_bounds([0, 10], 10, 0.05)
    >>> float(lo[0]), round(float(hi[0]), 4), round(float(lo[1]), 4), float(hi[1])
    (0.0, 0.2589, 0.7411, 1.0)
    """
    c = np.asarray(counts, dtype=np.float64)
    size = v.integer("n", n, minimum=1)
    a = v.probability("alpha", alpha, low_open=True, high_open=True)
    if np.any(c < 0) or np.any(c > size):
        raise DataError(f"`counts` must be in [0, n] = [0, {size}], got {c.min()}..{c.max()}.")
    lo = np.zeros_like(c)
    hi = np.ones_like(c)
    pos = c > 0
    lo[pos] = stats.beta.ppf(a, c[pos], size - c[pos] + 1)
    below = c < size
    hi[below] = stats.beta.ppf(1 - a, c[below] + 1, size - c[below])
    return lo, hi


# --------------------------------------------------------------------------- result


def _num(x: float) -> float | str:
    return x if math.isfinite(x) else ("inf" if x > 0 else "-inf")


@dataclass(frozen=True)
class AuditResult:
    """The outcome of an audit: the confident lower bound on epsilon beside the claim.

    ``lower_bound`` is ``max(0, max over events and directions of ln((p_lo - delta) /
    p_hi))`` with ``delta = claimed_delta`` (0 for a pure claim); with probability at least
    ``level`` the mechanism's true epsilon at that delta is at least this.
    ``empirical_epsilon`` is the plain plug-in ``max |ln(c0 / c1)|`` (no confidence; ``inf``
    when an event was seen under one input only).  ``passed`` is ``lower_bound <=
    claimed_epsilon``; :meth:`raise_if_failed` raises :class:`PrivacyError` otherwise.
    """

    claimed_epsilon: float
    lower_bound: float
    empirical_epsilon: float
    level: float
    trials: int
    seed: int | None
    worst_event: str
    worst_pair: tuple[str, str]
    events: Table = field(repr=False)
    claimed_delta: float = 0.0

    @property
    def passed(self) -> bool:
        """True when the data do not refute the claimed epsilon."""
        return self.lower_bound <= self.claimed_epsilon

    def raise_if_failed(self) -> AuditResult:
        """Raise :class:`PrivacyError` if the audit failed; otherwise return ``self``."""
        if not self.passed:
            a, b = self.worst_pair
            at = f" at delta = {self.claimed_delta:g}" if self.claimed_delta else ""
            raise PrivacyError(
                f"audit FAILED: epsilon >= {self.lower_bound:.4f}{at} with confidence "
                f"{self.level:g} (event {self.worst_event}, {a} vs {b}, {self.trials} trials "
                f"per input, seed {self.seed}), but the claimed epsilon is "
                f"{_num(self.claimed_epsilon)}."
            )
        return self

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON summary (infinities as strings)."""
        return {
            "claimed_epsilon": _num(self.claimed_epsilon),
            "claimed_delta": self.claimed_delta,
            "lower_bound": _num(self.lower_bound),
            "empirical_epsilon": _num(self.empirical_epsilon),
            "passed": self.passed,
            "level": self.level,
            "trials": self.trials,
            "seed": self.seed,
            "worst_event": self.worst_event,
            "worst_pair": list(self.worst_pair),
            "events": self.events.to_json(),
        }

    def __str__(self) -> str:
        verdict = "passed" if self.passed else "FAILED"
        a, b = self.worst_pair
        at = f" at delta {self.claimed_delta:g}" if self.claimed_delta else ""
        return (
            f"audit {verdict}: claimed epsilon {_num(float(f'{self.claimed_epsilon:.6g}'))}"
            f"{at}, "
            f"{self.level:g}-confidence lower bound {self.lower_bound:.4f} "
            f"(plug-in {_num(round(self.empirical_epsilon, 4))}; worst event {self.worst_event}, "
            f"{a} vs {b}; {self.trials} trials per input, seed {self.seed})"
        )


# --------------------------------------------------------------------------- sampling


def _sample(
    mechanism: Any, x: Any, gen: np.random.Generator, trials: int, vectorized: bool
) -> npt.NDArray[Any]:
    if isinstance(mechanism, Design):
        out = mechanism.randomize(np.full(trials, x), rng=gen)
    elif vectorized:
        out = np.asarray(mechanism(x, gen, trials))
    else:  # one call per trial: slow, but any callable works
        out = np.asarray([mechanism(x, gen) for _ in range(trials)])
    if out.ndim == 0 or out.shape[0] != trials:
        raise DataError(
            f"the mechanism must return one report per trial ({trials}), got an array of "
            f"shape {out.shape}."
        )
    return out


def _label(value: Any) -> str:
    arr = np.asarray(value)
    return f"report = {arr.tolist()}"


def _event_masks(
    samples: Sequence[npt.NDArray[Any]], event: Any, design: Design | None
) -> tuple[list[str], npt.NDArray[np.int64]]:
    """Counts ``[input, event]`` and event labels."""
    if event is None:
        if design is not None:
            values = np.arange(design.n_reports)
            counts = np.stack(
                [np.bincount(s.astype(np.int64), minlength=design.n_reports) for s in samples]
            )
            return [_label(r) for r in values], counts
        flat = [s.reshape(s.shape[0], -1) for s in samples]
        uniq, inverse = np.unique(np.concatenate(flat), axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        counts = np.zeros((len(samples), uniq.shape[0]), dtype=np.int64)
        start = 0
        for i, s in enumerate(flat):
            counts[i] = np.bincount(inverse[start : start + s.shape[0]], minlength=uniq.shape[0])
            start += s.shape[0]
        first = samples[0]
        labels = [_label(u.reshape(first.shape[1:]) if first.ndim > 1 else u[0]) for u in uniq]
        return labels, counts
    items: list[Any]
    if callable(event) or isinstance(event, set | frozenset):
        items = [event]
    elif isinstance(event, Sequence) and not isinstance(event, str):
        items = list(event)
    else:
        raise ParameterTypeError(
            "`event` must be None, a callable (reports -> boolean mask), a set of report "
            f"values, or a list of these, got {type(event).__name__}."
        )
    if not items:
        raise ParameterError("`event` must hold at least one event, got an empty list.")
    labels = []
    counts = np.zeros((len(samples), len(items)), dtype=np.int64)
    for j, ev in enumerate(items):
        if callable(ev):
            labels.append(getattr(ev, "__name__", f"event[{j}]").replace("<lambda>", f"event[{j}]"))
        elif isinstance(ev, set | frozenset):
            labels.append(f"report in {sorted(ev, key=repr)}")
        else:
            raise ParameterTypeError(
                f"`event[{j}]` must be a callable (reports -> boolean mask) or a set of report "
                f"values, got {type(ev).__name__}."
            )
        for i, s in enumerate(samples):
            if callable(ev):
                mask = np.asarray(ev(s))
            else:
                if s.ndim != 1:
                    raise ParameterError(
                        f"`event[{j}]`: a set of values needs scalar reports; these have shape "
                        f"{s.shape[1:]}; give a callable instead."
                    )
                mask = np.isin(s, list(ev))
            if mask.dtype != np.bool_ or mask.shape != (s.shape[0],):
                raise DataError(
                    f"`event[{j}]` must return a boolean mask of shape ({s.shape[0]},), got "
                    f"dtype {mask.dtype} and shape {mask.shape}."
                )
            counts[i, j] = int(np.count_nonzero(mask))
    return labels, counts


def _evaluate(
    counts: npt.NDArray[np.int64],
    labels: list[str],
    names: list[str],
    pairs: list[tuple[int, int]],
    *,
    trials: int,
    level: float,
    claimed: float,
    seed: int | None,
    delta: float = 0.0,
) -> AuditResult:
    n_inputs, m = counts.shape
    # every one-sided bound (lower and upper, each input used, each event) at alpha / (2 k m)
    alpha = (1 - level) / (2 * n_inputs * m)
    lo, hi = clopper_pearson_bounds(counts.reshape(-1), trials, alpha)
    lo, hi = lo.reshape(counts.shape), hi.reshape(counts.shape)
    with np.errstate(divide="ignore"):
        # (eps, delta)-DP: p_i <= e^eps p_j + delta, so ln((p_i - delta) / p_j) <= eps
        log_lo, log_hi = np.log(np.maximum(lo - delta, 0.0)), np.log(hi)
        log_c = np.log(counts.astype(np.float64))
    best, best_label, best_pair = -math.inf, labels[0], (names[0], names[1])
    emp = 0.0
    rows = []
    for a, b in pairs:
        for direction in ((a, b), (b, a)):
            i, j = direction
            lb = log_lo[i] - log_hi[j]  # ln(p_i lower / p_j upper), -inf where c_i = 0
            k = int(np.argmax(lb))
            if lb[k] > best:
                best, best_label, best_pair = float(lb[k]), labels[k], (names[i], names[j])
            seen = (counts[i] > 0) | (counts[j] > 0)
            with np.errstate(invalid="ignore"):
                ratio = np.where(seen, log_c[i] - log_c[j], -math.inf)
            emp = max(emp, float(np.nanmax(np.where(np.isnan(ratio), -math.inf, ratio))))
        for e in range(m):
            rows.append(
                (
                    names[a],
                    names[b],
                    labels[e],
                    int(counts[a, e]),
                    int(counts[b, e]),
                    float(log_lo[a, e] - log_hi[b, e]),
                    float(log_lo[b, e] - log_hi[a, e]),
                )
            )
    table = Table(
        ("input a", "input b", "event", "count a", "count b", "lower ln(pa/pb)", "lower ln(pb/pa)"),
        tuple(rows),
        title=f"audit events ({trials} trials per input, confidence {level:g})",
    )
    return AuditResult(
        claimed_epsilon=claimed,
        lower_bound=max(0.0, best),
        empirical_epsilon=emp,
        level=level,
        trials=trials,
        seed=seed,
        worst_event=best_label,
        worst_pair=best_pair,
        events=table,
        claimed_delta=delta,
    )


def _common(
    claimed_epsilon: Any, trials: Any, seed: Any, level: Any
) -> tuple[float, int, int, float, np.random.Generator]:
    claimed = v.positive("claimed_epsilon", claimed_epsilon, allow_zero=True, allow_inf=True)
    n = v.integer("trials", trials, minimum=1, maximum=100_000_000)
    lvl = v.level(level)
    if seed is None:
        seed = int(np.random.SeedSequence().entropy) % (1 << 63)  # type: ignore[arg-type]
    s = v.integer("seed", seed, minimum=0)
    gen = resolve_rng(s)
    assert isinstance(gen, np.random.Generator)
    return claimed, n, s, lvl, gen


def audit(
    mechanism: Design | Callable[..., Any],
    input0: Any,
    input1: Any,
    *,
    claimed_epsilon: float,
    trials: int = 100_000,
    seed: int | None = None,
    level: float = 0.95,
    event: Any = None,
    vectorized: bool | None = None,
    claimed_delta: float = 0.0,
) -> AuditResult:
    """Audit ``mechanism`` on the neighbouring inputs ``input0``, ``input1``.

    Parameters
    ----------
    mechanism : Design or callable
        A design (``randomize(np.full(trials, x))`` in one call), a vectorized callable
        ``f(x, rng, trials) -> array`` with one report per row (``vectorized=True``, or an
        attribute ``vectorized = True`` on the callable), or any callable
        ``f(x, rng) -> report`` (called ``trials`` times: slow).  Inputs may be any objects
        the callable accepts (tables, for instance).
    claimed_epsilon : float
        The epsilon the mechanism claims, in ``[0, inf]``.
    trials : int
        Runs per input.
    seed : int, optional
        Seeds the ``numpy.random.Generator`` passed to the mechanism; ``None`` draws one and
        records it in the result so that the audit can be repeated.
    level : float
        Confidence of the lower bound, Bonferroni-corrected over events and directions.
    event : optional
        ``None``: every report value.  Or one event / a list of events, each a callable
        ``reports -> boolean mask`` or a ``set`` of report values.
    claimed_delta : float
        For an (epsilon, delta) claim (the Gaussian mechanisms), in ``[0, 1)``: each event's
        bound becomes ``ln((p_lo - delta) / p_hi)``.  Default 0: a pure claim.

    Examples
    --------
    >>> from deniable import Warner
    >>> res = audit(Warner(0.75), 0, 1, claimed_epsilon=math.log(3), trials=50_000, seed=1)
    >>> res.passed, 1.0 < res.lower_bound <= math.log(3)
    (True, True)
    >>> broken = UnaryEncoding(1.0, k=4, calibration="exact")      # really 2-LDP
    >>> audit(broken, 0, 1, claimed_epsilon=1.0, trials=50_000, seed=1).passed
    False
    """
    claimed, n, s, lvl, gen = _common(claimed_epsilon, trials, seed, level)
    dlt = v.probability("claimed_delta", claimed_delta, high_open=True)
    vec = getattr(mechanism, "vectorized", False) if vectorized is None else vectorized
    if not isinstance(vec, bool):
        raise ParameterTypeError(f"`vectorized` must be True, False or None, got {vec!r}.")
    design = mechanism if isinstance(mechanism, Design) else None
    if design is None and not callable(mechanism):
        raise ParameterTypeError(
            f"`mechanism` must be a Design or a callable, got {type(mechanism).__name__}."
        )
    if design is not None:
        for name, x in (("input0", input0), ("input1", input1)):
            v.integer(name, x, minimum=0, maximum=design.n_truths - 1)
    samples = [_sample(mechanism, x, gen, n, vec) for x in (input0, input1)]
    labels, counts = _event_masks(samples, event, design)
    return _evaluate(
        counts,
        labels,
        ["input0", "input1"],
        [(0, 1)],
        trials=n,
        level=lvl,
        claimed=claimed,
        seed=s,
        delta=dlt,
    )


def audit_design(
    design: Design,
    *,
    claimed_epsilon: float | None = None,
    trials: int = 100_000,
    seed: int | None = None,
    level: float = 0.95,
) -> AuditResult:
    """Audit a design over *every* pair of true answers (default claim: ``design.epsilon``).

    Each true answer is sampled once (``trials`` reports); the bounds of all answers and
    report values are Bonferroni-corrected together, so the result holds for the worst pair.

    >>> from deniable import Categorical
    >>> audit_design(Categorical.from_epsilon(1.0, k=3), trials=20_000, seed=2).passed
    True
    """
    if not isinstance(design, Design):
        raise ParameterTypeError(f"`design` must be a Design, got {type(design).__name__}.")
    if isinstance(design, TwoGroupDesign):
        raise ParameterError(
            f"`design` must be a one-group design; {design.name!r} randomizes two groups "
            "with latent respondent types: audit it with `audit_two_group` instead."
        )
    claim = design.epsilon if claimed_epsilon is None else claimed_epsilon
    claimed, n, s, lvl, gen = _common(claim, trials, seed, level)
    k = design.n_truths
    samples = [_sample(design, x, gen, n, True) for x in range(k)]
    labels, counts = _event_masks(samples, None, design)
    pairs = [(a, b) for a in range(k) for b in range(a + 1, k)]
    return _evaluate(
        counts,
        labels,
        [f"truth {x}" for x in range(k)],
        pairs,
        trials=n,
        level=lvl,
        claimed=claimed,
        seed=s,
    )


def audit_two_group(
    design: TwoGroupDesign,
    *,
    claimed_epsilon: float | None = None,
    compliant: bool = False,
    trials: int = 100_000,
    seed: int | None = None,
    level: float = 0.95,
) -> AuditResult:
    """Audit a two-group design: each group's channel between respondent types.

    A two-group design randomizes *respondent types* (the true answer with whatever else
    drives the report: the answer to an unrelated question, being a cheater, a carrier's
    honesty), and its epsilon is the largest log-ratio of one group's report probabilities
    between two types whose true answers differ (:func:`~deniable.designs.types_epsilon`;
    the group is known to the collector).  Every (group, type) is sampled ``trials`` times
    with the design's own randomizer (the one its ``randomize`` uses, driven by type
    indices), and every such pair within a group is compared, Bonferroni-corrected together.
    With ``compliant=True`` only compliant types are compared and the default claim is
    :attr:`~deniable.designs.TwoGroupDesign.epsilon_compliant`; otherwise the default claim
    is :attr:`~deniable.designs.TwoGroupDesign.epsilon` (infinite for every two-group design
    here: some report is impossible for one type and possible for another, which the audit
    finds as an infinite plug-in ratio).

    >>> from deniable.designs import StochasticLieDetector
    >>> res = audit_two_group(StochasticLieDetector(2 / 12, 10 / 12), trials=20_000, seed=1)
    >>> res.claimed_epsilon, res.empirical_epsilon, res.lower_bound > 5
    (inf, inf, True)
    """
    if not isinstance(design, TwoGroupDesign):
        raise ParameterTypeError(f"`design` must be a TwoGroupDesign, got {type(design).__name__}.")
    if not isinstance(compliant, bool):
        raise ParameterTypeError(f"`compliant` must be True or False, got {compliant!r}.")
    if claimed_epsilon is None:
        claimed_epsilon = design.epsilon_compliant if compliant else design.epsilon
    claimed, n, s, lvl, gen = _common(claimed_epsilon, trials, seed, level)
    types = design.respondent_types
    keep = [i for i, t in enumerate(types) if t.compliant or not compliant]
    inputs = [(g, i) for g in (1, 2) for i in keep]
    samples = [
        design._randomize_types(
            np.full(n, i, dtype=np.intp), np.full(n, g, dtype=np.intp), gen
        ).astype(np.int64)
        for g, i in inputs
    ]
    counts = np.stack([np.bincount(x, minlength=2) for x in samples])
    pairs = [
        (a, b)
        for a in range(len(inputs))
        for b in range(a + 1, len(inputs))
        if inputs[a][0] == inputs[b][0] and types[inputs[a][1]].truth != types[inputs[b][1]].truth
    ]
    return _evaluate(
        counts,
        [_label(0), _label(1)],
        [f"group {g}: {types[i].label}" for g, i in inputs],
        pairs,
        trials=n,
        level=lvl,
        claimed=claimed,
        seed=s,
    )


# --------------------------------------------------------------------------- broken mechanism


@dataclass(frozen=True)
class UnaryEncoding:
    """Symmetric unary (one-hot) encoding of a category in ``0..k-1``: each of the ``k`` bits
    of the one-hot vector is kept with probability ``t`` and flipped otherwise.

    Changing the answer changes *two* bits, so the true epsilon is
    ``2 ln(t / (1 - t))`` (Wang et al. 2017, "Locally differentially private protocols for
    frequency estimation").  ``calibration="half"`` uses ``t = e^(eps/2) / (1 + e^(eps/2))``
    and is exactly ``eps``-LDP; ``calibration="exact"`` uses ``t = e^eps / (1 + e^eps)``, the
    one-bit calibration, and is really ``2 eps``-LDP: the deliberate bug the audit catches.

    A vectorized mechanism for :func:`audit`: ``mechanism(x, rng, trials)`` returns a
    ``(trials, k)`` array of bits.
    """

    epsilon_parameter: float
    k: int
    calibration: str = "half"
    vectorized: bool = field(default=True, init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "epsilon_parameter", v.positive("epsilon_parameter", self.epsilon_parameter)
        )
        object.__setattr__(self, "k", v.integer("k", self.k, minimum=2, maximum=64))
        v.choice("calibration", self.calibration, ("exact", "half"))

    @property
    def keep_probability(self) -> float:
        """Probability that each bit is reported unchanged."""
        e = self.epsilon_parameter / (2 if self.calibration == "half" else 1)
        return 1 / (1 + math.exp(-e))

    @property
    def epsilon(self) -> float:
        # eps = 2 ln(t / (1 - t)): one answer change flips two coordinates' likelihoods
        t = self.keep_probability
        return 2 * math.log(t / (1 - t))

    def __call__(self, x: Any, rng: Any, trials: int) -> npt.NDArray[np.uint8]:
        cat = v.integer("x", x, minimum=0, maximum=self.k - 1)
        gen = resolve_rng(rng)
        onehot = np.zeros(self.k, dtype=np.uint8)
        onehot[cat] = 1
        flips = bernoulli(gen, 1 - self.keep_probability, trials * self.k).reshape(trials, self.k)
        return np.asarray(onehot[None, :] ^ flips, dtype=np.uint8)


# --------------------------------------------------------------------------- parallel databases


_QUERIES = ("count", "sum", "mean")


@dataclass(frozen=True)
class LeaveOneOut:
    """A query on a table and on every table with one row removed.

    ``value = f(D)``, ``without[i] = f(D - row i)``, ``differences[i] = |f(D) - f(D - i)|``
    (L1 over the outputs of a vector query); ``sensitivity = max_i differences[i]`` is the
    empirical (local) sensitivity at this table: a *lower* bound on the global sensitivity,
    never a substitute for it when calibrating noise (local sensitivity itself leaks).
    """

    query: str
    value: npt.NDArray[np.float64] = field(repr=False)
    without: npt.NDArray[np.float64] = field(repr=False)
    differences: npt.NDArray[np.float64] = field(repr=False)
    vectorized: bool

    @property
    def n(self) -> int:
        """Number of rows."""
        return int(self.differences.size)

    @property
    def sensitivity(self) -> float:
        """``max_i |f(D) - f(D - i)|``."""
        return float(self.differences.max())

    @property
    def row(self) -> int:
        """The row whose removal changes the query most."""
        return int(np.argmax(self.differences))

    def privacy_loss(self, scale: float) -> npt.NDArray[np.float64]:
        """Per-row privacy loss of ``f(D) + Laplace(scale)`` (iid per output coordinate).

        ``sup_z |ln(p_D(z) / p_{D - i}(z))| = |f(D) - f(D - i)|_1 / scale`` (Dwork, McSherry,
        Nissim & Smith 2006).  With ``scale = Delta / eps`` for a global sensitivity
        ``Delta >= sensitivity`` every entry is at most ``eps``.
        """
        b = v.positive("scale", scale)
        return self.differences / b

    def table(self, limit: int = 10) -> Table:
        """The first ``limit`` rows: value without the row and the difference."""
        lim = v.integer("limit", limit, minimum=1)
        rows = tuple(
            (i, _scalar(self.without[i]), float(self.differences[i]))
            for i in range(min(lim, self.n))
        )
        return Table(
            ("row removed", f"{self.query} without it", "change"),
            rows,
            title=f"{self.query} on the table: {_scalar(self.value)}; empirical sensitivity "
            f"{self.sensitivity:.6g} (row {self.row})",
        )


def _scalar(x: Any) -> Any:
    arr = np.asarray(x)
    return float(arr) if arr.ndim == 0 else arr.tolist()


def leave_one_out(
    table: npt.ArrayLike, query: str | Callable[[npt.NDArray[Any]], Any]
) -> LeaveOneOut:
    """Compute ``query`` on ``table`` and on each table with one row (axis 0) removed.

    ``query`` is ``"count"`` (number of nonzero entries per column), ``"sum"`` or ``"mean"``
    (vectorized by the leave-one-out identities ``f(D - i) = f(D) - x_i`` and
    ``mean(D - i) = (sum(D) - x_i) / (n - 1)``), or any callable ``f(table) -> number or
    array``, which is evaluated ``n + 1`` times in a Python loop over rows.

    >>> loo = leave_one_out([1, 0, 1, 1, 0], "count")
    >>> loo.without.tolist(), loo.sensitivity
    ([2.0, 3.0, 2.0, 2.0, 3.0], 1.0)
    >>> float(loo.privacy_loss(scale=1 / 0.5).max())       # Laplace(1/eps) at eps = 0.5
    0.5
    """
    data = np.asarray(table)
    if data.ndim == 0 or data.shape[0] < 1:
        raise DataError(f"`table` must have at least one row, got shape {data.shape}.")
    if data.dtype.kind not in "biuf":
        raise DataError(f"`table` must be numeric, got dtype {data.dtype}.")
    n = data.shape[0]
    x = data.astype(np.float64)
    if isinstance(query, str):
        v.choice("query", query, _QUERIES)
        if query == "count":
            nz = (x != 0).astype(np.float64)
            value = nz.sum(axis=0)
            without = value - nz
        elif query == "sum":
            value = x.sum(axis=0)
            without = value - x
        else:
            if n < 2:
                raise DataError(f"`table` needs at least 2 rows for a leave-one-out mean, got {n}.")
            total = x.sum(axis=0)
            value = total / n
            without = (total - x) / (n - 1)
        name, vectorized = query, True
    elif callable(query):
        value = np.asarray(query(data), dtype=np.float64)
        without = np.stack(
            [np.asarray(query(np.delete(data, i, axis=0)), dtype=np.float64) for i in range(n)]
        )
        name, vectorized = getattr(query, "__name__", "query"), False
    else:
        raise ParameterTypeError(
            f"`query` must be one of {', '.join(_QUERIES)} or a callable, "
            f"got {type(query).__name__}."
        )
    diff = np.abs(without - value).reshape(n, -1).sum(axis=1)
    return LeaveOneOut(name, value, without, diff, vectorized)
