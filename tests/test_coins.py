"""Physical randomizers: exact fractions, target selection, and the printed rules followed
literally (by exhaustive enumeration of the device's outcomes and by seeded simulation)."""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deniable.designs import ForcedResponse, TwoCoin, channel_epsilon
from deniable.exceptions import ParameterError, ParameterTypeError, PrivacyError
from deniable.mechanisms import DEVICES, CoinProtocol, all_protocols, design_protocol

# --- the candidate set, derived here independently -------------------------------------------

DICE = {"d4": 4, "d6": 6, "d8": 8, "d10": 10, "d12": 12, "d20": 20, "d100": 100}
# coin rules force "yes" on these head counts (and "no" on the mirrored tail counts)
COIN_RULES = {2: [{2}], 3: [{3}, {2}], 4: [{4}, {3, 4}]}


def expected_candidates(devices: list[str]) -> list[tuple[str, int, int]]:
    """(device, N, a) for every symmetric protocol: dice a = 1..(N-1)//2; coins by counts."""
    out = []
    for d in devices:
        if d in DICE:
            n = DICE[d]
            out += [(d, n, a) for a in range(1, (n - 1) // 2 + 1)]
        else:
            k = int(d[0])
            for heads in COIN_RULES[k]:
                out.append((d, 2**k, sum(math.comb(k, h) for h in heads)))
    return out


ALL = list(DEVICES)
COIN_DEVICES = ["2 coins", "3 coins", "4 coins"]


def eps_of(n: int, a: int) -> float:
    return math.log(Fraction(n - a, a))


def test_candidate_set_matches_independent_enumeration() -> None:
    got = {(p.device, p.outcomes, p.forced_yes) for p in all_protocols()}
    assert got == set(expected_candidates(ALL))
    assert all(p.forced_yes == p.forced_no for p in all_protocols())
    assert len(all_protocols()) == 5 + 1 + 2 + 3 + 4 + 5 + 9 + 49


# --- exact fractions of the known protocols ----------------------------------------------------


def test_d6_one_yes_one_no() -> None:
    p = CoinProtocol("d6", 6, 1, 1)
    assert p.truth_probability == Fraction(2, 3)
    assert p.p_yes_given_1 == Fraction(5, 6)
    assert p.p_yes_given_0 == Fraction(1, 6)
    assert p.likelihood_ratio == 5
    assert p.epsilon == math.log(5)


def test_two_coins_is_dwork_roth() -> None:
    p = CoinProtocol("2 coins", 4, 1, 1)
    assert (p.truth_probability, p.p_yes_given_1, p.p_yes_given_0) == (
        Fraction(1, 2),
        Fraction(3, 4),
        Fraction(1, 4),
    )
    assert p.epsilon == math.log(3)
    # Dwork & Roth's "first coin tails -> second coin decides" has the same channel
    np.testing.assert_array_equal(p.design.channel, TwoCoin().channel)
    assert math.isclose(TwoCoin().epsilon, p.epsilon, rel_tol=1e-12)


@pytest.mark.parametrize(("device", "n", "a"), expected_candidates(ALL))
def test_exact_probabilities_and_epsilon_match_forced_response(device: str, n: int, a: int) -> None:
    p = CoinProtocol(device, n, a, a)
    assert p.truth_probability == Fraction(n - 2 * a, n)
    assert p.p_yes_given_1 == Fraction(n - a, n)
    assert p.p_yes_given_0 == Fraction(a, n)
    assert p.epsilon == math.log(Fraction(n - a, a))
    design = p.design
    assert isinstance(design, ForcedResponse)
    assert (design.forced_yes, design.forced_no) == (a / n, a / n)
    # the float design rounds a/N, so agreement is to rounding, not bit for bit
    assert math.isclose(design.epsilon, p.epsilon, rel_tol=1e-12)
    assert math.isclose(channel_epsilon(design.channel), p.epsilon, rel_tol=1e-12)


def test_asymmetric_forcing_epsilon_and_symmetric_is_best() -> None:
    p = CoinProtocol("d6", 6, 1, 2)  # P(yes|1) = 4/6, P(yes|0) = 1/6
    assert p.epsilon == math.log(4)  # max(ln(4/1), ln(5/2))
    assert math.isclose(p.design.epsilon, p.epsilon, rel_tol=1e-12)
    # for a fixed number of forced outcomes, the even split has the smallest epsilon
    for n in DICE.values():
        for total in range(2, n - 1, 2):
            sym = CoinProtocol(f"d{n}", n, total // 2, total // 2).epsilon
            for a in range(1, total):
                q = CoinProtocol(f"d{n}", n, a, total - a)
                assert q.epsilon >= sym
                assert (q.epsilon > sym) == (a != total // 2)


# --- target selection ------------------------------------------------------------------------

device_subsets = st.lists(st.sampled_from(ALL), min_size=1, max_size=4, unique=True)


def check_choice(chosen: CoinProtocol, devices: list[str], admissible: Callable[..., bool]) -> None:
    cands = expected_candidates(devices)
    ok = [(d, n, a) for d, n, a in cands if admissible(n, a)]
    assert ok, "the chosen protocol must come from a non-empty admissible set"
    assert chosen.device in devices
    assert admissible(chosen.outcomes, chosen.forced_yes)
    best = max(Fraction(n - a, a) for _, n, a in ok)
    assert chosen.likelihood_ratio == best  # no admissible candidate between it and the target
    ties = [(d, n) for d, n, a in ok if Fraction(n - a, a) == best]
    fewest = min(n for _, n in ties)
    assert chosen.outcomes == fewest
    if any(d in COIN_DEVICES for d, n in ties if n == fewest):
        assert chosen.device in COIN_DEVICES


@settings(max_examples=300, deadline=None)
@given(target=st.floats(0.0401, 8.0), devices=st.one_of(st.just(ALL), device_subsets))
def test_epsilon_target_never_exceeded_and_closest(target: float, devices: list[str]) -> None:
    def admissible(n: int, a: int) -> bool:
        return eps_of(n, a) <= target

    if not any(admissible(n, a) for _, n, a in expected_candidates(devices)):
        with pytest.raises(PrivacyError):
            design_protocol(epsilon=target, devices=devices)
        return
    chosen = design_protocol(epsilon=target, devices=devices)
    assert chosen.epsilon <= target
    check_choice(chosen, devices, admissible)


@settings(max_examples=300, deadline=None)
@given(target=st.floats(0.001, 0.999), devices=st.one_of(st.just(ALL), device_subsets))
def test_truth_target_never_exceeded_and_closest(target: float, devices: list[str]) -> None:
    # compared as floats (documented): the exact fraction may exceed a float target only by
    # rounding, so that typing 2/3 selects the protocol whose P(truth) is exactly 2/3
    def admissible(n: int, a: int) -> bool:
        return float(Fraction(n - 2 * a, n)) <= target

    if not any(admissible(n, a) for _, n, a in expected_candidates(devices)):
        with pytest.raises(PrivacyError):
            design_protocol(truth_probability=target, devices=devices)
        return
    chosen = design_protocol(truth_probability=target, devices=devices)
    assert float(chosen.truth_probability) <= target
    assert chosen.truth_probability - Fraction(target) <= Fraction(math.ulp(target)) / 2
    check_choice(chosen, devices, admissible)


def test_exact_targets_are_tight() -> None:
    # the exact epsilon passes; a hair less falls to the next protocol below
    p = design_protocol(epsilon=math.log(5))
    assert (p.device, p.forced_yes) == ("d6", 1)
    q = design_protocol(epsilon=math.log(5) - 1e-12)
    assert q.likelihood_ratio == Fraction(83, 17)  # d100, a = 17: next below ln 5
    p = design_protocol(epsilon=math.log(3))
    assert (p.device, p.forced_yes) == ("2 coins", 1)  # ties: 4 outcomes, coins first
    assert design_protocol(epsilon=math.log(3), devices=["d12", "d8"]).device == "d8"
    # typed fractions select the protocol with exactly that truth probability
    assert design_protocol(truth_probability=2 / 3).device == "d6"
    assert design_protocol(truth_probability=Fraction(2, 3)).device == "d6"
    assert design_protocol(truth_probability=0.5).device == "2 coins"
    assert design_protocol(truth_probability=0.5 - 1e-12).truth_probability == Fraction(12, 25)
    # epsilon = 1: the largest achievable below is ln(73/27) (d100, a = 27); next up is ln(37/13)
    p = design_protocol(epsilon=1.0)
    assert (p.device, p.forced_yes, p.likelihood_ratio) == ("d100", 27, Fraction(73, 27))
    assert math.log(Fraction(37, 13)) > 1.0
    # far above every protocol: the weakest available (d100, a = 1, ln 99), still below target
    assert design_protocol(epsilon=50).likelihood_ratio == 99


def test_monotone_in_target() -> None:
    eps = [design_protocol(epsilon=e).epsilon for e in np.linspace(0.05, 6, 400)]
    assert all(x <= y for x, y in itertools.pairwise(eps))
    truth = [
        design_protocol(truth_probability=t).truth_probability for t in np.linspace(0.02, 0.99, 400)
    ]
    assert all(x <= y for x, y in itertools.pairwise(truth))
    protocols = all_protocols()
    assert all(x.epsilon <= y.epsilon for x, y in itertools.pairwise(protocols))
    assert all(x.truth_probability <= y.truth_probability for x, y in itertools.pairwise(protocols))


def test_device_names_and_aliases() -> None:
    assert {p.device for p in all_protocols("coin")} == set(COIN_DEVICES)
    assert {p.device for p in all_protocols(["coins"])} == set(COIN_DEVICES)
    assert {p.device for p in all_protocols(["dice"])} == set(DICE)
    assert {p.device for p in all_protocols(["D6", " 2  Coins "])} == {"d6", "2 coins"}
    assert all_protocols(["d6", "d6"]) == all_protocols("d6")
    assert design_protocol(epsilon=1.0, devices=("coin", "d6")).device == "4 coins"  # ln(11/5)


# --- the printed rules, followed literally -----------------------------------------------------

WORD = {"one": 1, "two": 2, "three": 3, "four": 4}
Rule = tuple[Callable[[npt.NDArray[np.int64]], npt.NDArray[np.bool_]], str]


def parse_coin_condition(cond: str, k: int) -> Callable[[Any], Any]:
    if cond == "one shows heads and one tails":
        return lambda h: (h == 1) & (k - h == 1)
    if cond == "they show a mix of heads and tails":
        return lambda h: (h > 0) & (h < k)
    if m := re.fullmatch(r"all (\w+) show the same side", cond):
        assert WORD[m[1]] == k
        return lambda h: (h == 0) | (h == k)
    m = re.fullmatch(r"(both|all \w+|exactly \w+|\w+ or \w+) show (heads|tails)", cond)
    assert m, f"unparsed coin rule: {cond!r}"
    side = (lambda h: h) if m[2] == "heads" else (lambda h: k - h)
    quant = m[1]
    if quant == "both" or quant.startswith("all "):
        assert quant == "both" or WORD[quant[4:]] == k
        return lambda h: side(h) == k
    if quant.startswith("exactly "):
        c = WORD[quant[8:]]
        return lambda h: side(h) == c
    x, y = (WORD[w] for w in quant.split(" or "))
    return lambda h: (side(h) == x) | (side(h) == y)


def parse_faces(spec: str) -> Callable[[Any], Any]:
    if m := re.fullmatch(r"(?:a number )?from (\d+) to (\d+)", spec):
        lo, hi = int(m[1]), int(m[2])
        return lambda x: (x >= lo) & (x <= hi)
    assert re.fullmatch(r"\d+(, \d+)*( or \d+)?", spec), f"unparsed faces: {spec!r}"
    faces = [int(f) for f in spec.replace(" or ", ", ").split(", ")]
    return lambda x: np.isin(x, faces)


def parse(text: str) -> tuple[Callable[..., Any], list[Any], list[Rule]]:
    """From the instructions alone: how to read the device, its physical outcomes, the rules.

    Returns (reader, outcomes, rules): ``reader(raw)`` maps raw device outcomes (rows of an
    array) to what the respondent reads (number of heads, or a number); ``outcomes`` lists
    every equally likely raw outcome; rules are (condition on the reading, action).
    """
    rules_text = re.findall(
        r'If ([^,]+?(?:, [^,]+?)*?), (answer "yes"|answer "no"|answer truthfully)\.', text
    )
    assert len(rules_text) == 3, text
    if m := re.match(r"Flip (\w+) coins where no one can see them\.", text):
        k = WORD[m[1]]
        outcomes = list(itertools.product([0, 1], repeat=k))  # 1 = heads

        def reader(raw: Any) -> Any:
            return np.asarray(raw).reshape(-1, k).sum(axis=1)

        rules = [(parse_coin_condition(c, k), act) for c, act in rules_text]
    else:
        if text.startswith("Roll two ten-sided dice"):
            assert "one for the tens and one for the units" in text
            assert "(if both dice show zero, the number is 100)" in text
            outcomes = list(itertools.product(range(10), repeat=2))  # faces 0..9 each

            def reader(raw: Any) -> Any:
                r = np.asarray(raw).reshape(-1, 2)
                x = 10 * r[:, 0] + r[:, 1]
                return np.where(x == 0, 100, x)

            prefix = "the number is "
        else:
            m = re.match(r"Roll one (\w+)-sided die where no one can see it", text)
            assert m, text
            sides = {"four": 4, "six": 6, "eight": 8, "ten": 10, "twelve": 12, "twenty": 20}[m[1]]
            if sides == 10:  # a real d10 is numbered 0..9
                assert "(read 0 as 10)" in text
                outcomes = [(f,) for f in range(10)]

                def reader(raw: Any) -> Any:
                    x = np.asarray(raw).reshape(-1)
                    return np.where(x == 0, 10, x)
            else:
                outcomes = [(f,) for f in range(1, sides + 1)]

                def reader(raw: Any) -> Any:
                    return np.asarray(raw).reshape(-1)

            prefix = "it shows "
        rules = []
        for c, act in rules_text:
            assert c.startswith(prefix), c
            rules.append((parse_faces(c[len(prefix) :]), act))
    return reader, outcomes, rules


def say_yes(reading: Any, rules: list[Rule], truth: int) -> Any:
    """Follow the rules: exactly one must apply to every reading."""
    hits = np.stack([cond(reading) for cond, _ in rules])
    assert np.all(hits.sum(axis=0) == 1), "rules must be exclusive and exhaustive"
    action = np.argmax(hits, axis=0)
    says = np.array(
        [{'answer "yes"': 1, 'answer "no"': 0, "answer truthfully": truth}[a] for _, a in rules]
    )
    return says[action]


@pytest.mark.parametrize("protocol", all_protocols(), ids=lambda p: f"{p.device}-a{p.forced_yes}")
def test_instructions_enumerated_give_exact_fractions(protocol: CoinProtocol) -> None:
    reader, outcomes, rules = parse(protocol.instructions)
    assert len(outcomes) == protocol.outcomes
    reading = reader(np.array(outcomes))
    for truth, expected in ((1, protocol.p_yes_given_1), (0, protocol.p_yes_given_0)):
        yes = int(say_yes(reading, rules, truth).sum())
        assert Fraction(yes, len(outcomes)) == expected
    assert "no one can see" in protocol.instructions
    assert "Do not tell anyone" in protocol.instructions


def test_instructions_simulated_with_dice_rolls() -> None:
    # Roll the physical device with a seeded generator and follow the parsed rules.
    # 5-sigma two-sided band per check: false alarm ~5.7e-7 per check, ~1e-4 over the
    # 2 * 79 checks of this test.
    rng = np.random.default_rng(20240611)
    n = 20_000
    for protocol in all_protocols():
        reader, outcomes, rules = parse(protocol.instructions)
        width = len(outcomes[0])
        if protocol.device in COIN_DEVICES:
            raw = rng.integers(0, 2, size=(n, width))
        elif protocol.device in ("d10", "d100"):
            raw = rng.integers(0, 10, size=(n, width))
        else:
            raw = rng.integers(1, protocol.outcomes + 1, size=(n, 1))
        reading = reader(raw)
        for truth, p in ((1, protocol.p_yes_given_1), (0, protocol.p_yes_given_0)):
            rate = say_yes(reading, rules, truth).mean()
            sd = math.sqrt(float(p) * (1 - float(p)) / n)
            assert abs(rate - float(p)) < 5 * sd, (protocol.device, protocol.forced_yes, truth)


def test_example_instructions_text() -> None:
    assert CoinProtocol("d6", 6, 1, 1).instructions == (
        'Roll one six-sided die where no one can see it. If it shows 1, answer "yes". '
        'If it shows 2, answer "no". If it shows 3, 4, 5 or 6, answer truthfully. '
        "Do not tell anyone what it showed."
    )
    assert CoinProtocol("2 coins", 4, 1, 1).instructions == (
        'Flip two coins where no one can see them. If both show heads, answer "yes". '
        'If both show tails, answer "no". If one shows heads and one tails, answer truthfully. '
        "Do not tell anyone what they showed."
    )


# --- output -----------------------------------------------------------------------------------


def test_to_dict_and_table() -> None:
    p = CoinProtocol("2 coins", 4, 1, 1)
    d = p.to_dict()
    assert json.loads(json.dumps(d)) == d
    assert d["device"] == "2 coins" and d["outcomes"] == 4
    assert d["forced_yes"] == d["forced_no"] == 1
    assert d["truth_probability"] == "1/2" and d["truth_probability_float"] == 0.5
    assert d["p_yes_given_1"] == "3/4" and d["p_yes_given_1_float"] == 0.75
    assert d["p_yes_given_0"] == "1/4" and d["p_yes_given_0_float"] == 0.25
    assert d["epsilon"] == math.log(3) and d["epsilon_exact"] == "ln(3)"
    assert d["instructions"] == p.instructions
    text = str(p.table())
    assert str(p) == text
    for piece in (
        "2 coins",
        "1/2 = 0.500000",
        "3/4 = 0.750000",
        "1/4 = 0.250000",
        "ln(3) = 1.098612",
    ):
        assert piece in text
    assert " ".join(text.split()).count("Flip two coins") == 1
    q = CoinProtocol("d100", 100, 27, 27)
    assert "ln(73/27) = 0.994623" in str(q.table())
    assert q.to_dict()["truth_probability"] == "23/50"


# --- invalid input ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "pieces"),
    [
        ({}, ParameterError, ["exactly one of `epsilon` or `truth_probability`", "neither"]),
        ({"epsilon": 1.0, "truth_probability": 0.5}, ParameterError, ["exactly one", "both"]),
        ({"epsilon": 0.0}, ParameterError, ["`epsilon`", "(0, inf)", "0.0"]),
        ({"epsilon": -1}, ParameterError, ["`epsilon`", "(0, inf)", "-1"]),
        ({"epsilon": math.inf}, ParameterError, ["`epsilon`", "(0, inf)", "inf"]),
        ({"epsilon": math.nan}, ParameterError, ["`epsilon`", "nan"]),
        ({"epsilon": "1"}, ParameterTypeError, ["`epsilon`", "real number", "'1'"]),
        ({"epsilon": True}, ParameterTypeError, ["`epsilon`", "real number", "True"]),
        ({"truth_probability": 0.0}, ParameterError, ["`truth_probability`", "(0, 1)", "0.0"]),
        ({"truth_probability": 1}, ParameterError, ["`truth_probability`", "(0, 1)", "1"]),
        ({"truth_probability": 1.5}, ParameterError, ["`truth_probability`", "(0, 1)", "1.5"]),
        ({"truth_probability": math.nan}, ParameterError, ["`truth_probability`", "nan"]),
        ({"truth_probability": "0.5"}, ParameterTypeError, ["`truth_probability`", "'0.5'"]),
        (
            {"epsilon": 1, "devices": ["d7"]},
            ParameterError,
            ["`devices[0]`", "'d6'", "'d100'", "'d7'"],
        ),
        (
            {"epsilon": 1, "devices": ["d6", "coin flip"]},
            ParameterError,
            ["`devices[1]`", "'coin'", "'coin flip'"],
        ),
        (
            {"epsilon": 1, "devices": []},
            ParameterError,
            ["`devices`", "at least one", "'d6'", "[]"],
        ),
        ({"epsilon": 1, "devices": [6]}, ParameterTypeError, ["`devices[0]`", "device name", "6"]),
        ({"epsilon": 1, "devices": 6}, ParameterTypeError, ["`devices`", "sequence", "6"]),
    ],
)
def test_design_protocol_rejects(
    kwargs: dict[str, Any], error: type[Exception], pieces: list[str]
) -> None:
    with pytest.raises(error) as info:
        design_protocol(**kwargs)
    for piece in pieces:
        assert piece in str(info.value)


def test_unreachable_target_raises_privacy_error() -> None:
    # d100 with a = 49 is the smallest epsilon: ln(51/49) ~ 0.0400
    assert design_protocol(epsilon=math.log(Fraction(51, 49))).forced_yes == 49
    with pytest.raises(PrivacyError) as info:
        design_protocol(epsilon=0.04)
    msg = str(info.value)
    assert "`epsilon` <= 0.04" in msg and "ln(51/49)" in msg and "computer randomizer" in msg
    # restricted to a d6 (smallest ln 2): suggest a device that reaches the target
    with pytest.raises(PrivacyError) as info:
        design_protocol(epsilon=0.5, devices="d6")
    msg = str(info.value)
    assert "ln(2)" in msg and "'d10'" in msg  # d10 with a = 4: ln(3/2) ~ 0.405
    with pytest.raises(PrivacyError) as info:
        design_protocol(truth_probability=0.01)
    assert "1/50" in str(info.value)
    with pytest.raises(PrivacyError) as info:
        design_protocol(truth_probability=0.2, devices=["coins"])
    assert "1/4" in str(info.value) and "'d10'" in str(info.value)  # d10, a = 4: 1/5


@pytest.mark.parametrize(
    ("args", "error", "pieces"),
    [
        (("d7", 7, 1, 1), ParameterError, ["`device`", "'d6'", "'d7'"]),
        (("d6", 8, 1, 1), ParameterError, ["`outcomes`", "6", "8"]),
        (("d6", 6.5, 1, 1), ParameterTypeError, ["`outcomes`", "integer", "6.5"]),
        (("d6", 6, 0, 1), ParameterError, ["`forced_yes`", "[1, 4]", "0"]),
        (("d6", 6, 1, 0), ParameterError, ["`forced_no`", "[1, 4]", "0"]),
        (("d6", 6, 3, 3), ParameterError, ["`forced_yes` + `forced_no`", "< outcomes = 6", "6"]),
        (("d6", 6, "1", 1), ParameterTypeError, ["`forced_yes`", "integer", "'1'"]),
        (("3 coins", 8, 2, 2), ParameterError, ["'3 coins'", "1, 3", "got 2 and 2"]),
        (("2 coins", 4, 1, 2), ParameterError, ["'2 coins'", "got 1 and 2"]),
    ],
)
def test_coin_protocol_rejects(
    args: tuple[Any, ...], error: type[Exception], pieces: list[str]
) -> None:
    with pytest.raises(error) as info:
        CoinProtocol(*args)
    for piece in pieces:
        assert piece in str(info.value)
