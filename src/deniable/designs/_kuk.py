"""Kuk's card design (Kuk 1990), with one or several draws."""

from __future__ import annotations

import dataclasses
import inspect
import math
import numbers
import sys
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.designs._base import BinaryDesign, Design, channel_epsilon
from deniable.designs._binary_estimate import moment_estimate
from deniable.designs._channel import DenseChannel
from deniable.designs._from_epsilon import design_for_epsilon, expit
from deniable.designs._mechanism import blocks, one_answer
from deniable.designs._tally import Tally
from deniable.exceptions import ParameterError
from deniable.randomness import python_words, random_words, resolve_rng
from deniable.results import Estimate

__all__ = ["MAX_DRAWS", "Kuk", "KukMultiDraw", "KukSingleDraw", "KukStandardErrors"]

_TOP53 = np.uint64(11)

#: How the MLE's SE is computed; it has no n - 1 version, so its ``se_unbiased`` is NaN.
SE_MLE = "observed information at the MLE; no n - 1 version"

#: The most cards a respondent may draw.
MAX_DRAWS = 1000

#: Every entry of the channel must stay at least this (the smallest normal float): a smaller
#: binomial probability would lose precision or underflow to 0, and the channel would state an
#: infinite epsilon while the design's is finite.
_SMALLEST = sys.float_info.min


def _max_draws(theta1: float, theta2: float) -> int:
    """The most draws whose channel entries all stay normal floats (``MAX_DRAWS`` at most).

    The smallest entry of ``Binom(k, theta)`` is ``min(theta, 1 - theta)^k`` (at ``r = 0``
    or ``r = k``); decks with ``theta`` 0 or 1 have exact zeros instead, which are allowed.
    """
    logs = [math.log(min(t, 1 - t)) for t in (theta1, theta2) if 0 < t < 1]
    if not logs:
        return MAX_DRAWS
    return max(1, min(MAX_DRAWS, math.floor(math.log(_SMALLEST) / min(logs))))


