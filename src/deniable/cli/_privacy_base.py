"""The `deniable privacy` sub-application and the parsing / printing helpers its commands share.

ε and δ are read as text so that ``3/4`` and ``1e-6`` both work, and ε may be ``inf`` (or
``∞``) where an infinite ε means something (a question with a deterministic answer); it is
then printed as ``∞`` and written to JSON as ``"inf"``, never as a finite number.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from fractions import Fraction
from typing import Annotated

import typer

from deniable.cli._base import fail, parse_number
from deniable.common import validation
from deniable.common.validation import fmt_limit
from deniable.exceptions import DeniableError

__all__ = [
    "DeltaOpt",
    "check_choice",
    "option_names",
    "parse_count",
    "parse_counts_per",
    "parse_delta",
    "parse_epsilon",
    "parse_value",
    "parse_values",
    "privacy_app",
]

privacy_app = typer.Typer(
    name="privacy",
    help=(
        "Privacy accounting: composition, conversions between DP flavours, amplification by "
        "shuffling, noise for released counts, epsilon explained, audits and budgets."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)

DeltaOpt = Annotated[str, typer.Option("--delta", help="Target delta, in (0, 1).")]

_INF = ("inf", "+inf", "infinity", "∞")


def parse_value(option: str, text: str, *, allow_inf: bool = False) -> float:
    """A number from ``text`` (``3/4`` and ``1e-6`` work); ``inf`` / ``∞`` when allowed."""
    if text.strip().lower() in _INF:
        if not allow_inf:
            fail(f"`{option}` must be finite, got {text!r}.")
        return math.inf
    x = parse_number(option, text)
    if math.isinf(x) and not allow_inf:  # a number beyond every double, 1e400
        fail(f"`{option}` must be finite, got {text.strip()!r}.")
    return x


def parse_values(option: str, texts: Sequence[str], *, allow_inf: bool = False) -> list[float]:
    """Numbers from repeated options, each of which may also be a comma-separated list."""
    out: list[float] = []
    for text in texts:
        for part in text.split(","):
            if not part.strip():
                fail(f"`{option}` must be comma-separated numbers, got {text!r}.")
            out.append(parse_value(option, part, allow_inf=allow_inf))
    return out


def parse_delta(option: str, text: str) -> float:
    """A δ in the open interval (0, 1)."""
    d = parse_value(option, text)
    if not 0 < d < 1:
        fail(f"`{option}` must be in (0, 1), got {text}.")
    return d


def parse_count(option: str, text: str, *, minimum: int = 1, maximum: int | None = None) -> int:
    """A whole number in ``[minimum, maximum]`` (``1e6`` and ``1000000`` both work)."""
    allowed = f">= {minimum}" if maximum is None else f"in [{minimum}, {fmt_limit(maximum)}]"
    try:
        x = validation.exact_number(text)
    except (ValueError, ZeroDivisionError):
        x = None
    if (
        not isinstance(x, Fraction)
        or x.denominator != 1
        or x < minimum
        or (maximum is not None and x > maximum)
    ):
        fail(f"`{option}` must be a whole number {allowed}, got {text!r}.")
    return int(x)


def parse_counts_per(option: str, text: str, n: int, *, minimum: int = 1) -> list[int]:
    """One whole number for all ``n`` items, or ``n`` of them separated by commas."""
    parts = text.split(",")
    if len(parts) == 1:
        return [parse_count(option, text, minimum=minimum)] * n
    if len(parts) != n:
        fail(
            f"`{option}` must be one whole number, or one per question ({n}) separated by "
            f"commas, got {len(parts)} values: {text!r}."
        )
    return [parse_count(option, part, minimum=minimum) for part in parts]


def parse_epsilon(
    option: str, text: str, *, allow_zero: bool = True, allow_inf: bool = True
) -> float:
    """An epsilon-like number (also rho, mu): ``[0, inf]``, or the narrower range allowed."""
    x = parse_value(option, text, allow_inf=allow_inf)
    if x < 0 or (x == 0 and not allow_zero):
        low = "[0" if allow_zero else "(0"
        high = "inf]" if allow_inf else "inf)"
        fail(f"`{option}` must be in {low}, {high}, got {text.strip()}.")
    return x


@contextmanager
def option_names(names: Mapping[str, str]) -> Iterator[None]:
    """Report a library error that names a Python parameter (`` `claimed_epsilon` ``) with
    the CLI option that set it (`` `--claimed-epsilon` ``), so every message names what the
    user typed."""
    try:
        yield
    except DeniableError as exc:
        message = str(exc)
        for name, opt in names.items():
            message = re.sub(rf"`{re.escape(name)}`", f"`{opt}`", message)
        fail(message)


def check_choice(option: str, value: str, choices: Sequence[str]) -> str:
    """``value`` if it is one of ``choices``; otherwise one error line naming them."""
    if value not in choices:
        fail(f"`{option}` must be one of {', '.join(choices)}; got {value!r}.")
    return value
