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

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from deniable.audit._core import (
    _chunked_counts,
    _common,
    _count_events,
    _evaluate,
    _event_items,
    _event_masks,
    _label,
    _sample,
)
from deniable.audit._result import AuditResult
from deniable.audit._unary_encoding import UnaryEncoding
from deniable.common import format_epsilon, format_parameters
from deniable.common import validation as v
from deniable.designs import Design, TwoGroupDesign
from deniable.exceptions import ParameterError, ParameterTypeError

__all__ = [
    "MAX_AUDIT_CELLS",
    "MAX_AUDIT_DRAWS",
    "audit",
    "audit_design",
    "audit_unary",
]

Event = Callable[[Any], Any] | set[Any] | frozenset[Any]

#: The most (true answer, report) cells :func:`audit_design` counts (a categorical design
#: of k categories has k x k: k at most 1024).
MAX_AUDIT_CELLS = 1 << 20
#: The most reports :func:`audit_design` draws in all (``trials`` per true answer).
MAX_AUDIT_DRAWS = 10**9


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
    >>> import math
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
    inputs = (input0, input1)
    if design is not None and event is None:  # every report value, counted chunk by chunk
        m = design.n_reports
        labels = [_label(r) for r in range(m)]
        counts = np.stack(
            [_chunked_counts(design, x, gen, n, True,
                             lambda s: np.bincount(s.astype(np.int64), minlength=m))
             for x in inputs]
        )  # fmt: skip
    elif event is not None:  # the events given, counted chunk by chunk
        labels, items = _event_items(event)
        counts = np.stack(
            [_chunked_counts(mechanism, x, gen, n, vec, lambda s: _count_events(s, items))
             for x in inputs]
        )  # fmt: skip
    else:  # the distinct reports observed: every sample held at once
        samples = [_sample(mechanism, x, gen, n, vec) for x in inputs]
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

    Each true answer is sampled once (``trials`` reports, counted and dropped); the bounds
    of all answers and report values are Bonferroni-corrected together, so the result holds
    for the worst pair.  Time and memory are O(answers x reports) after the draws (the
    worst of the ``k (k - 1)`` ordered pairs of each report comes from its two largest and
    two smallest bounds), so a design may have at most :data:`MAX_AUDIT_CELLS` (2**20)
    such cells and ``answers x trials`` at most :data:`MAX_AUDIT_DRAWS` (10**9).  The
    events table lists every (pair, report) while there are at most 4,096 of them, else
    each report's worst pair.

    >>> from deniable import Categorical
    >>> audit_design(Categorical.from_epsilon(1.0, k=3), trials=20_000, seed=2).passed
    True
    """
    v.instance("design", design, Design, "a Design")
    if isinstance(design, TwoGroupDesign):
        raise ParameterError(
            f"`design` must be a one-group design; {design.name!r} randomizes two groups "
            "with latent respondent types: audit it with `audit_two_group` instead."
        )
    claim = design.epsilon if claimed_epsilon is None else claimed_epsilon
    claimed, n, s, lvl, gen = _common(claim, trials, seed, level)
    k, m = design.n_truths, design.n_reports
    if k * m > MAX_AUDIT_CELLS:
        raise ParameterError(
            f"`design` must have at most {MAX_AUDIT_CELLS:,} (true answer, report) cells for "
            f"an audit of every pair of answers, got {k} answers x {m} reports = {k * m:,} "
            f"({design.name}); audit two answers with `audit(design, x0, x1, ...)`."
        )
    if k * n > MAX_AUDIT_DRAWS:
        raise ParameterError(
            f"`trials` must be at most {MAX_AUDIT_DRAWS // k:,} for {design.name} with {k} "
            f"true answers (each is sampled `trials` times; at most {MAX_AUDIT_DRAWS:,} "
            f"draws in all), got {n:,}."
        )
    # one answer's reports at a time, a chunk at a time, counted and dropped: memory
    # O(chunk + k m) whatever the trials
    counts = np.zeros((k, m), dtype=np.int64)
    for x in range(k):
        counts[x] = _chunked_counts(
            design, x, gen, n, True, lambda s: np.bincount(s.astype(np.int64), minlength=m)
        )
    labels = [_label(r) for r in range(m)]
    result = _evaluate(
        counts,
        labels,
        [f"truth {x}" for x in range(k)],
        None,
        trials=n,
        level=lvl,
        claimed=claimed,
        seed=s,
    )
    label = (
        f"{design.name} ({format_parameters(design.parameters())}), true ε "
        f"{format_epsilon(design.epsilon)}"
    )
    return replace(result, mechanism=design.name, parameters=design.parameters(),
                   true_epsilon=design.epsilon, label=label)  # fmt: skip


def _bits_event(a: int, b: int) -> Callable[[Any], Any]:
    def event(reports: Any) -> Any:
        return np.asarray((reports[:, 0] == a) & (reports[:, 1] == b), dtype=np.bool_)

    event.__name__ = f"bits 0,1 = {a}{b}"
    return event


def audit_unary(
    epsilon: float,
    k: int = 4,
    *,
    calibration: str = "half",
    claimed_epsilon: float | None = None,
    trials: int = 100_000,
    seed: int | None = None,
    level: float = 0.95,
) -> AuditResult:
    """Audit :class:`UnaryEncoding` (``k`` categories, parameter ``epsilon``) on the answers
    0 and 1; the default claim is the parameter ``epsilon``.

    A report's likelihood ratio between answers 0 and 1 depends on bits 0 and 1 only, so
    the four values of those bits are the events (fixed in advance).  With
    ``calibration="exact"`` (the one-bit calibration, really ``2 epsilon``-LDP) the audit
    refutes the claim given enough trials.

    >>> audit_unary(1.0, calibration="exact", trials=50_000, seed=1).passed
    False
    """
    mech = UnaryEncoding(epsilon, k, calibration=calibration)
    claim = mech.epsilon_parameter if claimed_epsilon is None else claimed_epsilon
    events = [_bits_event(a, b) for a in (0, 1) for b in (0, 1)]
    result = audit(mech, 0, 1, claimed_epsilon=claim, event=events, trials=trials, seed=seed,
                   level=level)  # fmt: skip
    how = (
        "t = e^(ε/2)/(1+e^(ε/2)), correct"
        if mech.calibration == "half"
        else "t = e^ε/(1+e^ε): one-bit calibration, really 2ε-LDP"
    )
    name = "unary" if mech.calibration == "half" else "unary-broken"
    params = {"epsilon": mech.epsilon_parameter, "k": mech.k, "calibration": mech.calibration}
    label = f"{name} (k = {mech.k}, ε = {mech.epsilon_parameter:g}; {how})"
    return replace(result, mechanism=name, parameters=params, true_epsilon=mech.epsilon,
                   label=label)  # fmt: skip
