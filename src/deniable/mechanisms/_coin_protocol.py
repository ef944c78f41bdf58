"""A forced-response protocol run with a fair physical device (:class:`CoinProtocol`): the
devices, the coin rules, exact probabilities and the respondent's instructions.

The devices and rules are tabled in the docstring of :mod:`deniable.mechanisms`, which
re-exports :data:`DEVICES` and :class:`CoinProtocol` and chooses among the protocols.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from deniable.common import validation as v
from deniable.designs import ForcedResponse
from deniable.exceptions import ParameterError
from deniable.results import Result, Table

__all__ = ["COINS", "DEVICES", "CoinProtocol", "coin_rules", "ratio_text"]

#: Device name -> number of equally likely outcomes, simplest device first (tie-break order).
DEVICES: dict[str, int] = {
    "2 coins": 4,
    "3 coins": 8,
    "4 coins": 16,
    "d4": 4,
    "d6": 6,
    "d8": 8,
    "d10": 10,
    "d12": 12,
    "d20": 20,
    "d100": 100,
}

#: Coin devices -> number of coins.
COINS = {"2 coins": 2, "3 coins": 3, "4 coins": 4}
_NUMBER = {2: "two", 3: "three", 4: "four"}
_DIE = {
    "d4": "four-sided die",
    "d6": "six-sided die",
    "d8": "eight-sided die",
    "d10": "ten-sided die",
    "d12": "twelve-sided die",
    "d20": "twenty-sided die",
}
_YES, _NO = 'answer "yes"', 'answer "no"'


def coin_rules(k: int) -> dict[int, tuple[str, str, str]]:
    """For ``k`` coins: forced count ``a`` -> (yes condition, no condition, truth condition).

    Each rule is symmetric under swapping heads and tails, so it forces "yes" and "no" on
    the same number ``a`` of the ``2**k`` equally likely sequences.
    """
    if k == 2:
        return {1: ("both show heads", "both show tails", "one shows heads and one tails")}
    n = _NUMBER[k]
    rules = {
        1: (f"all {n} show heads", f"all {n} show tails", "they show a mix of heads and tails")
    }
    if k == 3:
        # exactly two heads: C(3, 2) = 3 sequences; the truth on HHH and TTT
        rules[3] = (
            "exactly two show heads",
            "exactly two show tails",
            "all three show the same side",
        )
    if k == 4:
        # three or four heads: C(4, 3) + C(4, 4) = 5 sequences; the truth on 2 heads (6 of 16)
        rules[5] = (
            "three or four show heads",
            "three or four show tails",
            "exactly two show heads",
        )
    return rules


def _faces(lo: int, hi: int, span: str) -> str:
    """'1', '1 or 2', '3, 4, 5 or 6', or ``span`` + 'from 15 to 100' past four faces."""
    if lo == hi:
        return str(lo)
    if hi - lo < 4:
        return ", ".join(str(f) for f in range(lo, hi)) + f" or {hi}"
    return f"{span}from {lo} to {hi}"


def ratio_text(r: Fraction) -> str:
    """``ln(r)`` with the exact ratio, e.g. ``ln(5/3)``."""
    return f"ln({r})"


@dataclass(frozen=True)
class CoinProtocol(Result):
    """A forced-response protocol run with a fair physical device.

    The device has ``outcomes = N`` equally likely outcomes; ``forced_yes`` of them say
    "answer yes", ``forced_no`` say "answer no", and the other ``N - forced_yes - forced_no``
    say "answer truthfully".  With ``a`` = ``forced_yes`` and ``b`` = ``forced_no``:

    * ``P(truth) = (N - a - b) / N``, ``P(yes | 1) = (N - b) / N``, ``P(yes | 0) = a / N``;
    * ``epsilon = max(ln((N - b) / a), ln((N - a) / b))`` (Boruch 1971 forced response:
      the larger likelihood ratio of a "yes" and of a "no" report).

    For a fixed truth probability (fixed ``a + b``), ``epsilon`` is smallest when
    ``a = b``: one of the two ratios grows as the forcing gets lopsided, so the protocols
    :func:`~deniable.mechanisms.design_protocol` offers force symmetrically,
    ``epsilon = ln((N - a) / a)``.  Coins allow only the symmetric rules listed in the
    docstring of :mod:`deniable.mechanisms`.

    Examples
    --------
    >>> import textwrap
    >>> p = CoinProtocol("d6", 6, 1, 1)
    >>> p.truth_probability, p.p_yes_given_1, p.p_yes_given_0
    (Fraction(2, 3), Fraction(5, 6), Fraction(1, 6))
    >>> p.likelihood_ratio, round(p.epsilon, 6)
    (Fraction(5, 1), 1.609438)
    >>> print(textwrap.fill(p.instructions, 88))
    Roll one six-sided die where no one can see it. If it shows 1, answer "yes". If it shows
    2, answer "no". If it shows 3, 4, 5 or 6, answer truthfully. Do not tell anyone what it
    showed.
    """

    device: str
    outcomes: int
    forced_yes: int
    forced_no: int

    def __post_init__(self) -> None:
        device = v.choice("device", self.device, tuple(DEVICES))
        n = v.integer("outcomes", self.outcomes)
        if n != DEVICES[device]:
            raise ParameterError(
                f"`outcomes` must be {DEVICES[device]} for device {device!r}, got {n}."
            )
        a = v.integer("forced_yes", self.forced_yes, minimum=1, maximum=n - 2)
        b = v.integer("forced_no", self.forced_no, minimum=1, maximum=n - 2)
        if a + b >= n:
            raise ParameterError(
                f"`forced_yes` + `forced_no` must be < outcomes = {n} (some outcome must ask "
                f"for the truth), got {a} + {b} = {a + b}."
            )
        if device in COINS:
            allowed = sorted(coin_rules(COINS[device]))
            if a != b or a not in allowed:
                listed = ", ".join(str(x) for x in allowed)
                raise ParameterError(
                    f"`forced_yes` = `forced_no` must be one of {listed} for {device!r} "
                    f"(rules by number of heads), got {a} and {b}."
                )
        object.__setattr__(self, "outcomes", n)
        object.__setattr__(self, "forced_yes", a)
        object.__setattr__(self, "forced_no", b)

    @property
    def truth_probability(self) -> Fraction:
        """``(N - a - b) / N``: probability that the device asks for the truth."""
        return Fraction(self.outcomes - self.forced_yes - self.forced_no, self.outcomes)

    @property
    def p_yes_given_1(self) -> Fraction:
        """``(N - b) / N``: a carrier says "yes" unless "no" is forced."""
        return Fraction(self.outcomes - self.forced_no, self.outcomes)

    @property
    def p_yes_given_0(self) -> Fraction:
        """``a / N``: a non-carrier says "yes" only when "yes" is forced."""
        return Fraction(self.forced_yes, self.outcomes)

    @property
    def likelihood_ratio(self) -> Fraction:
        """``e^epsilon = max((N - b) / a, (N - a) / b)``, exact."""
        n, a, b = self.outcomes, self.forced_yes, self.forced_no
        return max(Fraction(n - b, a), Fraction(n - a, b))

    @property
    def epsilon(self) -> float:
        """Exact epsilon, ``ln((N - a) / a)`` for symmetric forcing (the ratio is exact)."""
        # eps = ln(max(P(yes|1)/P(yes|0), P(no|0)/P(no|1))): worst-case ratio of one report
        return math.log(self.likelihood_ratio)

    @property
    def design(self) -> ForcedResponse:
        """The same channel as a :class:`~deniable.designs.ForcedResponse` design."""
        return ForcedResponse(
            forced_yes=self.forced_yes / self.outcomes, forced_no=self.forced_no / self.outcomes
        )

    @property
    def instructions(self) -> str:
        """Plain-language steps for the respondent, one line (wrap it for display)."""
        a, b, n = self.forced_yes, self.forced_no, self.outcomes
        if self.device in COINS:
            k = COINS[self.device]
            yes, no, truth = coin_rules(k)[a]
            steps = [
                f"Flip {_NUMBER[k]} coins where no one can see them.",
                f"If {yes}, {_YES}.",
                f"If {no}, {_NO}.",
                f"If {truth}, answer truthfully.",
                "Do not tell anyone what they showed.",
            ]
        else:
            if self.device == "d100":
                start = (
                    "Roll two ten-sided dice where no one can see them, one for the tens and "
                    "one for the units, and read a number from 1 to 100 (if both dice show "
                    "zero, the number is 100)."
                )
                cond, span = "the number is", ""
                end = "Do not tell anyone what they showed."
            else:
                extra = " (read 0 as 10)" if self.device == "d10" else ""
                start = f"Roll one {_DIE[self.device]} where no one can see it{extra}."
                cond, span = "it shows", "a number "
                end = "Do not tell anyone what it showed."
            steps = [
                start,
                f"If {cond} {_faces(1, a, span)}, {_YES}.",
                f"If {cond} {_faces(a + 1, a + b, span)}, {_NO}.",
                f"If {cond} {_faces(a + b + 1, n, span)}, answer truthfully.",
                end,
            ]
        return " ".join(steps)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON dict: exact probabilities as strings ("3/4") beside their floats."""
        out: dict[str, Any] = {
            "device": self.device,
            "outcomes": self.outcomes,
            "forced_yes": self.forced_yes,
            "forced_no": self.forced_no,
        }
        for key in ("truth_probability", "p_yes_given_1", "p_yes_given_0"):
            value: Fraction = getattr(self, key)
            out[key] = str(value)
            out[f"{key}_float"] = float(value)
        out["likelihood_ratio"] = str(self.likelihood_ratio)
        out["epsilon"] = self.epsilon
        out["epsilon_exact"] = ratio_text(self.likelihood_ratio)
        out["instructions"] = self.instructions
        return out

    def rows(self) -> list[tuple[str, str]]:
        """The device, the exact probabilities (``3/4 = 0.750000``) and epsilon, labelled."""

        def frac(x: Fraction) -> str:
            return f"{x} = {float(x):.6f}"

        return [
            ("device", f"{self.device} ({self.outcomes} equally likely outcomes)"),
            ('forced "yes" / "no"',
             f"{self.forced_yes} / {self.forced_no} of {self.outcomes} outcomes"),
            ("P(answer truthfully)", frac(self.truth_probability)),
            ("P(yes | has A)", frac(self.p_yes_given_1)),
            ("P(yes | does not have A)", frac(self.p_yes_given_0)),
            ("ε", f"{ratio_text(self.likelihood_ratio)} = {self.epsilon:.6f}"),
        ]  # fmt: skip

    def table(self) -> Table:
        """The instructions for each respondent, then :meth:`rows`."""
        return Table(
            (),
            (),
            title="Instructions for each respondent:",
            notes=(self.instructions,),
            sections=(Table.pairs(self.rows()),),
        )
