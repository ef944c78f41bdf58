"""Audits of two-group designs, :func:`audit_two_group`: each group's channel between
respondent types whose true answers differ (see :mod:`deniable.audit`)."""

from __future__ import annotations

import numpy as np

from deniable.audit._core import _common, _evaluate, _label
from deniable.audit._result import AuditResult
from deniable.common import validation as v
from deniable.designs import TwoGroupDesign
from deniable.exceptions import ParameterTypeError

__all__ = ["audit_two_group"]


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
    with the design's randomizer (``randomize`` of type indices with the group given), and
    every such pair within a group is compared, Bonferroni-corrected together.
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
    v.instance("design", design, TwoGroupDesign, "a TwoGroupDesign")
    if not isinstance(compliant, bool):
        raise ParameterTypeError(f"`compliant` must be True or False, got {compliant!r}.")
    if claimed_epsilon is None:
        claimed_epsilon = design.epsilon_compliant if compliant else design.epsilon
    claimed, n, s, lvl, gen = _common(claimed_epsilon, trials, seed, level)
    types = design.respondent_types
    keep = [i for i, t in enumerate(types) if t.compliant or not compliant]
    inputs = [(g, i) for g in (1, 2) for i in keep]
    # the protocol's randomizer with the group given: report 2 (g - 1) + answer
    samples = [
        design.randomize(np.full(n, i), group=np.full(n, g), rng=gen).astype(np.int64) % 2
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