def _one_draw(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether a ``Kuk(theta1, theta2, draws)`` call asks for one draw (``draws`` of 1)."""
    draws = kwargs["draws"] if "draws" in kwargs else (args[2] if len(args) > 2 else 1)
    return isinstance(draws, numbers.Real) and not isinstance(draws, bool) and draws == 1


@dataclass(frozen=True)
class Kuk(Design):
    """Kuk (1990): carriers draw from a deck whose red share is ``theta1``, non-carriers from
    one with red share ``theta2``; they draw ``draws`` cards with replacement and report the
    number of red cards (with one draw: "red" = 1).

    The true answer is binary; the report is one of ``draws + 1`` values.  So ``Kuk(theta1,
    theta2, draws)`` makes a :class:`KukSingleDraw` for one draw, a :class:`BinaryDesign`
    (binary report: every binary tool applies), and a :class:`KukMultiDraw` for several
    draws, which is not a :class:`BinaryDesign` (its report is a count of red cards); both
    are ``Kuk`` (as ``pathlib.Path`` makes a ``PosixPath``).

    Channel: ``P(r | 1) = Binom(r; k, theta1)``, ``P(r | 0) = Binom(r; k, theta2)``.
    ``epsilon = k * max(|ln(theta1 / theta2)|, |ln((1 - theta1) / (1 - theta2))|)``: the
    likelihood ratio of ``r`` red cards is ``(theta1/theta2)^r ((1-theta1)/(1-theta2))^(k-r)``,
    extreme at ``r = 0`` or ``r = k``, so ``k`` draws compose exactly.

    ``draws`` is at most 1000 (``MAX_DRAWS``), and at most the number that keeps every
    channel entry a normal float: ``min(theta, 1 - theta)^k >= 2.2e-308`` for both decks
    (e.g. 307 draws for decks 0.9 / 0.1).  More would make the channel's smallest
    probabilities underflow to 0, and its epsilon infinite while the design's is finite.

    >>> one, three = Kuk(0.7, 0.3), Kuk(0.8, 0.4, draws=3)
    >>> type(one).__name__, isinstance(one, BinaryDesign), one.n_reports
    ('KukSingleDraw', True, 2)
    >>> type(three).__name__, isinstance(three, BinaryDesign), three.n_reports
    ('KukMultiDraw', False, 4)
    >>> three
    KukMultiDraw(theta1=0.8, theta2=0.4, draws=3)
    """

    theta1: float
    theta2: float
    draws: int = 1
    name: ClassVar[str] = "kuk"
    # the constructor's signature (``__new__`` takes any arguments and picks the class)
    __signature__: ClassVar[inspect.Signature] = inspect.Signature(
        [
            inspect.Parameter("theta1", inspect.Parameter.POSITIONAL_OR_KEYWORD),
            inspect.Parameter("theta2", inspect.Parameter.POSITIONAL_OR_KEYWORD),
            inspect.Parameter("draws", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=1),
        ]
    )

    def __new__(cls, *args: Any, **kwargs: Any) -> Kuk:
        if not args and not kwargs:  # unpickling or copying: the class is already concrete
            return super().__new__(cls)
        target: type[Kuk] = KukSingleDraw if _one_draw(args, kwargs) else KukMultiDraw
        obj = super().__new__(target)
        if not isinstance(obj, cls):  # e.g. KukSingleDraw(t1, t2, 3): Python skips __init__
            obj.__init__(*args, **kwargs)  # type: ignore[misc]
        return obj

    def __post_init__(self) -> None:
        t1 = v.probability("theta1", self.theta1)
        t2 = v.probability("theta2", self.theta2)
        if t1 == t2:
            raise ParameterError(
                f"`theta1` and `theta2` must differ (equal decks carry no information), got {t1}."
            )
        object.__setattr__(self, "theta1", v.realizable("theta1", t1))
        object.__setattr__(self, "theta2", v.realizable("theta2", t2))
        k = v.integer("draws", self.draws, minimum=1, maximum=MAX_DRAWS)
        top = _max_draws(t1, t2)
        if k > top:
            raise ParameterError(
                f"`draws` must be an integer in [1, {top}] for theta1 = {t1!r}, theta2 = "
                f"{t2!r} (with more draws P(r red cards | answer) falls below the smallest "
                f"normal float, 2.2e-308, and the channel would state a wrong epsilon), got {k}."
            )
        object.__setattr__(self, "draws", k)
        self._check_card()

    # Kuk(...) always makes one of the two subclasses below, which define these three; they
    # are not abstract here only so that the type checker accepts the call Kuk(...)
    def _check_card(self) -> None:
        """Check that the randomizer can implement one card at its ``2**-53`` resolution."""
        raise NotImplementedError  # pragma: no cover

    @property
    def card(self) -> KukSingleDraw:
        """One draw from the decks: the binary design the randomizer repeats ``draws`` times."""
        raise NotImplementedError  # pragma: no cover

    def _spec_algorithm(self) -> tuple[str, int, dict[str, Any]]:
        # one card per draw: the count of "yes" (red) words
        return "bernoulli-count/1", self.draws, {"yes": list(self.card.thresholds())}

    @classmethod
    def from_epsilon(cls, epsilon: float, draws: int = 1) -> Kuk:
        """Symmetric decks ``theta1 = 1 - theta2 = e^(eps/k) / (1 + e^(eps/k))``: ``epsilon``
        over ``k = draws`` draws, never above it.

        ``theta1`` is the float with the largest epsilon not above the request (near 1 floats
        are ``2**-53`` apart, so a large per-draw epsilon is matched only that finely).  The
        largest epsilon is ``k ln(2**53 - 1)`` (``theta2 = 2**-53``), less when the channel's
        smallest entries ``theta2^k`` would underflow; a request above it raises
        ``ParameterError`` naming ``epsilon``.
        """
        eps = v.positive("epsilon", epsilon)
        k = v.integer("draws", draws, minimum=1, maximum=MAX_DRAWS)
        return design_for_epsilon(
            lambda t: Kuk(t, 1 - t, k), eps, expit(eps / k), neutral=0.5, extreme=1.0,
            fallback=expit(1.0 / k), context=f"{cls.name!r} with draws = {k}",
        )  # fmt: skip

    @property
    def p_yes_given_1(self) -> float:
        """P(a drawn card is red | carrier): ``theta1`` (per card)."""
        return self.theta1

    @property
    def p_yes_given_0(self) -> float:
        """P(a drawn card is red | non-carrier): ``theta2`` (per card)."""
        return self.theta2

    @property
    def n_reports(self) -> int:
        return self.draws + 1

    @property
    def n_truths(self) -> int:
        return 2

    @property
    def channel(self) -> DenseChannel:
        return DenseChannel(self._binomial_matrix())

    def _binomial_matrix(self) -> npt.NDArray[np.float64]:
        from scipy import stats

        r = np.arange(self.draws + 1)
        return np.column_stack(
            [
                stats.binom.pmf(r, self.draws, self.theta2),
                stats.binom.pmf(r, self.draws, self.theta1),
            ]
        )

    @property
    def report_labels(self) -> tuple[str, ...]:
        if self.draws == 1:
            return ("no", "yes")
        return tuple(f"{r} red" for r in range(self.draws + 1))

    def _report_epsilon(self) -> float:
        # one draw: eps_1 = max(|ln(t1/t2)|, |ln((1-t1)/(1-t2))|); the k draws compose to k eps_1
        return channel_epsilon([[1 - self.theta2, 1 - self.theta1], [self.theta2, self.theta1]])

    @property
    def implemented_channel(self) -> DenseChannel:
        """Binomial channel of the per-draw probabilities the randomizer realises."""
        t0, t1 = (t / 2.0**53 for t in self.card._thresholds)
        k = self.draws
        cols = [
            [math.comb(k, r) * p**r * (1 - p) ** (k - r) for r in range(k + 1)] for p in (t0, t1)
        ]
        return DenseChannel(np.array(cols, dtype=float).T)

    @property
    def epsilon(self) -> float:
        # eps = k * max(|ln(t1/t2)|, |ln((1-t1)/(1-t2))|): extreme reports are all-red / no red
        one = channel_epsilon([[1 - self.theta2, 1 - self.theta1], [self.theta2, self.theta1]])
        return self.draws * one if math.isfinite(one) else math.inf

    def variance(self, prevalence: float, n: int, *, population: str = "iid") -> float:
        """Exact variance of the moment estimator (mean red share) at a true ``prevalence``.

        With ``R`` the red count of one respondent, ``Var(pi_hat) = Var(R) / (n k^2 d^2)``,
        ``d = theta1 - theta2``.  ``iid``: ``Var(R) = k E[theta (1 - theta)] + k^2 pi (1 - pi)
        d^2`` (binomial within a deck, plus the mixing over decks).  ``fixed`` (``K = pi n``
        carriers): ``(K theta1 (1 - theta1) + (n - K) theta2 (1 - theta2)) / (n^2 k d^2)``.
        One draw gives the :class:`BinaryDesign` formulas.
        """
        # the binary formulas of one card (they validate the inputs)
        base = BinaryDesign.variance(self.card, prevalence, n, population=population)
        k = self.draws
        if k == 1:
            return base
        if population == "fixed":
            return base / k
        pi, t1, t2 = float(prevalence), self.theta1, self.theta2
        d2 = (t1 - t2) ** 2
        within = pi * t1 * (1 - t1) + (1 - pi) * t2 * (1 - t2)
        return (k * within + k * k * pi * (1 - pi) * d2) / (int(n) * k * k * d2)

    def relative_efficiency(self, prevalence: float) -> float:
        """``Var(direct) / Var(this design)``, iid sampling: ``pi (1 - pi) / (n Var(pi_hat))``."""
        pi = v.probability("prevalence", prevalence)
        return pi * (1 - pi) / self.variance(pi, 1)

    def randomize(self, truth: npt.ArrayLike, *, rng: Any = None) -> npt.NDArray[np.uint8]:
        """Report the number of red cards in ``draws`` draws (``draws`` words per report)."""
        t0, t1 = self.card._thresholds
        if one_answer(truth, 2):
            # one answer (a Python int or bool): the deck's threshold selected by arithmetic,
            # t0 + x (t1 - t0), then one comparison per draw, one word each, drawn one call
            # at a time as the array path draws them -- no branch on the answer
            t = t0 + truth * (t1 - t0)
            red = sum((python_words(rng, 1)[0] >> 11) < t for _ in range(self.draws))
            return np.array([red], dtype=np.uint8 if self.draws < 256 else np.uint16)
        x = v.reports_array("truth", truth, categories=2)
        gen = resolve_rng(rng)
        table = np.array((t0, t1), dtype=np.uint64)
        dtype = np.uint8 if self.draws < 256 else np.uint16
        out = np.zeros(x.size, dtype=dtype)
        for start, stop in blocks(x.size):
            thr = table[x[start:stop]]
            block = out[start:stop]
            for _ in range(self.draws):
                np.add(block, (random_words(gen, stop - start) >> _TOP53) < thr, out=block)
        return out  # type: ignore[return-value]

    def estimate(
        self,
        data: Any = None,
        *,
        yes: int | None = None,
        n: int | None = None,
        method: str = "moment",
    ) -> Estimate:
        """Estimate the prevalence (``method`` ``"moment"`` or ``"mle"``)."""
        raise NotImplementedError  # pragma: no cover


@dataclass(frozen=True)
class KukSingleDraw(Kuk, BinaryDesign):
    """Kuk's design with one draw (``Kuk(theta1, theta2)``): a binary design,
    ``P(yes | 1) = theta1``, ``P(yes | 0) = theta2``, "yes" = a red card.

    Everything of :class:`BinaryDesign` applies; :meth:`estimate` also offers the MLE.
    """

    @property
    def card(self) -> KukSingleDraw:
        return self

    def _check_card(self) -> None:
        self._check_channel()

    def estimate(
        self,
        data: Any = None,
        *,
        yes: int | None = None,
        n: int | None = None,
        method: str = "moment",
    ) -> Estimate:
        """Estimate the prevalence as every binary design does (``method="moment"``), or by
        the bounded MLE with its observed-information SE and a likelihood-ratio interval
        (``method="mle"``; the observed-information SE has no ``n - 1`` version: the MLE's
        ``se_unbiased`` is NaN)."""
        v.choice("method", method, ("moment", "mle"))
        base = BinaryDesign.estimate(self, data, yes=yes, n=n)
        if method == "mle":
            return _mle_from_counts(self, self._as_tally(data, yes, n), base)
        return base


@dataclass(frozen=True)
class KukMultiDraw(Kuk):
    """Kuk's design with several draws (``Kuk(theta1, theta2, draws)``, ``draws > 1``): a
    binary true answer and a report of ``draws + 1`` values, the number of red cards.

    Estimators (:meth:`estimate`), from the counts ``c_0..c_k`` of each red count ``r``:

    * ``method="moment"`` (default): ``pi_hat = (mean(R)/k - theta2) / (theta1 - theta2)``,
      unbiased, with the bounded MLE as its ``bounded`` value (with several draws that is
      not the clipped moment estimate);
    * ``method="mle"``: the bounded MLE of the binomial mixture over [0, 1], with the
      observed-information SE and a likelihood-ratio interval.

    Standard errors of the moment estimate (:meth:`standard_errors` gives them all side by
    side; ``estimate(..., se=...)`` picks the one it reports):

    * ``se="empirical"`` (default): from the sample variance of the red counts,
      ``sqrt(S2 / n) / (k |d|)`` with ``S2 = sum c_r (r - mean)^2 / n`` (``n - 1`` in the
      unbiased form), ``d = theta1 - theta2``;
    * ``se="model"``: the binomial-mixture variance at the estimate, as R's RRreg reports
      it, ``sqrt(phi (1 - phi) / (k n d^2) + (1 - 1/k) pi (1 - pi) / n)`` with
      ``phi = mean(R) / k`` (``k n - 1`` and ``n - 1`` in the unbiased form, the form of
      RRreg's current ``RRuni``);
    * the MLE's observed-information SE is ``method="mle"``'s.

    Why the empirical SE is the default: it estimates ``Var(R)`` without using the
    binomial model of the draws, so it stays right when respondents do not draw exactly as
    instructed (cards not replaced, a favourite card), while the model-based SE assumes the
    protocol was followed.  When it was, the two estimate the same variance and differ by
    ``O(n^-1/2)`` relative; ``standard_errors`` shows both, and a large gap is a sign that
    the draws did not follow the design.  (It is also the SE of every earlier release.)
    """

    @cached_property
    def card(self) -> KukSingleDraw:
        out = Kuk(self.theta1, self.theta2)
        assert isinstance(out, KukSingleDraw)
        return out

    def _check_card(self) -> None:
        try:
            self.card  # noqa: B018 - building the card runs its checks
        except ParameterError as exc:
            raise ParameterError(f"design 'kuk' with draws = {self.draws}: {exc}") from None

    def thresholds(self) -> tuple[int, int]:
        """The integer thresholds of one card (:meth:`BinaryDesign.thresholds`); each draw
        compares a fresh word with them."""
        return self.card.thresholds()

    def estimate(
        self,
        data: Any = None,
        *,
        yes: int | None = None,
        n: int | None = None,
        method: str = "moment",
        se: str = "empirical",
    ) -> Estimate:
        """Estimate the prevalence from reports (red counts) or a :class:`Tally` of counts
        ``c_0..c_k`` (not ``yes`` and ``n``): the moment estimate with the SE named by
        ``se`` (``"empirical"`` or ``"model"``, see the class docstring), or
        ``method="mle"``, the bounded MLE with its observed-information SE.

        >>> from deniable.designs import Tally
        >>> d = Kuk(0.8, 0.4, draws=3)
        >>> e = d.estimate(Tally([10, 20, 30, 40]))
        >>> round(e.value, 4), round(e.se, 4), e.se_convention.split(":")[0]
        (0.6667, 0.0833, 'plug-in')
        >>> round(d.estimate(Tally([10, 20, 30, 40]), se="model").se, 4)
        0.0782
        """
        v.choice("method", method, ("moment", "mle"))
        v.choice("se", se, SE_CHOICES)
        if yes is not None or n is not None:
            raise ParameterError(
                f"Kuk with draws = {self.draws} needs the counts of red cards (a Tally or "
                "reports), not `yes` and `n`."
            )
        tally = self._as_tally(data, None, None)
        moment = _moment_from_counts(self, tally, se)
        mle = _mle_from_counts(self, tally, moment)
        return dataclasses.replace(moment, bounded=mle.value) if method == "moment" else mle

    def standard_errors(self, data: Any) -> KukStandardErrors:
        """Every standard error of the prevalence estimate, side by side (see the class
        docstring): empirical and model-based (RRreg), each with ``n`` and ``n - 1``, and
        the MLE's observed-information SE.

        >>> from deniable.designs import Tally
        >>> print(Kuk(0.8, 0.4, draws=3).standard_errors(Tally([10, 20, 30, 40])))
        KukMultiDraw(theta1=0.8, theta2=0.4, draws=3), n = 100
        estimate (moment)              0.666667
        estimate (bounded MLE)         0.658012
        SE (empirical, n)              0.0833333
        SE (empirical, n - 1)          0.0837532
        SE (model, RRreg, n)           0.0781736
        SE (model, RRreg, n - 1)       0.0783681
        SE (MLE, observed information) 0.07363
        """
        tally = self._as_tally(data, None, None)
        emp = _moment_from_counts(self, tally, "empirical")
        model = _moment_from_counts(self, tally, "model")
        mle = _mle_from_counts(self, tally, emp)
        return KukStandardErrors(
            design=self,
            n=emp.n,
            moment=emp.value,
            mle=mle.value,
            empirical=emp.se,
            empirical_unbiased=emp.se_unbiased,
            model=model.se,
            model_unbiased=model.se_unbiased,
            observed_information=mle.se,
        )


#: The standard errors :meth:`KukMultiDraw.estimate` can report with the moment estimate.
SE_CHOICES = ("empirical", "model")


@dataclass(frozen=True)
class KukStandardErrors:
    """The standard errors of Kuk's estimate with several draws, side by side (see
    :class:`KukMultiDraw`): ``empirical`` (sample variance of the red counts; the default),
    ``model`` (binomial-mixture variance at the estimate, R's RRreg), each with ``n`` and
    ``n - 1`` (``*_unbiased``), and ``observed_information`` (the MLE's)."""

    design: KukMultiDraw
    n: int
    moment: float
    mle: float
    empirical: float
    empirical_unbiased: float
    model: float
    model_unbiased: float
    observed_information: float

    def to_dict(self) -> dict[str, Any]:
        """A plain dict of the numbers (NaN and infinities as strings)."""
        out: dict[str, Any] = {"n": self.n}
        for f in dataclasses.fields(self)[2:]:
            x = getattr(self, f.name)
            out[f.name] = x if math.isfinite(x) else str(x)
        return out

    def __str__(self) -> str:
        rows = [
            ("SE (empirical, n)", self.empirical),
            ("SE (empirical, n - 1)", self.empirical_unbiased),
            ("SE (model, RRreg, n)", self.model),
            ("SE (model, RRreg, n - 1)", self.model_unbiased),
            ("SE (MLE, observed information)", self.observed_information),
        ]
        rows = [("estimate (moment)", self.moment), ("estimate (bounded MLE)", self.mle), *rows]
        head = f"{self.design!r}, n = {self.n}"
        return "\n".join([head, *(f"{k:<30} {x:.6g}" for k, x in rows)])


def _moment_from_counts(design: Kuk, tally: Tally, se: str = "empirical") -> Estimate:
    """The moment estimate with the empirical or the model-based (RRreg) SE."""
    k = design.draws
    c = np.asarray(tally.counts, dtype=float)
    n = int(c.sum())
    r = np.arange(k + 1)
    mean = float((c * r).sum() / n)
    slope = design.theta1 - design.theta2
    lam = mean / k
    value = (lam - design.theta2) / slope
    if se == "model":
        # RRreg (Heck & Moshagen 2018), RRuni for Kuk: the binomial-mixture variance at the
        # estimate, phi (1 - phi) / (k n d^2) + (1 - 1/k) pi (1 - pi) / n with phi = lambda
        # (n form: RRreg <= 1.x; its current form divides by k n - 1 and n - 1)
        within = lam * (1 - lam) / (slope * slope)
        between = (1 - 1 / k) * value * (1 - value)
        se_n = _sqrt_or_nan(within / (k * n) + between / n)
        se_unb = _sqrt_or_nan(within / (k * n - 1) + between / (n - 1)) if n > 1 else math.nan
        convention = "model-based (binomial mixture at the estimate, as RRreg): divides by n"
    else:
        ss = float((c * (r - mean) ** 2).sum())
        se_n = math.sqrt(ss / n / n) / (k * abs(slope))
        se_unb = math.sqrt(ss / (n - 1) / n) / (k * abs(slope)) if n > 1 else math.nan
        convention = "plug-in: empirical variance of the red count, divides by n"
    return moment_estimate(
        value, se_n, se_unb, n, lam, se_convention=convention, lambda_label="red share of cards"
    )


def _sqrt_or_nan(x: float) -> float:
    """``sqrt(x)``; NaN for a negative ``x`` (the model variance at an estimate far outside
    [0, 1], where ``pi (1 - pi)`` is very negative: no SE to report)."""
    return math.sqrt(x) if x >= 0 else math.nan


def _mle_from_counts(design: Kuk, tally: Tally, moment: Estimate) -> Estimate:
    from scipy import optimize

    ch = design._binomial_matrix()
    b1, b0 = ch[:, 1], ch[:, 0]
    c = np.asarray(tally.counts, dtype=float)
    used = c > 0
    lik = _MixtureLikelihood(c[used], b1[used], b0[used])
    n = int(lik.counts.sum())

    res = optimize.minimize_scalar(
        lambda p: -lik(p), bounds=(0.0, 1.0), method="bounded", options={"xatol": 1e-12}
    )
    pi_hat = float(res.x)
    # endpoints: the bounded optimiser stops just inside; compare with the boundary values
    for edge in (0.0, 1.0):
        if lik(edge) >= lik(pi_hat):
            pi_hat = edge
    mix = pi_hat * lik.b1 + (1 - pi_hat) * lik.b0
    info = float((lik.counts * (lik.b1 - lik.b0) ** 2 / mix**2).sum())
    se = 1 / math.sqrt(info) if info > 0 else math.inf

    return Estimate(
        value=pi_hat,
        bounded=pi_hat,
        se=se,
        se_unbiased=math.nan,  # the observed-information SE has no n - 1 version
        n=n,
        method="mle",
        lambda_hat=moment.lambda_hat,
        lambda_label=moment.lambda_label,
        se_convention=SE_MLE,
        intervals={"likelihood": _LikelihoodInterval(lik, pi_hat)},
    )


@dataclasses.dataclass(frozen=True, eq=False)
class _MixtureLikelihood:
    """``pi -> sum_r c_r ln(pi b1_r + (1 - pi) b0_r)``: the binomial-mixture log-likelihood
    of the red-card counts (only the observed counts)."""

    counts: npt.NDArray[np.float64]
    b1: npt.NDArray[np.float64]
    b0: npt.NDArray[np.float64]

    def __call__(self, pi: float) -> float:
        with np.errstate(divide="ignore"):  # a report impossible at this pi: log 0 = -inf
            return float((self.counts * np.log(pi * self.b1 + (1 - pi) * self.b0)).sum())


@dataclasses.dataclass(frozen=True, eq=False)
class _LikelihoodInterval:
    """The likelihood-ratio interval ``{pi : 2 (l(pi_hat) - l(pi)) <= chi2_1(level)}`` (a
    picklable callable ``level -> (lo, hi)``)."""

    loglik: _MixtureLikelihood
    pi_hat: float

    def __call__(self, level: float) -> tuple[float, float]:
        from scipy import optimize, stats

        pi_hat = self.pi_hat
        cut = self.loglik(pi_hat) - float(stats.chi2.ppf(level, 1)) / 2

        def f(p: float) -> float:
            return self.loglik(p) - cut

        lo = 0.0 if f(0.0) >= 0 else float(optimize.brentq(f, 0.0, pi_hat, xtol=1e-12))
        hi = 1.0 if f(1.0) >= 0 else float(optimize.brentq(f, pi_hat, 1.0, xtol=1e-12))
        return lo, hi
