"""Physical randomizers: forced-response protocols run with fair coins and dice.

Biased coins do not exist, but a fair device with ``N`` equally likely outcomes can force
"yes" on ``a`` of them, "no" on ``a`` others, and ask for the truth on the remaining
``N - 2a`` (forced response, Boruch 1971).  :func:`design_protocol` picks, for a target
``epsilon`` or truth probability, the device and ``a`` that come closest to the target
*without exceeding it*, and :class:`CoinProtocol` prints instructions a respondent can
follow and the protocol's exact probabilities as fractions, so that an auditor can check
``epsilon`` by hand.

Devices (each outcome equally likely):

======================  ========  ==============================================
device                  outcomes  rules used
======================  ========  ==============================================
``"2 coins"``           4         both heads / both tails (Dwork & Roth's coins)
``"3 coins"``           8         all heads (a = 1) or exactly two heads (a = 3)
``"4 coins"``           16        all heads (a = 1) or at least three heads (a = 5)
``"d4"`` ... ``"d20"``  sides     the lowest faces force "yes", the next "no"
``"d100"``              100       two ten-sided dice read as 1..100
======================  ========  ==============================================

Coin rules depend only on how many coins show heads, so a respondent never has to keep
track of which coin is which; a single coin has no such rule (both of its outcomes would
be forced), so ``"coin"`` / ``"coins"`` name the family of two to four coins and ``"dice"``
every die.

References: Warner (1965), randomized response; Boruch (1971), forced response; Dwork &
Roth (2014), *The Algorithmic Foundations of Differential Privacy*, sec. 3.2 (two coins).
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from deniable import _validation as v
from deniable.designs._forced import ForcedResponse
from deniable.exceptions import ParameterError, ParameterTypeError, PrivacyError

__all__ = ["DEVICES", "CoinProtocol", "all_protocols", "design_protocol"]

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

_COINS = {"2 coins": 2, "3 coins": 3, "4 coins": 4}
_ALIASES: dict[str, tuple[str, ...]] = {
    "coin": tuple(_COINS),
    "coins": tuple(_COINS),
    "dice": tuple(d for d in DEVICES if d not in _COINS),
}
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


def _coin_rules(k: int) -> dict[int, tuple[str, str, str]]:
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


def _ratio_str(r: Fraction) -> str:
    return f"ln({r})"


@dataclass(frozen=True)
class CoinProtocol:
    """A forced-response protocol run with a fair physical device.

    The device has ``outcomes = N`` equally likely outcomes; ``forced_yes`` of them say
    "answer yes", ``forced_no`` say "answer no", and the other ``N - forced_yes - forced_no``
    say "answer truthfully".  With ``a`` = ``forced_yes`` and ``b`` = ``forced_no``:

    * ``P(truth) = (N - a - b) / N``, ``P(yes | 1) = (N - b) / N``, ``P(yes | 0) = a / N``;
    * ``epsilon = max(ln((N - b) / a), ln((N - a) / b))`` (Boruch 1971 forced response:
      the larger likelihood ratio of a "yes" and of a "no" report).

    For a fixed truth probability (fixed ``a + b``), ``epsilon`` is smallest when
    ``a = b``: one of the two ratios grows as the forcing gets lopsided, so the protocols
    :func:`design_protocol` offers force symmetrically, ``epsilon = ln((N - a) / a)``.
    Coins allow only the symmetric rules listed in the module docstring.

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
        if device in _COINS:
            allowed = sorted(_coin_rules(_COINS[device]))
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
        if self.device in _COINS:
            k = _COINS[self.device]
            yes, no, truth = _coin_rules(k)[a]
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
        out["epsilon_exact"] = _ratio_str(self.likelihood_ratio)
        out["instructions"] = self.instructions
        return out

    def table(self) -> str:
        """A readable plain-text table: device, exact probabilities, epsilon, instructions."""

        def frac(x: Fraction) -> str:
            return f"{x} = {float(x):.6f}"

        def count(k: int) -> str:
            return f"{k} of {self.outcomes} outcome" + ("s" if self.outcomes != 1 else "")

        rows = [
            ("device", f"{self.device} ({self.outcomes} equally likely outcomes)"),
            ('forced "yes"', count(self.forced_yes)),
            ('forced "no"', count(self.forced_no)),
            ("P(answer truthfully)", frac(self.truth_probability)),
            ("P(yes | true answer 1)", frac(self.p_yes_given_1)),
            ("P(yes | true answer 0)", frac(self.p_yes_given_0)),
            ("epsilon", f"{_ratio_str(self.likelihood_ratio)} = {self.epsilon:.6f}"),
        ]
        width = max(len(k) for k, _ in rows)
        lines = [f"{k.ljust(width)}  {val}" for k, val in rows]
        wrapped = textwrap.wrap(self.instructions, width=88 - width - 2)
        lines.append(f"{'instructions'.ljust(width)}  {wrapped[0]}")
        lines.extend(" " * (width + 2) + line for line in wrapped[1:])
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


