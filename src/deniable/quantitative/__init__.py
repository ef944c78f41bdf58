"""Sensitive numbers: scrambled-response designs for quantitative questions (income,
number of sexual partners, amount of tax evaded), their estimates of a mean and a total
from a simple random sample or under a :mod:`deniable.sampling` design, and their privacy
stated honestly.

=================================  ==========================================================
:class:`Additive`                   ``Z = X + S`` (Pollock & Bek 1976)
:class:`Multiplicative`             ``Z = X S`` (Eichhorn & Hayre 1983; ``.eichhorn_hayre``)
:class:`UnrelatedQuantitative`      ``X`` with probability ``p``, else an innocuous ``Y``
                                    (Greenberg et al. 1971; RRreg's ``mix.norm``,
                                    ``mix.exp``: ``.mix_norm``, ``.mix_exp``)
:class:`UnrelatedQuantitativeUnknown` the same with ``E[Y]`` unknown: two subsamples with
                                    ``p1 != p2`` (RRreg's ``mix.unknown``)
:class:`OptionalAdditive`           each respondent scrambles or not (sensitivity level
                                    ``T``, estimated from two subsamples; Gupta et al. 2010)
:class:`ScrambledDesign`            the protocol they share (randomize, descramble,
                                    moments, estimate, privacy)
:class:`Normal`, :class:`Uniform`,  the known distributions of the scrambling variable
:class:`Exponential`,               (or the innocuous answer)
:class:`Laplace`,
:class:`FDistribution`,
:class:`Constant`, :class:`Distribution`
:class:`NumberEstimate`             a mean (or total, or sensitivity level) with SE and
                                    intervals
:class:`NumberPrivacy`              epsilon where the design has one (else ``inf``) and what
                                    it protects instead
:func:`number_design`,              a design from a plain dict spec and back
:func:`number_spec`
:func:`make_distribution`           a distribution by name (:data:`DISTRIBUTIONS`)
=================================  ==========================================================

These designs report real numbers, so they have their own small protocol rather than the
channel of :mod:`deniable.designs` (``docs/architecture.md``).  May import
:mod:`deniable.sampling`, :mod:`deniable.randomness`, :mod:`deniable.results`,
:mod:`deniable.common` and :mod:`deniable.exceptions`; it sits beside ``estimation |
audit``.  ``docs/numbers.md`` has the formulas, their sources and a worked example.
"""

from __future__ import annotations

from deniable.quantitative._base import ScrambledDesign
from deniable.quantitative._distributions import (
    Constant,
    Distribution,
    Exponential,
    FDistribution,
    Laplace,
    Normal,
    Uniform,
)
from deniable.quantitative._mixture import UnrelatedQuantitative
from deniable.quantitative._mixture_unknown import UnrelatedQuantitativeUnknown
from deniable.quantitative._optional import OptionalAdditive
from deniable.quantitative._results import NumberEstimate, NumberPrivacy
from deniable.quantitative._scrambling import Additive, Multiplicative
from deniable.quantitative._spec import (
    DISTRIBUTIONS,
    NUMBER_DESIGNS,
    make_distribution,
    number_design,
    number_spec,
)

__all__ = [
    "DISTRIBUTIONS",
    "NUMBER_DESIGNS",
    "Additive",
    "Constant",
    "Distribution",
    "Exponential",
    "FDistribution",
    "Laplace",
    "Multiplicative",
    "Normal",
    "NumberEstimate",
    "NumberPrivacy",
    "OptionalAdditive",
    "ScrambledDesign",
    "Uniform",
    "UnrelatedQuantitative",
    "UnrelatedQuantitativeUnknown",
    "make_distribution",
    "number_design",
    "number_spec",
]
