"""An error that refuses a device's or a respondent's value never quotes the value.

A string a device reports, a number it measures, an answer: each is what the randomization
hides, and an error message may be logged, shown on a dashboard or sent on in a crash
report.  Each case below plants a unique marker in a value that breaks one rule and checks
that the error names the parameter, the position and the rule, and holds no part of the
marker.  (Parameters of a mechanism, and an analyst's candidate list, are configuration:
they may be quoted.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from deniable.cli._base import CliError
from deniable.cli._telemetry_strings import check_lengths
from deniable.designs import Categorical
from deniable.exceptions import DataError, DeniableError
from deniable.mechanisms import DiscreteLaplaceMechanism
from deniable.oracles import (
    CMS,
    HCMS,
    PEM,
    SFP,
    DuchiMechanism,
    PiecewiseMechanism,
    Rappor,
    RapporNgram,
    SquareWave,
    TreeHist,
)

MARK = "Qx7Zk"  # five characters no message of the project holds
BAD = MARK.encode() + b"\xff"  # not UTF-8
LONG = "hgfedcbahg"  # too long for the n-gram oracle below, in its alphabet

pem = PEM(epsilon=4.0, max_bytes=8, start_bits=8, step_bits=8, top_k=4)
tree = TreeHist(epsilon=4.0, max_bytes=8, top_k=4)
cms = CMS(k=16, m=64, epsilon=4.0, salt=1)
hcms = HCMS(k=16, m=64, epsilon=4.0, salt=1)
sfp_bytes = SFP(epsilon=6.0, max_length=8, puzzle_bits=6, k=16, m=64)
sfp_abc = SFP(epsilon=6.0, max_length=8, alphabet="abcdefgh", puzzle_bits=6, k=16, m=64)
ngram = RapporNgram(Rappor(m=64, h=2, cohorts=4, f=0.5, p=0.5, q=0.75), None, "abcdefgh", 2, 8)

# (name, the call, the rule's words that the message must hold)
STRING_CASES: list[tuple[str, Callable[[], Any], str]] = []
for label, mech in [("pem", pem), ("treehist", tree)]:
    STRING_CASES += [
        (f"{label} too long", lambda m=mech: m.randomize([MARK * 4], rng=1), "at most"),
        (f"{label} NUL", lambda m=mech: m.randomize([MARK + "\x00"], rng=1), "NUL"),
        (f"{label} bad UTF-8", lambda m=mech: m.randomize([BAD], rng=1), "UTF-8"),
        (f"{label} surrogate", lambda m=mech: m.randomize([MARK + "\ud800"], rng=1), "UTF-8"),
    ]
for label, sk in [("cms", cms), ("hcms", hcms), ("sfp", sfp_bytes)]:
    STRING_CASES += [
        (f"{label} bad UTF-8", lambda m=sk: m.randomize([BAD], rng=1), "UTF-8"),
        (f"{label} surrogate", lambda m=sk: m.randomize([MARK + "\ud800"], rng=1), "Unicode"),
    ]
pem_abc = PEM(epsilon=4.0, max_bytes=8, top_k=4, alphabet="abcdefgh")
tree_abc = TreeHist(epsilon=4.0, max_bytes=8, top_k=4, alphabet="abcdefgh")
STRING_CASES += [
    ("pem alphabet", lambda: pem_abc.randomize(["abc" + MARK], rng=1), "alphabet"),
    ("treehist alphabet", lambda: tree_abc.randomize(["abc" + MARK], rng=1), "alphabet"),
    ("sfp too long", lambda: sfp_bytes.randomize([MARK * 4], rng=1), "max_length"),
    ("sfp alphabet", lambda: sfp_abc.randomize(["abc" + MARK], rng=1), "alphabet"),
    ("ngram alphabet", lambda: ngram.randomize(["ab" + MARK], rng=1), "alphabet"),
    ("ngram too long", lambda: ngram.randomize([LONG], rng=1), "characters"),
    ("ngram bad UTF-8", lambda: ngram.randomize([BAD], rng=1), "UTF-8"),
]


def _fragments(marker: str) -> list[str]:
    """Every 3-character piece of the marker: no part of the value may show."""
    return [marker[i : i + 3] for i in range(len(marker) - 2)]


@pytest.mark.parametrize(("case", "call", "rule"), STRING_CASES, ids=[c[0] for c in STRING_CASES])
def test_a_refused_string_is_never_quoted(case: str, call: Callable[[], Any], rule: str) -> None:
    with pytest.raises(DeniableError) as info:
        call()
    message = str(info.value)
    assert rule in message, message
    assert "[0]" in message, message  # the position
    for piece in [*_fragments(MARK), *_fragments(LONG)]:
        assert piece not in message, (case, message)


NUMBER_CASES: list[tuple[str, Callable[[], Any], str, str]] = [
    (
        "duchi",
        lambda: DuchiMechanism(1.0, lower=0.0, upper=1.0).randomize([0.5, 7351.25]),
        "7351",
        "index 1",
    ),
    (
        "piecewise",
        lambda: PiecewiseMechanism(1.0, lower=0.0, upper=1.0).randomize([7351.25, 0.5]),
        "7351",
        "index 0",
    ),
    (
        "square wave",
        lambda: SquareWave(1.0, lower=0, upper=10).randomize([1.0, 2.0, 7351.25]),
        "7351",
        "index 2",
    ),
    (
        "categorical answer",
        lambda: Categorical.from_epsilon(1.0, 16).randomize(np.array([3, 7351]), rng=1),
        "7351",
        "index 1",
    ),
    (
        "categorical non-integer answer",
        lambda: Categorical.from_epsilon(1.0, 16).randomize(np.array([3.0, 7.351]), rng=1),
        "7.351",
        "index 1",
    ),
    (
        "randomize and tally",
        lambda: Categorical.from_epsilon(1.0, 16).randomize_and_tally(np.array([7351, 1]), rng=1),
        "7351",
        "index 0",
    ),
    (
        "discrete laplace",
        lambda: DiscreteLaplaceMechanism.from_epsilon(1.0).randomize([1, 73.51]),
        "73.51",
        "index 1",
    ),
]


@pytest.mark.parametrize(
    ("case", "call", "value", "where"), NUMBER_CASES, ids=[c[0] for c in NUMBER_CASES]
)
def test_a_refused_number_is_never_quoted(
    case: str, call: Callable[[], Any], value: str, where: str
) -> None:
    with pytest.raises(DataError) as info:
        call()
    message = str(info.value)
    assert value not in message, (case, message)
    assert where in message and "`" in message, (case, message)  # the parameter and position


def test_the_cli_names_a_long_string_by_its_number_only() -> None:
    with pytest.raises(CliError) as info:
        check_lengths("--values", ["ok", MARK * 10], 16)
    message = str(info.value)
    assert "string 2" in message and "max_bytes = 16" in message and "50" in message
    assert all(piece not in message for piece in _fragments(MARK)), message
