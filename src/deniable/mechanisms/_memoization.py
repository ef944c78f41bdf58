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
answer needs a new question name and a new charge).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.accounting import BudgetLedger
from deniable.accounting._ledger import first_repeat
from deniable.common import _validation as v
from deniable.designs import Binary, BinaryDesign, Design, channel_epsilon
from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.randomness import resolve_rng
from deniable.results import Table

__all__ = ["MemoizedRandomizer", "averaging_attack"]

#: Respondent ids index a numpy array per question, so they must be dense and bounded.
_MAX_ID = 100_000_000


class MemoizedRandomizer:
    """Permanent randomized response keyed by (respondent, question).

    Parameters
    ----------
    design : Design
        The permanent design, applied once per (respondent, question).
    instantaneous : Design, optional
        A design applied afresh to the permanent report on every round; its truths must be
        the permanent design's reports (``instantaneous.n_truths == design.n_reports``).

    Notes
    -----
    A mutable object by nature (it *is* the memo).  It belongs with the respondent (on the
    device), since with an instantaneous design the collector must never see permanent
    reports.  Safe to share between threads: a permanent draw is one atomic get-or-create
    per (respondent, question) under the memo's lock.  Given a
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

    __slots__ = ("_design", "_instantaneous", "_lock", "_store")

    def __init__(self, design: Design, *, instantaneous: Design | None = None) -> None:
        if not isinstance(design, Design):
            raise ParameterTypeError(f"`design` must be a Design, got {type(design).__name__}.")
        if instantaneous is not None:
            if not isinstance(instantaneous, Design):
                raise ParameterTypeError(
                    f"`instantaneous` must be a Design or None, got {type(instantaneous).__name__}."
                )
            if instantaneous.n_truths != design.n_reports:
                raise ParameterError(
                    f"`instantaneous` must take the permanent design's {design.n_reports} report "
                    f"values as its truths, got a design with {instantaneous.n_truths}."
                )
        self._design = design
        self._instantaneous = instantaneous
        self._store: dict[str, npt.NDArray[np.int64]] = {}
        # guards the store: a permanent draw is one atomic get-or-create per
        # (respondent, question), so concurrent rounds never give one respondent two
        # "permanent" reports (docs/budgets.md, "Concurrency")
        self._lock = threading.RLock()

    def __getstate__(self) -> dict[str, Any]:
        with self._lock:
            store = {q: a.copy() for q, a in self._store.items()}
        return {"design": self._design, "instantaneous": self._instantaneous, "store": store}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._design = state["design"]
        self._instantaneous = state["instantaneous"]
        self._store = state["store"]
        self._lock = threading.RLock()

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
        if rounds is None:
            return self.permanent_epsilon
        k = v.integer("rounds", rounds, minimum=0)
        if k == 0:
            return 0.0
        return min(self.permanent_epsilon, k * self.report_epsilon)

    def memoized(self, question: str, respondents: Any) -> npt.NDArray[np.bool_]:
        """Mask: which of ``respondents`` already have a permanent report for ``question``."""
        q = _question(question)
        ids = _ids(respondents, unique=False)
        out = np.zeros(ids.size, dtype=np.bool_)
        with self._lock:
            store = self._store.get(q)
            if store is not None:
                inside = ids < store.size
                out[inside] = store[ids[inside]] >= 0
        return out

    def forget(self, question: str) -> None:
        """Drop every stored report for ``question``.

        The next asking draws fresh reports, which are new releases: with a ledger, every
        respondent is charged ``permanent_epsilon`` again (the ledger keeps the earlier
        charge too, since the forgotten reports were released).  Forgetting never makes a
        fresh report free.
        """
        q = _question(question)
        with self._lock:
            self._store.pop(q, None)

    def randomize(
        self,
        respondents: Any,
        truth: Any,
        *,
        question: str,
        rng: Any = None,
        ledger: BudgetLedger | None = None,
    ) -> npt.NDArray[np.int64]:
        """One round of ``question`` for ``respondents`` (distinct ids) with true answers
        ``truth``: replay stored permanent reports, randomize and store the others, then
        apply the instantaneous design if any.

        With a ``ledger``, every respondent whose permanent report is drawn now is charged
        ``permanent_epsilon``: those asked for the first time, and those whose report was
        dropped by :meth:`forget` (or who were charged through another memo), even if the
        ledger already holds a charge for ``question`` (a fresh report is a new release).
        Replays are free.  If any respondent cannot afford it the ledger raises
        :class:`~deniable.exceptions.PrivacyError` and nothing is randomized or stored.
        """
        q = _question(question)
        ids = _ids(respondents, unique=True)
        x = v.reports_array("truth", truth, categories=self._design.n_truths)
        if x.size != ids.size:
            raise DataError(
                f"`truth` must have one answer per respondent ({ids.size}), got {x.size}."
            )
        if ledger is not None and not isinstance(ledger, BudgetLedger):
            raise ParameterTypeError(
                f"`ledger` must be a BudgetLedger or None, got {type(ledger).__name__}."
            )
        gen = resolve_rng(rng)
        with self._lock:  # get-or-create, atomically: the check, the charge and the store
            store = self._store.get(q, np.full(0, -1, dtype=np.int64))
            # who gets a fresh draw is decided by this memo's store, never by the ledger's
            new = np.ones(ids.size, dtype=np.bool_)
            inside = ids < store.size
            new[inside] = store[ids[inside]] < 0
            # draw first (nothing is released yet), then charge (may refuse: nothing is
            # stored), then store: a failure at any step leaves the memo as it was
            fresh = self._design.randomize(x[new], rng=gen) if new.any() else None
            if ledger is not None:
                ledger.spend(ids, q, self.permanent_epsilon, memoized=True, fresh=new)
            top = int(ids.max()) + 1 if ids.size else 0
            if top > store.size:
                grown = np.full(max(top, 2 * store.size), -1, dtype=np.int64)
                grown[: store.size] = store
                store = grown
            if fresh is not None:
                store[ids[new]] = fresh
            self._store[q] = store
            permanent = store[ids].copy()
        if self._instantaneous is None:
            return permanent
        return np.asarray(self._instantaneous.randomize(permanent, rng=gen), dtype=np.int64)


def _question(question: Any) -> str:
    if not isinstance(question, str) or not question:
        raise ParameterTypeError(
            f"`question` must be a non-empty string naming the question, got {question!r}."
        )
    return question


def _ids(respondents: Any, *, unique: bool) -> npt.NDArray[np.int64]:
    arr = np.asarray(respondents)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise DataError(f"`respondents` must be a 1-D array of ids, got shape {arr.shape}.")
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype == np.bool_ or arr.dtype.kind not in "iu":
        raise ParameterTypeError(
            f"`respondents` must hold non-negative integer ids, got dtype {arr.dtype}."
        )
    if int(arr.min()) < 0:
        raise DataError(f"`respondents` must hold non-negative ids, got {int(arr.min())}.")
    if int(arr.max()) >= _MAX_ID:
        raise DataError(
            f"`respondents` must hold dense ids below {_MAX_ID} (the store is an array indexed "
            f"by id; map sparse ids to 0..n-1 first), got {int(arr.max())}."
        )
    out = arr.astype(np.int64, copy=False)
    if unique and (rep := first_repeat(out)) is not None:
        raise DataError(f"`respondents` must not repeat an id within one round, got {rep} twice.")
    return out


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
        note="without memoization the attacker recovers the answers; with it, never "
        "better than one report",
    )
