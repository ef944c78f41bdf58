"""What one report of a stream oracle costs a device: :func:`report_epsilon`, the epsilon
a telemetry stream charges per report against any change of a device's values.

A stream's budget window promises a bound on what a device's reports in the window reveal
against *any* change of its values in it: another value, another sequence of values, and
another pattern of changes (which reports share a value).  Basic composition (Dwork & Roth
2014, Thm. 3.16) then charges each report an epsilon that holds for that report given
everything the device kept, whatever the values are:

* a plain oracle (every report drawn afresh from the value: GRR, SUE, OUE, BLH, OLH,
  OLH-linear, Hadamard response, subset selection): its ``epsilon``;
* a longitudinal oracle (a permanent response kept per value, a fresh instantaneous one
  every report: L-GRR, L-SUE, L-OUE, L-OSUE, LOLOHA): ``epsilon_irr``, the instantaneous
  channel's epsilon over every kept permanent response.  The memoized bound ``min(d
  epsilon, r epsilon_1)`` holds only against sequences with the same pattern of changes
  (``oracles/_longitudinal.py``, its proof note), so ``epsilon_1`` is not a per-report
  charge;
* RAPPOR (Erlingsson, Pihur & Korolova 2014: a permanent randomized response, PRR, kept
  per value, and an instantaneous one, IRR, over its ``m`` Bloom bits): ``m max(ln(q / p),
  ln((1 - p) / (1 - q)))``, the IRR's epsilon over every PRR (derived at
  :func:`report_epsilon`);
* a count mean sketch (CMS, HCMS: Apple 2017; every report drawn afresh from the string, a
  uniform row (and coefficient) and independent flips, nothing kept): its ``epsilon``, the
  exact epsilon of one report against any change of the string (``oracles/_cms_base.py``:
  two bits of the one-hot vector move for CMS, one sign bit for HCMS), at least the
  ``implemented_epsilon`` of its rounded flip threshold;
* a heavy-hitter protocol (PEM, TreeHist: Wang et al. 2019, Bassily et al. 2017; every
  report a fresh group, drawn whatever the string, and one linear-hash OLH report of the
  group's prefix, nothing kept): ``epsilon_per_device``, the OLH epsilon ``ln(p' / q')``
  (derived at :func:`report_epsilon`);
* the Sequence Fragment Puzzle (SFP, Apple 2017: every report a fresh position, drawn
  whatever the string, one fresh fragment-sketch report of the string's record at it and
  one fresh whole-string-sketch report, nothing kept): ``fragment_epsilon + word_epsilon``,
  each sketch's exact epsilon, added (derived at :func:`report_epsilon`);
* RAPPOR n-gram discovery (Fanti, Pihur & Erlingsson 2016: every report a fresh cohort, fresh
  position pairs, drawn whatever the string, and ``2 pairs`` n-gram reports and the
  full-string report each with a fresh PRR, nothing kept): its ``epsilon``, ``2 pairs
  eps_1(ngram) + eps_1(full)`` (derived at :func:`report_epsilon`);
* a range mechanism (HierarchicalHistogram, HaarHRR: every report a fresh level, drawn
  whatever the value, and one fresh report of the value's node through that level's
  oracle, nothing kept): the largest level oracle's ``epsilon``; Square Wave (Li et al.
  2020: a fresh cell every report): its ``epsilon`` (derived at :func:`report_epsilon`).

Each class states its own charge (a method ``_epsilon_per_report``: ``FrequencyOracle``,
``LongitudinalOracle``, ``Rappor``, ``CountMeanSketch``, PEM's and TreeHist's
``_PrefixProtocol``, ``SFP``, ``RapporNgram``, the range mechanisms' ``LevelSampled``,
``SquareWave``); k-ary randomized response (a design, in :mod:`deniable.designs`) is answered here.

Any other mechanism is refused: dBitFlipPM and 1BitMean keep their reported bits and draw
no fresh randomness per report, so two reports of a device that kept its value are equal,
and of one whose value changed buckets may differ: the pattern of changes has no finite
bound, and they are not stream oracles.
"""

