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

from collections.abc import Sequence
from fractions import Fraction

from deniable.common import validation as v
from deniable.exceptions import ParameterError, ParameterTypeError, PrivacyError
from deniable.mechanisms._coin_protocol import COINS, DEVICES, CoinProtocol, coin_rules, ratio_text

__all__ = [
    "all_protocols",
    "design_protocol",
]

#: Names that stand for several devices in ``devices=``.
_ALIASES: dict[str, tuple[str, ...]] = {
    "coin": tuple(COINS),
    "coins": tuple(COINS),
    "dice": tuple(d for d in DEVICES if d not in COINS),
}


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
        forced = sorted(coin_rules(COINS[device])) if device in COINS else range(1, (n + 1) // 2)
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
        f"{ratio_text(smallest.likelihood_ratio)} = {smallest.epsilon:.6g}"
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
