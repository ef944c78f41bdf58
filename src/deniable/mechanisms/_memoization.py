"""Repeated and related questions: memoization (permanent randomized response) and the
one-question alternative to a chain of related yes/no questions.

Memoization (Erlingsson, Pihur & Korolova 2014, RAPPOR, sec. 3): the first time respondent
``i`` is asked question ``q`` their answer is randomized once with the *permanent* design
and the randomized report is stored; every later asking replays the stored report.  An
adversary who averages any number of rounds learns at most the permanent report, so the
privacy loss over unlimited rounds is the permanent epsilon, paid once.

Optionally each round applies an *instantaneous* design to the permanent report (RAPPOR's
IRR), so that rounds are not byte-identical.  One round's report then passes through the
product channel ``P_inst @ P_perm``, a single channel from the true answer to the report:

* one round is ``eps_1``-LDP with ``eps_1 = channel_epsilon(P_inst @ P_perm)``
  ``<= min(eps_perm, eps_inst)`` (post-processing, both ways);
* ``k`` rounds are at most ``min(eps_perm, k * eps_1)``-LDP: basic composition of the
  rounds, and at the same time a post-processing of the one permanent report;
* unlimited rounds: ``eps_perm``.

Only randomized values are stored; the true answers given on replays are checked for
range and otherwise ignored (the permanent report stands for the first answer; a changed
answer needs a new question name and a new charge).  The reports live in a
:class:`~deniable.mechanisms.MemoStore` (in memory by default, a SQL store in the survey
service), keyed by (respondent key, question), each stored with the key of the permanent
design that drew it; respondents are opaque keys, integer ids of any size or string tokens.

**What a configuration change does.**  The permanent report belongs to the respondent and
the question, and is defined by the permanent design alone: a memo with another
``instantaneous`` design (or none) over the same store replays the same permanent reports;
a memo with another permanent design refuses (:class:`~deniable.exceptions.PrivacyError`)
for every respondent who holds a report of the old one, rather than replay a report of
another design or draw a second one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.accounting import BudgetLedger, respondent_keys
from deniable.common import validation as v
from deniable.designs import Binary, BinaryDesign, Design, channel_epsilon
from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.mechanisms._memo_store import InMemoryMemoStore, MemoStore
from deniable.randomness import resolve_rng
from deniable.results import Table

__all__ = ["MemoizedRandomizer", "averaging_attack"]


class MemoizedRandomizer:
    """Permanent randomized response keyed by (respondent, question).

    Parameters
    ----------
    design : Design
        The permanent design, applied once per (respondent, question).
    instantaneous : Design, optional
        A design applied afresh to the permanent report on every round; its truths must be
        the permanent design's reports (``instantaneous.n_truths == design.n_reports``).
    store : MemoStore, optional
        Where the permanent reports live; default a new :class:`InMemoryMemoStore`.

    Notes
    -----
    A mutable object by nature (it *is* the memo).  It belongs with the respondent (on the
    device), since with an instantaneous design the collector must never see permanent
    reports.  Respondents are opaque keys (integer ids of any size, string tokens).  Safe
    to share between threads: a permanent draw is one atomic get-or-create per
    (respondent, question) in the store, and the draw and the charge happen inside it (the
    store's lock is taken before the ledger's, never the other way round).  Given a
    :class:`~deniable.accounting.BudgetLedger`, :meth:`randomize` charges
    ``permanent_epsilon`` whenever it draws a permanent report (a respondent's first asking
    of a question, or the first after :meth:`forget`), the bound for all rounds of that
    report at once, and nothing on replays.

    Examples
    --------
    >>> from deniable import Warner
    >>> memo = MemoizedRandomizer(Warner(0.75))
    >>> first = memo.randomize([0, 1, 2], [1, 0, 1], question="smokes", rng=1)
    >>> again = memo.randomize([0, 1, 2], [1, 0, 1], question="smokes", rng=2)
    >>> bool((first == again).all())                   # replayed, not re-randomized
    True
    >>> round(memo.longitudinal_epsilon(), 4)          # ln 3, for any number of rounds
    1.0986
    """

    __slots__ = ("_design", "_instantaneous", "_store")

    def __init__(
        self,
        design: Design,
        *,
        instantaneous: Design | None = None,
        store: MemoStore | None = None,
    ) -> None:
        v.instance("design", design, Design, "a Design")
        v.instance_or_none("instantaneous", instantaneous, Design, "a Design")
        if instantaneous is not None and instantaneous.n_truths != design.n_reports:
            raise ParameterError(
                f"`instantaneous` must take the permanent design's {design.n_reports} report "
                f"values as its truths, got a design with {instantaneous.n_truths}."
            )
        v.instance_or_none("store", store, MemoStore, "a MemoStore (e.g. InMemoryMemoStore())")
        self._design = design
        self._instantaneous = instantaneous
        self._store: MemoStore = InMemoryMemoStore() if store is None else store

    def __getstate__(self) -> dict[str, Any]:
        return {
            "design": self._design,
            "instantaneous": self._instantaneous,
            "store": self._store.snapshot(),
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._design = state["design"]
        self._instantaneous = state["instantaneous"]
        self._store = state["store"]

    def __repr__(self) -> str:
        extra = "" if self._instantaneous is None else f", instantaneous={self._instantaneous!r}"
        return f"MemoizedRandomizer({self._design!r}{extra})"

    @property
    def design(self) -> Design:
        """The permanent design."""
        return self._design

    @property
    def instantaneous(self) -> Design | None:
        """The instantaneous design, if any."""
        return self._instantaneous

    @property
    def store(self) -> MemoStore:
        """Where the permanent reports live."""
        return self._store

    @property
    def channel(self) -> npt.NDArray[np.float64]:
        """One round's channel from the true answer to the report: ``P_inst @ P_perm``."""
        perm = np.asarray(self._design.channel)
        if self._instantaneous is None:
            return perm
        return self._instantaneous.channel @ perm

    @property
    def permanent_epsilon(self) -> float:
        """Epsilon of the permanent report: the bound over unlimited rounds."""
        return self._design.epsilon

    @property
    def report_epsilon(self) -> float:
        """Exact epsilon of one round's report about the true answer.

        ``channel_epsilon(P_inst @ P_perm)``, at most ``min(eps_perm, eps_inst)``.
        """
        # eps_1 = max_r max_{x,x'} ln((P_inst P_perm)[r,x] / (P_inst P_perm)[r,x'])
        if self._instantaneous is None:
            return self._design.epsilon
        return channel_epsilon(self.channel)

    def longitudinal_epsilon(self, rounds: int | None = None) -> float:
        """Bound on the privacy loss of ``rounds`` rounds (``None``: unlimited).

        ``min(eps_perm, rounds * eps_1)``; ``eps_perm`` for unlimited rounds.
        """
        # Proof note (the longitudinal epsilon of memoization, docs/architecture.md#proof-notes).
        # Claim: for one respondent and question, any number of rounds is eps_perm-LDP, and
        # k rounds with an instantaneous design are min(eps_perm, k eps_1)-LDP, where
        # eps_1 = channel_epsilon(P_inst @ P_perm) (report_epsilon).
        # Argument (Erlingsson, Pihur & Korolova 2014, RAPPOR, sec. 2 memoization, sec. 3.1
        # Thm. 1; Dwork & Roth 2014, Prop. 2.1 post-processing, Thm. 3.14 basic
        # composition): the true answer x enters only through the one permanent report
        # B ~ P_perm(. | x); every round is a function of B and fresh coins independent of
        # x, so the k-round view is a post-processing of B (eps_perm), and it is also k
        # eps_1-LDP rounds composed
        # (each round alone is the product channel).  Take the smaller.  It holds only if B
        # is drawn once: the memo is keyed by (respondent, question), each report stored
        # with the permanent design's mechanism key, and another permanent design is
        # refused for a respondent who holds a report (issue 14), so neither a new
        # instantaneous design nor a new configuration draws a second B; a ledger charges
        # eps_perm at the one draw.  forget() drops B and the next draw is charged again.
        # Checked by: tests/test_memoization.py::test_instantaneous_epsilon_closed_form
        # (the bound), ::test_replay_is_identical_and_ignores_later_truth,
        # ::test_ledger_charges_permanent_epsilon_once,
        # ::test_forget_never_gives_a_fresh_report_for_free, test_audit.py::
        # test_memoized_randomizer_with_instantaneous_randomization (audits of one and of
        # three rounds against eps_1 and the 3-round bound), and _store_contract.py::
        # test_the_memoizer_keeps_or_refuses_across_designs (the identity rules).
        if rounds is None:
            return self.permanent_epsilon
        k = v.integer("rounds", rounds, minimum=0)
        if k == 0:
            return 0.0
        return min(self.permanent_epsilon, k * self.report_epsilon)

    def memoized(self, question: str, respondents: Any) -> npt.NDArray[np.bool_]:
        """Mask: which of ``respondents`` already have a permanent report for ``question``
        (a report of another permanent design raises
        :class:`~deniable.exceptions.PrivacyError`, as :meth:`randomize` would)."""
        q = _question(question)
        keys = respondent_keys(respondents, unique=False)
        return self._store.lookup(q, keys, mechanism=self._design.key) >= 0

    def forget(self, question: str) -> None:
        """Drop every stored report for ``question``.

        The next asking draws fresh reports, which are new releases: with a ledger, every
        respondent is charged ``permanent_epsilon`` again (the ledger keeps the earlier
        charge too, since the forgotten reports were released).  Forgetting never makes a
        fresh report free.
        """
        self._store.forget(_question(question))

    def randomize(
        self,
        respondents: Any,
        truth: Any,
        *,
        question: str,
        rng: Any = None,
        ledger: BudgetLedger | None = None,
    ) -> npt.NDArray[np.int64]:
        """One round of ``question`` for ``respondents`` (distinct keys) with true answers
        ``truth``: replay stored permanent reports, randomize and store the others, then
        apply the instantaneous design if any.

        With a ``ledger``, every respondent whose permanent report is drawn now is charged
        ``permanent_epsilon``: those asked for the first time, and those whose report was
        dropped by :meth:`forget` (or who were charged through another memo), even if the
        ledger already holds a charge for ``question`` (a fresh report is a new release).
        Replays are free.  If any respondent cannot afford it the ledger raises
        :class:`~deniable.exceptions.PrivacyError` and nothing is stored.  So does the store
        if a respondent holds a report of ``question`` drawn by another permanent design
        (nothing is drawn, charged or stored).
        """
        q = _question(question)
        keys = respondent_keys(respondents, unique=True)
        x = v.reports_array("truth", truth, categories=self._design.n_truths)
        if x.size != keys.size:
            raise DataError(
                f"`truth` must have one answer per respondent ({keys.size}), got {x.size}."
            )
        v.instance_or_none("ledger", ledger, BudgetLedger, "a BudgetLedger")
        gen = resolve_rng(rng)
        design, eps = self._design, self.permanent_epsilon

        def create(new: npt.NDArray[np.bool_]) -> npt.NDArray[np.int64]:
            # called inside the store's get-or-create, with the keys that have no report
            # (decided by this memo's store, never by the ledger's record).  Draw first
            # (nothing is released yet), then charge (may refuse: the store stores
            # nothing), then the store stores: a failure at any step changes nothing.
            fresh = np.zeros(0, dtype=np.int64)
            if new.any():
                fresh = np.asarray(design.randomize(x[new], rng=gen), dtype=np.int64)
            if ledger is not None:
                ledger.spend(keys, q, eps, memoized=True, fresh=new)
            return fresh

        permanent = np.asarray(
            self._store.get_or_create(q, keys, create, mechanism=design.key), dtype=np.int64
        )
        if self._instantaneous is None:
            return permanent
        return np.asarray(self._instantaneous.randomize(permanent, rng=gen), dtype=np.int64)


