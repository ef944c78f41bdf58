"""Explaining epsilon to people: tables, sentences and plots.

For the binary mechanism (one yes/no answer, reported truthfully with probability ``t`` and
flipped otherwise) everything about epsilon is one of three equivalent numbers:

* the **truth probability** ``t = e^eps / (1 + e^eps)`` (``exact`` calibration);
* the **odds of truth** ``t / (1 - t) = e^eps``;
* the **lying probability** ``q = 1 - t``, with ``eps = ln((1 - q) / q)`` for ``0 < q < 1/2``.

The ``half`` calibration ``t = e^(eps'/2) / (1 + e^(eps'/2))`` is the one unary / one-hot
encodings need (one answer changes *two* reported bits); used for one bit it is only
``eps'/2``-LDP, and the tables say so.

What an adversary learns from one report: by Bayes' rule, **posterior odds = prior odds x
likelihood ratio**, and for an eps-LDP report the likelihood ratio of any report between
two answers is at most ``e^eps`` (Warner 1965; Dwork & Roth 2014, sec. 3.2; for the binary
mechanism a "yes" attains it).  So "a 'yes' makes 'has A' ``e^eps`` times as likely as
before, in odds".

The plots are in :mod:`deniable.plotting` (``plot_epsilon_truth``, ``plot_epsilon_lying``,
``plot_posterior``).
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from deniable.common import to_jsonable
from deniable.common import validation as v
from deniable.designs import Design
from deniable.exceptions import ParameterError
from deniable.results import Result, Table
from deniable.results import format_cell as _cell

if TYPE_CHECKING:  # pragma: no cover
    pass

__all__ = [
    "DEFAULT_EPSILONS",
    "Explanation",
    "epsilon_from_lying_probability",
    "epsilon_from_truth_probability",
    "explain",
    "likelihood_sentence",
    "lying_table",
    "posterior",
    "posterior_table",
    "truth_table",
]

DEFAULT_EPSILONS: tuple[float, ...] = (0.1, 0.25, 0.5, 1.0, math.log(3), 2.0, 3.0, 5.0)
DEFAULT_LYING: tuple[float, ...] = (0.01, 0.05, 0.1, 0.2, 0.25, 0.3, 0.4, 0.45, 0.49)
DEFAULT_PRIORS: tuple[float, ...] = (0.01, 0.05, 0.1, 0.25, 0.5, 0.75)
_WIDTH = 88


# --------------------------------------------------------------------------- closed forms


#: Largest finite epsilon the tables explain: e^eps must fit a float (e^709.78 overflows).
MAX_FINITE_EPSILON = 700.0


def _epsilon(name: str, value: Any) -> float:
    eps = v.positive(name, value, allow_zero=True, allow_inf=True)
    if MAX_FINITE_EPSILON < eps < math.inf:
        raise ParameterError(
            f"`{name}` must be in [0, {MAX_FINITE_EPSILON:g}] or inf (the likelihood ratio "
            f"e^epsilon overflows a float beyond about 709), got {eps:g}."
        )
    return eps


def odds_to_probability(log_odds: float) -> float:
    """The probability ``e^x / (1 + e^x)`` of log-odds ``x`` (the logistic function),
    without overflow for large ``|x|``: ``inf`` gives 1, ``-inf`` 0."""
    if math.isinf(log_odds):
        return 1.0 if log_odds > 0 else 0.0
    return 1 / (1 + math.exp(-log_odds))


def epsilon_from_truth_probability(truth_probability: float, calibration: str = "exact") -> float:
    """The epsilon *parameter* whose calibration gives the probability ``truth_probability``
    (``t``) of reporting the true answer.

    ``exact``: ``eps = ln(t / (1 - t))``, the true epsilon of one bit.
    ``half``: ``eps' = 2 ln(t / (1 - t))``; one bit reported this way is ``eps'/2``-LDP.
    ``t`` must be in [1/2, 1]; ``t = 1`` (always truthful) gives ``math.inf``.

    >>> round(epsilon_from_truth_probability(0.75), 6)   # ln 3
    1.098612
    >>> round(epsilon_from_truth_probability(0.75, "half"), 6)
    2.197225
    """
    t = v.probability("truth_probability", truth_probability)
    v.choice("calibration", calibration, ("exact", "half"))
    if t < 0.5:
        raise ParameterError(
            "`truth_probability` must be in [0.5, 1] (below 1/2 relabel the answers), got "
            f"{truth_probability}."
        )
    eps = math.inf if t == 1 else math.log(t / (1 - t))
    return eps if calibration == "exact" else 2 * eps


def epsilon_from_lying_probability(q: float) -> float:
    """``eps = ln((1 - q) / q)`` for a lying probability ``q`` in (0, 1/2].

    ``q -> 0`` (never lie) is ``eps -> inf``; ``q = 1/2`` (a coin) is ``eps = 0``.

    >>> round(epsilon_from_lying_probability(0.25), 6)
    1.098612
    """
    qq = v.real("q", q)
    if not 0 < qq <= 0.5:
        raise ParameterError(f"`q` must be in (0, 0.5], got {q}.")
    return math.log((1 - qq) / qq)


def posterior(prior: float, epsilon: float, report: str = "yes") -> float:
    """Posterior probability of "has A" after one report of an ``epsilon`` binary mechanism.

    posterior odds = prior odds x ``e^eps`` (a "yes") or x ``e^-eps`` (a "no"); for any
    eps-LDP report this is the extreme the adversary can reach.

    >>> round(posterior(0.1, math.log(3)), 4)   # odds 1/9 -> 3/9 = 1/3 -> probability 1/4
    0.25
    """
    p = v.probability("prior", prior)
    eps = _epsilon("epsilon", epsilon)
    v.choice("report", report, ("yes", "no"))
    if p in (0.0, 1.0):
        return p
    log_odds = math.log(p / (1 - p)) + (eps if report == "yes" else -eps)
    return odds_to_probability(log_odds)


def _ratio_text(eps: float) -> str:
    if math.isinf(eps):
        return "infinitely many"
    r = math.exp(eps)
    return f"{r:.3g}" if r < 1000 else f"{r:.4g}"


def likelihood_sentence(epsilon: float, attribute: str = "has A") -> str:
    """One sentence: what a single "yes" does to an adversary's belief.

    >>> likelihood_sentence(math.log(3))
    "A 'yes' makes 'has A' 3 times as likely as before (in odds: posterior odds = prior odds x 3);
    a 'no' makes it 3 times less likely."
    """
    eps = _epsilon("epsilon", epsilon)
    if not isinstance(attribute, str) or not attribute:
        raise ParameterError(f"`attribute` must be a non-empty string, got {attribute!r}.")
    if math.isinf(eps):
        return (
            f"epsilon is infinite: some report reveals with certainty whether '{attribute}' "
            "holds; the answer is not deniable."
        )
    if eps == 0:
        return f"A report says nothing about '{attribute}': the odds stay as they were."
    r = _ratio_text(eps)
    return (
        f"A 'yes' makes '{attribute}' {r} times as likely as before (in odds: posterior odds "
        f"= prior odds x {r}); a 'no' makes it {r} times less likely."
    )


# --------------------------------------------------------------------------- tables


def check_epsilons(name: str, values: Iterable[Any]) -> tuple[float, ...]:
    """``values`` as a tuple of epsilons, each in ``[0, MAX_FINITE_EPSILON]`` or ``inf``
    and named ``name[i]`` in its error; an empty sequence is refused."""
    out = tuple(_epsilon(f"{name}[{i}]", x) for i, x in enumerate(values))
    if not out:
        raise ParameterError(f"`{name}` must hold at least one value, got none.")
    return out


def truth_table(epsilons: Iterable[float] = DEFAULT_EPSILONS) -> Table:
    """epsilon against the truth probability and the odds of truth, both calibrations.

    Columns: the parameter ``epsilon``; ``exact``: truth probability ``e^eps/(1+e^eps)``,
    odds ``e^eps``, lying probability; ``half``: truth probability
    ``e^(eps/2)/(1+e^(eps/2))``, odds ``e^(eps/2)``, and the true epsilon of one bit so
    reported (``eps/2``).

    >>> row = truth_table([1.0]).to_dicts()[0]
    >>> round(row["P(truth) exact"], 4), round(row["P(truth) half"], 4), row["one-bit epsilon half"]
    (0.7311, 0.6225, 0.5)
    """
    rows = []
    for eps in check_epsilons("epsilons", epsilons):
        t = odds_to_probability(eps)
        th = odds_to_probability(eps / 2)
        rows.append((eps, t, math.exp(eps), 1 - t, th, math.exp(eps / 2), eps / 2))
    return Table(
        (
            "epsilon",
            "P(truth) exact",
            "odds exact",
            "P(lie) exact",
            "P(truth) half",
            "odds half",
            "one-bit epsilon half",
        ),
        tuple(rows),
        title="binary mechanism: epsilon against the truth probability",
    )


def lying_table(qs: Iterable[float] = DEFAULT_LYING) -> Table:
    """epsilon against the lying probability ``q`` (0 < q <= 1/2): ``eps = ln((1-q)/q)``.

    >>> print(lying_table([0.25, 0.5]))
    binary mechanism: epsilon against the lying probability q
    P(lie) q  P(truth)  odds of truth  epsilon
    --------  --------  -------------  -------
        0.25      0.75              3   1.0986
         0.5       0.5              1        0
    """
    rows = []
    for i, q in enumerate(qs):
        eps = epsilon_from_lying_probability(v.real(f"qs[{i}]", q))
        rows.append((float(q), 1 - float(q), (1 - float(q)) / float(q), eps))
    if not rows:
        raise ParameterError("`qs` must hold at least one value, got none.")
    return Table(
        ("P(lie) q", "P(truth)", "odds of truth", "epsilon"),
        tuple(rows),
        title="binary mechanism: epsilon against the lying probability q",
    )


def posterior_table(epsilon: float, priors: Iterable[float] = DEFAULT_PRIORS) -> Table:
    """What one report of an ``epsilon`` binary mechanism does to an adversary's belief.

    ``posterior odds = prior odds x e^eps`` after a "yes", ``x e^-eps`` after a "no".

    >>> print(posterior_table(math.log(3), [0.1, 0.5]))
    one report at epsilon = 1.0986: likelihood ratio 3
    prior P(has A)  after a 'yes'  after a 'no'
    --------------  -------------  ------------
               0.1           0.25        0.0357
               0.5           0.75          0.25
    """
    eps = _epsilon("epsilon", epsilon)
    rows = []
    for i, prior in enumerate(priors):
        p = v.probability(f"priors[{i}]", prior)
        rows.append((p, posterior(p, eps, "yes"), posterior(p, eps, "no")))
    if not rows:
        raise ParameterError("`priors` must hold at least one value, got none.")
    return Table(
        ("prior P(has A)", "after a 'yes'", "after a 'no'"),
        tuple(rows),
        title=f"one report at epsilon = {_cell(eps)}: likelihood ratio {_ratio_text(eps)}",
    )


def _fill(text: str) -> str:
    return textwrap.fill(text, _WIDTH, break_on_hyphens=False, break_long_words=False)


def _pieces(eps: float, attribute: str, name: str = "") -> tuple[list[str], bool, list[str]]:
    """The explanation of ``eps``: paragraphs before the posterior table, whether the table
    is shown, and paragraphs after it (unfilled)."""
    if math.isinf(eps):
        return (
            [
                f"{name}epsilon = inf: some report can only come from one answer, so it "
                "reveals that answer.",
                "There is no deniability for a respondent who gives that report; no "
                "finite privacy budget can pay for this question.",
            ],
            False,
            [],
        )
    if eps == 0:
        return (
            [
                f"{name}epsilon = 0: reports do not depend on the answer, so they reveal "
                "nothing about anyone, and estimate nothing either."
            ],
            False,
            [],
        )
    t = odds_to_probability(eps)
    intro = [
        f"{name}epsilon = {_cell(eps)}: one answer reported with the binary mechanism is told "
        f"truthfully with probability {_cell(t)} (odds {math.exp(eps):.4g} to 1) and flipped "
        f"with probability {_cell(1 - t)}.",
        likelihood_sentence(eps, attribute),
        "Whatever the adversary believed before, one report moves the odds by at most this "
        "factor, for any mechanism with this epsilon (Dwork & Roth 2014, sec. 3.2):",
    ]
    closing = [
        f"The 'half' calibration with parameter {_cell(eps)} (for one-hot / unary encodings, "
        f"where one answer changes two bits) tells one bit truthfully with probability "
        f"{_cell(odds_to_probability(eps / 2))}; used for a single bit it is "
        f"{_cell(eps / 2)}-LDP.",
        f"Ten questions at this epsilon cost at most {_cell(10 * eps)} in total (basic "
        "composition); asking the same question again with memoization costs nothing more.",
    ]
    return intro, True, closing


def explain(epsilon: float | Design, attribute: str = "has A") -> str:
    """A plain-language explanation of ``epsilon`` (a number, or a design's exact epsilon).

    >>> print(explain(1.0).partition("A 'yes'")[0].strip())
    epsilon = 1: one answer reported with the binary mechanism is told truthfully with
    probability 0.7311 (odds 2.718 to 1) and flipped with probability 0.2689.
    >>> print(explain(math.inf).splitlines()[0])
    epsilon = inf: some report can only come from one answer, so it reveals that answer.
    """
    name = ""
    if isinstance(epsilon, Design):
        name = f"design {epsilon.name!r}: "
        eps = epsilon.epsilon
    else:
        eps = _epsilon("epsilon", epsilon)
    intro, table, closing = _pieces(eps, attribute, name)
    if math.isinf(eps):  # the first line as it is, the second filled
        return "\n".join([intro[0], _fill(intro[1])])
    if not table:
        return intro[0]
    text = [_fill(p) for p in intro]
    text += ["", str(posterior_table(eps)), ""]
    text += [_fill(p) for p in closing]
    return "\n".join(text)


@dataclass(frozen=True)
class Explanation(Result):
    """An epsilon explained (what ``deniable privacy explain`` prints): the truth and lying
    probabilities of the binary mechanism at this epsilon, the likelihood ratio, the
    sentence and text of :func:`explain`, what one report does to a belief
    (:func:`posterior_table`), and the truth and lying tables around it.

    >>> e = Explanation(math.log(3))
    >>> round(e.truth_probability, 4), round(e.lying_probability, 4), round(e.likelihood_ratio, 6)
    (0.75, 0.25, 3.0)
    """

    epsilon: float
    attribute: str = "has A"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _epsilon("epsilon", self.epsilon))
        likelihood_sentence(self.epsilon, self.attribute)  # checks the attribute

    @property
    def truth_probability(self) -> float:
        """``e^eps / (1 + e^eps)``: one bit is reported truthfully (1 for an infinite eps)."""
        return odds_to_probability(self.epsilon)

    @property
    def lying_probability(self) -> float:
        """``1 / (1 + e^eps)``: one bit is flipped (0 for an infinite eps)."""
        return odds_to_probability(-self.epsilon)

    @property
    def likelihood_ratio(self) -> float:
        """``e^eps``: the most one report moves the odds."""
        return math.exp(self.epsilon)

    @property
    def text(self) -> str:
        """:func:`explain` of this epsilon."""
        return explain(self.epsilon, self.attribute)

    def truth_table(self) -> Table:
        """:func:`truth_table` of the usual epsilons and this one."""
        return truth_table(sorted(set(DEFAULT_EPSILONS) | {self.epsilon}))

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON dict: the probabilities, ratio, sentence, text and the three tables."""
        result: dict[str, Any] = to_jsonable(
            {
                "epsilon": self.epsilon,
                "attribute": self.attribute,
                "truth_probability": self.truth_probability,
                "lying_probability": self.lying_probability,
                "likelihood_ratio": self.likelihood_ratio,
                "sentence": likelihood_sentence(self.epsilon, self.attribute),
                "text": self.text,
                "posterior_table": posterior_table(self.epsilon).to_json(),
                "truth_table": self.truth_table().to_json(),
                "lying_table": lying_table().to_json(),
            }
        )
        return result

    def table(self) -> Table:
        """The explanation's paragraphs, the posterior table, then the truth and lying
        tables."""
        intro, show, closing = _pieces(self.epsilon, self.attribute)
        sections = [replace(posterior_table(self.epsilon), notes=tuple(closing))] if show else []
        sections += [self.truth_table(), lying_table()]
        return Table((), (), notes=tuple(intro), sections=tuple(sections))


# --------------------------------------------------------------------------- plots