from __future__ import annotations

from typing import Any

from deniable.designs import Categorical
from deniable.exceptions import ParameterTypeError
from deniable.oracles._registry import FREQUENCY_ORACLES

__all__ = ["report_epsilon"]

# Proof note (the longitudinal epsilon of memoization, docs/architecture.md#proof-notes).
# Claim: a report of a stream oracle loses at most report_epsilon(oracle) given everything
# the device kept, whatever its values, so r reports in a window lose at most the sum.
# Argument: a plain oracle's report is a fresh draw from the value (its epsilon); a
# longitudinal oracle's and RAPPOR's is an IRR draw from a kept PRR, whose epsilon over
# every PRR bounds the ratio of any two mixtures over kept PRRs (a ratio of mixtures is at
# most the largest ratio of components), then basic composition.  RAPPOR's IRR epsilon is
# derived in report_epsilon's Notes and enumerated by tests/test_report_epsilon.py.


def report_epsilon(oracle: Any) -> float:
    """The epsilon one report of ``oracle`` costs a device against any change of its values
    across reports: what a telemetry stream charges per report (basic composition over the
    reports of a window, whatever the values and their pattern of changes).

    Parameters
    ----------
    oracle
        A frequency oracle of :data:`~deniable.oracles.FREQUENCY_ORACLES` (k-ary randomized
        response included), :class:`~deniable.oracles.Rappor`, or a count mean sketch
        (:class:`~deniable.oracles.CMS`, :class:`~deniable.oracles.HCMS`) or a heavy-hitter
        protocol (:class:`~deniable.oracles.PEM`, :class:`~deniable.oracles.TreeHist`),
        :class:`~deniable.oracles.SFP`, :class:`~deniable.oracles.RapporNgram`, a
        range mechanism (:class:`~deniable.oracles.HierarchicalHistogram`,
        :class:`~deniable.oracles.HaarHRR`) or :class:`~deniable.oracles.SquareWave`.

    Returns
    -------
    float
        ``oracle.epsilon`` for a plain oracle and a count mean sketch (CMS: ``2 ln((1 - f)
        / f)`` with ``f = 1 / (1 + e^(eps/2))``, two bits move; HCMS: ``ln((1 - f) / f)``
        with ``f = 1 / (1 + e^eps)``); ``oracle.epsilon_irr`` for a longitudinal
        one (L-GRR, L-SUE, L-OUE, L-OSUE, LOLOHA); for RAPPOR

        .. math:: \\varepsilon_{report} = m \\max\\Big(\\ln\\frac{q}{p},
                  \\ln\\frac{1 - p}{1 - q}\\Big)

        (``inf`` when ``p = 0`` or ``q = 1``: never a finite number for an infinite loss).

    Raises
    ------
    ParameterTypeError
        For any other mechanism (dBitFlipPM, 1BitMean, several attributes, numeric
        mechanisms, designs): no per-report charge is stated for it.

    Notes
    -----
    **RAPPOR.**  Given the kept PRR ``B'`` (``m`` bits), the IRR sets report bit ``i`` with
    probability ``q`` if ``B'_i = 1`` and ``p`` if ``B'_i = 0``, the bits independent.  For
    two PRRs ``B', B''`` and a report ``S``,

    .. math:: \\ln\\frac{P(S \\mid B')}{P(S \\mid B'')} = \\sum_{i: B'_i \\ne B''_i}
              \\ell_i(S_i),

    with ``l_i = ln(q / p)`` or ``ln((1 - q) / (1 - p))`` where ``B'_i = 1, B''_i = 0`` (for
    ``S_i = 1`` or ``0``) and ``ln(p / q)`` or ``ln((1 - p) / (1 - q))`` where ``B'_i = 0,
    B''_i = 1``.  Each term is at most ``max(ln(q / p), ln((1 - p) / (1 - q)))``, reached by
    one value of ``S_i``, so the largest ratio over all reports is ``m`` times it, reached
    by two PRRs that differ in every bit (the larger term's direction in each) and the
    report that picks the larger term in each bit.  With ``f > 0`` every PRR has positive
    probability under every value, so that pair is possible: the bound is exact for the IRR
    over its inputs (``tests/test_report_epsilon.py`` enumerates every PRR pair and report at
    ``m = 8``).  It bounds a report whatever the device holds: the law of a device's reports
    is a mixture, over its kept PRRs (one per value) and its cohort (drawn independently of
    the values), of products of IRR channels, and a ratio of two mixtures is at most the
    largest ratio of their components, ``e^(r eps)`` for ``r`` reports.  The one-report
    epsilon ``h ln(q* (1 - p*) / (p* (1 - q*)))`` (:attr:`Rappor.epsilon`) is not a
    per-report charge across changes, as ``epsilon_1`` of a longitudinal oracle is not.
    Rounding of the thresholds (``p`` up, ``q`` down) only lowers the implemented ratio.

    **PEM and TreeHist.**  A report is ``(j, A, y)``: the group ``j`` with probability
    ``pi_j`` whatever the string, rows ``A`` uniform over the ``l`` rows of ``levels[j]``
    bits whatever the string, and ``y = A x_j`` (``x_j`` the string's prefix) with
    probability ``p' = p + (1 - p) / g``, any other bucket with ``q' = (1 - p) / g``.  For
    strings ``x, x'`` the ratio of one report's probabilities is ``P(y | A x_j) / P(y | A
    x'_j)``, one of ``p' / q'``, ``1`` or ``q' / p'``: at most ``p' / q'``, reached by any
    ``A`` that hashes the two prefixes apart (one exists whenever they differ) and ``y = A
    x_j``.  So a report costs ``ln(p' / q') = ln(1 + g p / (1 - p))``, the OLH epsilon,
    whatever the number of groups or rounds (``tests/test_report_epsilon.py`` enumerates
    every report of TreeHist with one byte).  The keep threshold rounds ``p`` down, which
    only lowers it.

    **SFP.**  A report is ``(l, u, w)``: the position ``l`` with probability ``1 / P``
    whatever the string, ``u`` the fragment sketch's report of the record ``r_l(s)`` (the
    string's two symbols at ``l`` and its puzzle piece) and ``w`` the whole-string sketch's
    report of ``s``, the two drawn from independent words.  For strings ``s, s'`` the
    ratio of one report's probabilities is ``P_f(u | r_l(s)) / P_f(u | r_l(s')) * P_w(w |
    s) / P_w(w | s')``, each factor at most its sketch's ``e^eps`` (the count mean sketches
    above), so a report costs ``eps_f + eps_w``; it is reached when the two records and the
    two strings take other columns in some row of each sketch (``tests/test_sfp.py``
    enumerates it for tiny sketches), so the charge is exact, not a bound to tighten.  With
    the default ``fragment_share = 1/2`` each half is ``epsilon / 2``.

    **RAPPOR n-grams.**  A report is ``(c, J, u_1 .. u_2pairs, w)``: the cohort word ``c``
    uniform whatever the string, the pairs ``J`` uniform without replacement whatever the
    string, each n-gram report ``u_i`` a fresh PRR then IRR of the label ``"<j>:<n-gram>"``
    of the string at position ``j`` of ``J`` (RAPPOR ``ngram``, in the cohort of ``c``), and
    ``w`` a fresh PRR then IRR of the unpadded string (RAPPOR ``full``), all from
    independent words.  For strings ``s, s'`` and one ``(c, J)`` the ratio of the report's
    probabilities is the product of the ``2 pairs + 1`` reports' ratios, each a RAPPOR
    report of a fresh PRR: at most ``e^eps_1`` (:attr:`Rappor.epsilon
    <deniable.oracles.Rappor.epsilon>`: the bits independent given the Bloom filter, ``h``
    bits each way), so a report costs ``2 pairs eps_1(ngram) + eps_1(full)``, and mixing over
    ``(c, J)``, drawn whatever the string, only lowers the largest ratio.  It is reached
    when the labels of ``s`` and ``s'`` set disjoint Bloom bits in every report of one
    cohort (``tests/test_report_epsilon_ngram.py`` enumerates every report of a tiny
    protocol).  ``permanent_epsilon`` (PRRs kept per value) is not a per-report charge: a
    device that kept PRRs pays an IRR over them each report, ``m max(ln(q / p), ln((1 -
    p) / (1 - q)))`` a report as for RAPPOR, which the device rule does not do.

    **Range mechanisms and Square Wave.**  A range report is ``(l, y)``: the level ``l``
    with probability ``1 / h`` whatever the value, then ``y`` from level ``l``'s oracle on
    the value's node ``node_l(x)`` (HaarHRR: its bit XOR the value's side ``r_l(x)``, a
    bijection of the report space for each ``x``, so the ratio of two inputs' probabilities
    is still one of the Hadamard response's, ``e^eps``, ``1`` or ``e^-eps``).  The ratio of
    one report's probabilities for ``x, x'`` is ``P_l(y | node_l(x)) / P_l(y | node_l(x'))``,
    at most ``e^{eps_l}``: a report costs ``max_l eps_l``
    (``tests/test_report_epsilon_range.py`` enumerates every report of tiny ones).  Square
    Wave's cell has probability ``alpha / 2**64`` or ``beta / 2**64`` (mixed over two window
    starts), so a ratio is at most ``alpha / beta``, its implemented epsilon, at most its
    ``epsilon``: that is charged.

    Examples
    --------
    >>> from deniable.oracles import OUE, LGRR, Rappor
    >>> report_epsilon(OUE.from_epsilon(1.0, k=8)) == OUE.from_epsilon(1.0, k=8).epsilon
    True
    >>> lgrr = LGRR.from_epsilon(2.0, 3, eps_1=0.5)
    >>> report_epsilon(lgrr) == lgrr.epsilon_irr
    True
    >>> round(report_epsilon(Rappor(m=16, h=2, cohorts=4, f=0.5, p=0.5, q=0.75)), 6)
    11.090355
    >>> report_epsilon(Rappor(m=16, h=2, cohorts=4, f=0.5, p=0.0, q=0.75))
    inf
    >>> from deniable.oracles import CMS
    >>> report_epsilon(CMS(k=16, m=64, epsilon=4.0))
    4.0
    >>> from deniable.oracles import HaarHRR, SquareWave
    >>> report_epsilon(HaarHRR(16, 1.0)) == max(o.epsilon for o in HaarHRR(16, 1.0).levels)
    True
    >>> report_epsilon(SquareWave(2.0))
    2.0
    >>> from deniable.oracles import SFP
    >>> report_epsilon(SFP(epsilon=4.0, max_length=4, alphabet="ab", puzzle_bits=2, k=4, m=8))
    4.0
    >>> from deniable.oracles import RapporNgram
    >>> ng = RapporNgram(Rappor(m=32, h=2, cohorts=8, f=0.5, p=0.5, q=0.75), None,
    ...                  alphabet="abc", gram=2, length=4)
    >>> report_epsilon(ng) == ng.epsilon == 2 * ng.ngram.epsilon
    True
    """
    if isinstance(oracle, Categorical):  # k-ary RR, a design: every report drawn afresh
        return float(oracle.epsilon)
    charge = getattr(type(oracle), "_epsilon_per_report", None)  # each class says its own
    if charge is not None:
        return float(charge(oracle))
    raise ParameterTypeError(
        "`oracle` must be a stream oracle: one of the frequency oracles "
        f"{', '.join(sorted(FREQUENCY_ORACLES))}, rappor, cms, hcms, pem, treehist, sfp, "
        "rappor-ngram, "
        "hierarchical-histogram, haar-hrr or square-wave (a per-report epsilon "
        "against any change of a device's values is stated for these only), got "
        f"{type(oracle).__name__}."
    )