def _question(question: Any) -> str:
    if not isinstance(question, str) or not question:
        raise ParameterTypeError(
            f"`question` must be a non-empty string naming the question, got {question!r}."
        )
    return question


# --------------------------------------------------------------------------- the attack


def _checked_binary(design: Any) -> BinaryDesign:
    if not isinstance(design, BinaryDesign) or design.n_reports != 2:
        raise ParameterTypeError(
            f"`design` must be a binary design with yes/no reports, got {design!r}."
        )
    if not design.p_yes_given_1 > design.p_yes_given_0:
        raise ParameterError(
            "`design` must have P(yes | 1) > P(yes | 0) (a 'yes' points to 'has A'), got "
            f"{design.p_yes_given_1} and {design.p_yes_given_0}."
        )
    return design


def _majority_exact(p1: float, p0: float, rounds: int, prevalence: float) -> float:
    """P(correct) of the mean attacker: guess 1 iff mean(reports) > (p1 + p0)/2, coin on ties."""
    from scipy import stats

    k = np.arange(rounds + 1)
    thr = (p1 + p0) / 2 * rounds
    tie = np.isclose(k, thr, rtol=0, atol=1e-9)
    above = (k > thr) & ~tie
    below = (k < thr) & ~tie
    f1 = stats.binom.pmf(k, rounds, p1)
    f0 = stats.binom.pmf(k, rounds, p0)
    right1 = float(f1[above].sum() + 0.5 * f1[tie].sum())
    right0 = float(f0[below].sum() + 0.5 * f0[tie].sum())
    return prevalence * right1 + (1 - prevalence) * right0