def _resolve_devices(devices: Sequence[str] | str | None) -> tuple[str, ...]:
    """Canonical device names (aliases expanded, duplicates dropped) in tie-break order."""
    if devices is None:
        return tuple(DEVICES)
    if isinstance(devices, str):
        devices = (devices,)
    if not isinstance(devices, Sequence):
        raise ParameterTypeError(
            f"`devices` must be a sequence of device names, got {type(devices).__name__} "
            f"{devices!r}."
        )
    allowed = (*DEVICES, *_ALIASES)
    chosen: set[str] = set()
    for i, name in enumerate(devices):
        if not isinstance(name, str):
            raise ParameterTypeError(
                f"`devices[{i}]` must be a device name (str), got {type(name).__name__} {name!r}."
            )
        key = " ".join(name.lower().split())
        v.choice(f"devices[{i}]", key if key in allowed else name, allowed)
        chosen.update(_ALIASES.get(key, (key,)))
    if not chosen:
        listed = ", ".join(repr(d) for d in allowed)
        raise ParameterError(f"`devices` must name at least one of {listed}, got {devices!r}.")
    return tuple(d for d in DEVICES if d in chosen)


def _candidates(devices: tuple[str, ...]) -> list[CoinProtocol]:
    out: list[CoinProtocol] = []
    for device in devices:
        n = DEVICES[device]
        forced = sorted(_coin_rules(_COINS[device])) if device in _COINS else range(1, (n + 1) // 2)
        out.extend(CoinProtocol(device, n, a, a) for a in forced)
    return out


def _order(p: CoinProtocol) -> tuple[Fraction, int, int, int]:
    # epsilon (through its exact ratio), then fewest outcomes, then the simpler device
    return (p.likelihood_ratio, p.outcomes, list(DEVICES).index(p.device), p.forced_yes)


def all_protocols(devices: Sequence[str] | str | None = None) -> list[CoinProtocol]:
    """Every candidate protocol with symmetric forcing, sorted by epsilon.

    Ties in epsilon (e.g. two coins, d4 with a = 1 and d8 with a = 2 all give ``ln 3``) are
    ordered by fewest outcomes, then by the order of :data:`DEVICES` (coins first).

    >>> [(p.device, p.forced_yes) for p in all_protocols(["d6", "2 coins"])]
    [('d6', 2), ('2 coins', 1), ('d6', 1)]
    """
    return sorted(_candidates(_resolve_devices(devices)), key=_order)


def design_protocol(
    *,
    epsilon: float | None = None,
    truth_probability: float | None = None,
    devices: Sequence[str] | str | None = None,
) -> CoinProtocol:
    """The protocol closest to a target ``epsilon`` or truth probability, never above it.

    Give exactly one target.  With ``epsilon``: the protocol with the largest epsilon
    ``<= epsilon`` (privacy is never weaker than asked).  With ``truth_probability``: the
    largest ``P(truth) <= truth_probability`` (it is increasing in epsilon, so the same
    reason applies).  Ties go to the fewest outcomes, then the simpler device (coins first).
    Targets are compared in floating point with the correctly rounded exact values, so
    ``truth_probability=2/3`` selects the protocol whose ``P(truth)`` is exactly 2/3.

    Parameters
    ----------
    epsilon : float, optional
        Target epsilon in ``(0, inf)``.
    truth_probability : float, optional
        Target probability of a truthful answer, in ``(0, 1)``.
    devices : sequence of str, optional
        Allowed devices (names of :data:`DEVICES`, or ``"coin"``/``"coins"``/``"dice"``);
        all by default.

    Raises
    ------
    ParameterError, ParameterTypeError
        Neither or both targets, a target out of range, or an unknown device name.
    PrivacyError
        If no allowed protocol meets the target; the message gives the smallest achievable
        value and a device that would meet it (or a computer randomizer if none does).

    Examples
    --------
    >>> p = design_protocol(epsilon=1.65)
    >>> p.device, p.forced_yes, p.likelihood_ratio, round(p.epsilon, 4)
    ('d6', 1, Fraction(5, 1), 1.6094)
    >>> design_protocol(truth_probability=0.5).device      # Dwork & Roth's two coins
    '2 coins'
    """
    if (epsilon is None) == (truth_probability is None):
        got = "both" if epsilon is not None else "neither"
        raise ParameterError(f"give exactly one of `epsilon` or `truth_probability`, got {got}.")
    names = _resolve_devices(devices)
    if epsilon is not None:
        target = v.positive("epsilon", epsilon)

        def ok(p: CoinProtocol) -> bool:
            return p.epsilon <= target

        what = "epsilon"
    else:
        target = v.probability(
            "truth_probability", truth_probability, low_open=True, high_open=True
        )

        def ok(p: CoinProtocol) -> bool:
            return float(p.truth_probability) <= target

        what = "truth_probability"
    candidates = all_protocols(names)
    admissible = [p for p in candidates if ok(p)]
    if admissible:
        best = max(p.likelihood_ratio for p in admissible)
        return min((p for p in admissible if p.likelihood_ratio == best), key=_order)
    smallest = candidates[0]
    value = (
        f"{_ratio_str(smallest.likelihood_ratio)} = {smallest.epsilon:.6g}"
        if what == "epsilon"
        else f"{smallest.truth_probability} = {float(smallest.truth_probability):.6g}"
    )
    message = (
        f"no protocol using {', '.join(names)} has `{what}` <= {v._fmt(target)}: the smallest "
        f"achievable is {value} ({smallest.device}, {smallest.forced_yes} of "
        f"{smallest.outcomes} outcomes forced each way)."
    )
    better = [p for p in all_protocols() if ok(p)]
    if better:
        device = min(better, key=lambda p: (p.outcomes, list(DEVICES).index(p.device))).device
        message += f" Allow a device with enough outcomes to reach it, e.g. {device!r}."
    else:
        message += (
            " No device here has enough outcomes; use a computer randomizer, e.g. "
            "deniable.designs.ForcedResponse.from_epsilon."
        )
    raise PrivacyError(message)
