"""The result of a heavy-hitter protocol (:class:`~deniable.oracles.PEM`,
:class:`~deniable.oracles.TreeHist`): the strings found, their frequencies with standard
errors and intervals, and the rounds with the threshold that decided each."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from deniable.results import ConfidenceInterval, Result, Table, normal_quantile

__all__ = ["HeavyHitterRound", "HeavyHitters"]


@dataclass(frozen=True)
class HeavyHitterRound:
    """One round: the prefix length ``bits``, the ``devices`` of its group, the number of
    ``candidates`` estimated, how many were ``kept``, the ``threshold`` on the estimated
    frequency that decided (the exact-binomial one, or the last kept estimate when the
    top-k cap decided), ``rule`` (``"binomial"`` or ``"top-k"``) and the kept
    ``prefixes`` (``ceil(bits / 8)`` bytes each, the bits past ``bits`` zero)."""

    bits: int
    devices: int
    candidates: int
    kept: int
    threshold: float
    rule: str
    prefixes: tuple[bytes, ...] = field(default=(), repr=False)


@dataclass(frozen=True)
class HeavyHitters(Result):
    """The strings a heavy-hitter protocol found (most frequent first).

    ``strings`` are decoded (padding stripped; ``bytes`` where they are not UTF-8),
    ``frequencies`` the unbiased estimates ``(c / n - q) / (p - q)`` from the last group's
    ``n`` reports, ``se`` their standard errors for devices sampled from a population
    (``sqrt(lambda (1 - lambda) / (n (p - q)^2))`` at the observed support share
    ``lambda = c / n``; the group is a uniform random sample of the devices), ``rounds`` the
    rounds, ``epsilon`` the epsilon of each device (it reports once), ``alpha`` the
    family-wise false-discovery target of a round (``None``: top-k only) and ``level`` the
    level of ``intervals``.

    The estimate of a string in the list was also used to select it in the last round, so
    near the threshold it is biased upward (the winner's curse); the interval does not
    correct for that.
    """

    method: str
    strings: tuple[str | bytes, ...]
    frequencies: tuple[float, ...]
    se: tuple[float, ...]
    rounds: tuple[HeavyHitterRound, ...]
    epsilon: float
    n: int
    alpha: float | None
    level: float = 0.95

    def intervals(self) -> tuple[ConfidenceInterval, ...]:
        """Normal (Wald) intervals ``f +- z se`` at ``level``."""
        z = normal_quantile(self.level)
        return tuple(
            ConfidenceInterval(f - z * s, f + z * s)
            for f, s in zip(self.frequencies, self.se, strict=True)
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON: the list with estimates and intervals, the rounds, epsilon."""
        return {
            "method": self.method,
            "epsilon_per_device": self.epsilon,
            "n": self.n,
            "alpha": self.alpha,
            "level": self.level,
            "heavy_hitters": [
                {
                    "string": s if isinstance(s, str) else s.hex(),
                    "utf8": isinstance(s, str),
                    "frequency": f,
                    "se": e,
                    "ci": [ci.low, ci.high],
                }
                for s, f, e, ci in zip(
                    self.strings, self.frequencies, self.se, self.intervals(), strict=True
                )
            ],
            "rounds": [
                {
                    "bits": r.bits,
                    "devices": r.devices,
                    "candidates": r.candidates,
                    "kept": r.kept,
                    "threshold": r.threshold,
                    "rule": r.rule,
                    "prefixes": [b.hex() for b in r.prefixes],
                }
                for r in self.rounds
            ],
        }

    def table(self) -> Table:
        """The list (string, frequency, SE, interval) with the rounds as a section."""
        rows = tuple(
            (s if isinstance(s, str) else repr(s), f, e, ci.format())
            for s, f, e, ci in zip(
                self.strings, self.frequencies, self.se, self.intervals(), strict=True
            )
        )
        rounds = Table(
            ("bits", "devices", "candidates", "kept", "threshold", "rule"),
            tuple(
                (r.bits, r.devices, r.candidates, r.kept, r.threshold, r.rule) for r in self.rounds
            ),
            title="rounds",
        )
        target = (
            "top-k only (no false-discovery target)"
            if self.alpha is None
            else f"P(a string of frequency 0 in a round's kept list) <= alpha = {self.alpha:g}"
        )
        return Table(
            ("string", "frequency", "SE", f"{self.level:.0%} CI"),
            rows,
            title=f"{self.method} heavy hitters: {len(rows)} of n = {self.n} devices",
            notes=(
                f"epsilon per device = {self.epsilon:.6g} (each device reports once)",
                target,
                "SE: devices sampled from a population (the last group's reports)",
            ),
            sections=(rounds,),
        )


def wald_se(count: int, n: int, p: float, q: float) -> float:
    """``sqrt(lambda (1 - lambda) / (n (p - q)^2))`` at ``lambda = count / n``."""
    lam = count / n
    return math.sqrt(lam * (1 - lam) / n) / (p - q)