def averaging_attack(
    design: BinaryDesign | None = None,
    rounds: Iterable[int] = (1, 3, 11, 31, 101),
    *,
    n: int = 10_000,
    prevalence: float = 0.5,
    seed: int | None = None,
) -> Table:
    """Seeded simulation: an averaging attacker with and without memoization.

    ``n`` respondents (each "has A" with probability ``prevalence``) are asked the same
    question ``max(rounds)`` times.  Without memoization each round is a fresh report; with
    it (:class:`MemoizedRandomizer`) every round replays the permanent report.  After ``r``
    rounds the attacker guesses each respondent's answer from the mean of their ``r``
    reports (1 iff the mean exceeds ``(P1 + P0) / 2``; a fair coin on ties; the majority
    vote for symmetric designs).

    Returns a :class:`~deniable.audit._explain.Table` with the simulated accuracy without and with
    memoization and the exact values: without, ``pi P(Bin(r, P1) > m r) + (1 - pi)
    P(Bin(r, P0) < m r)`` (+ half the ties), which tends to 1; with, the single-report
    accuracy ``pi P1 + (1 - pi)(1 - P0)`` for every ``r`` (``e^eps / (1 + e^eps)`` for the
    exact binary mechanism).  Default design: ``Binary(1.0)``.

    >>> t = averaging_attack(rounds=(1, 101), n=2000, seed=3)
    >>> [round(x, 2) for x in t.column("exact with")]
    [0.73, 0.73]
    >>> t.column("exact without")[1] > 0.99
    True
    """
    d = _checked_binary(Binary(1.0) if design is None else design)
    checkpoints = sorted({v.integer(f"rounds[{i}]", r, minimum=1) for i, r in enumerate(rounds)})
    if not checkpoints:
        raise ParameterError("`rounds` must hold at least one round count, got none.")
    if checkpoints[-1] > 100_000:
        raise ParameterError(f"`rounds` must be at most 100000, got {checkpoints[-1]}.")
    size = v.integer("n", n, minimum=1, maximum=10_000_000)
    pi = v.probability("prevalence", prevalence)
    gen = resolve_rng(np.random.SeedSequence().entropy if seed is None else seed)
    assert isinstance(gen, np.random.Generator)
    truth = (gen.random(size) < pi).view(np.uint8)
    ids = np.arange(size)
    memo = MemoizedRandomizer(d)
    mid = (d.p_yes_given_1 + d.p_yes_given_0) / 2
    sum_fresh = np.zeros(size, dtype=np.int64)
    sum_memo = np.zeros(size, dtype=np.int64)
    rows = []
    want = set(checkpoints)
    single = pi * d.p_yes_given_1 + (1 - pi) * (1 - d.p_yes_given_0)
    for r in range(1, checkpoints[-1] + 1):
        sum_fresh += d.randomize(truth, rng=gen)
        sum_memo += memo.randomize(ids, truth, question="q", rng=gen)
        if r in want:
            acc = []
            for s in (sum_fresh, sum_memo):
                thr = mid * r
                tie = np.isclose(s, thr, rtol=0, atol=1e-9)
                guess = np.where(tie, gen.random(size) < 0.5, s > thr)
                acc.append(float(np.mean(guess == truth.astype(bool))))
            exact = _majority_exact(d.p_yes_given_1, d.p_yes_given_0, r, pi)
            rows.append((r, acc[0], acc[1], exact, single))
    return Table(
        ("rounds", "accuracy without", "accuracy with", "exact without", "exact with"),
        tuple(rows),
        title=f"averaging attacker, {d!r}, n = {size}, seed = {seed}",
        notes=(
            "without memoization the attacker recovers the answers; with it, never "
            "better than one report",
        ),
    )
