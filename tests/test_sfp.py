"""Sequence Fragment Puzzle (deniable.oracles._sfp, Apple 2017).

Exact checks (the per-device epsilon enumerated over every report of tiny sketches, the
record format and puzzle hash against the module docstring, the word order of the
randomizer, the thresholds against the closed form of the sketch's variance, the cartesian
product and its trimming), seeded statistical checks with their false-alarm rates stated,
and every bad input.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math

import numpy as np
import pytest
from scipy.stats import norm

from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.oracles import CMS, HCMS, SFP, SFPReports, SFPResult, SFPTally
from deniable.randomness import random_words, uniform_below

TWO53 = 1 << 53
LETTERS = "abcdefgh"


def _puzzle(s: str, bits: int) -> int:
    """The module docstring's puzzle piece, computed here from its definition."""
    digest = hashlib.sha256(b"deniable.sfp/1\x00" + s.encode()).digest()
    return int.from_bytes(digest[:4], "big") >> (32 - bits)


def _record(sfp: SFP, s: str, pos: int) -> str:
    """``"l:p(s):i.j"`` of ``s`` at ``pos`` (indices in the alphabet, padding ``A``)."""
    assert sfp.alphabet is not None
    idx = [sfp.alphabet.index(c) for c in s]
    idx += [len(sfp.alphabet)] * (2 * sfp.positions - len(idx))
    return f"{pos}:{_puzzle(s, sfp.puzzle_bits)}:{idx[2 * pos]}.{idx[2 * pos + 1]}"


def _zipf(n: int, heavy: list[str], total: float, seed: int, length: int = 6) -> list[str]:
    """``heavy[r]`` with frequency proportional to ``1 / (r + 1)``, ``total`` of the devices
    in exact counts; the rest uniform strings of ``length`` letters (8**6 values: none
    frequent)."""
    rng = np.random.default_rng(seed)
    w = 1 / np.arange(1, len(heavy) + 1)
    counts = np.floor(total * n * w / w.sum()).astype(int)
    out = [h for h, c in zip(heavy, counts, strict=True) for _ in range(c)]
    rest = rng.integers(0, len(LETTERS), size=(n - len(out), length))
    out += ["".join(LETTERS[j] for j in row) for row in rest]
    return [out[i] for i in rng.permutation(n)]


# ---- epsilon per device


def _cms_probability(sketch: CMS, s: str) -> np.ndarray:
    """P(row j, bits) for every report of a tiny CMS, from its documented channel."""
    f = sketch.flip_threshold / TWO53
    cols = sketch.columns([s])[0]
    out = []
    for j in range(sketch.k):
        for bits in itertools.product((0, 1), repeat=sketch.m):
            p = 1.0 / sketch.k
            for i, b in enumerate(bits):
                p *= (1 - f) if b == int(i == cols[j]) else f
            out.append(p)
    return np.array(out)


def _hcms_probability(sketch: HCMS, s: str) -> np.ndarray:
    f = sketch.flip_threshold / TWO53
    cols = sketch.columns([s])[0]
    out = []
    for j in range(sketch.k):
        for coef in range(sketch.m):
            sign = bin(coef & int(cols[j])).count("1") % 2
            out += [(1 - f if b == sign else f) / (sketch.k * sketch.m) for b in (0, 1)]
    return np.array(out)


@pytest.mark.parametrize(
    ("sketch", "k", "m", "epsilon", "share"),
    [("cms", 2, 4, 2.0, 0.5), ("hcms", 2, 8, 3.0, 0.3), ("cms", 3, 4, 1.0, 0.7)],
)
def test_epsilon_per_device_is_exact_by_enumeration(
    sketch: str, k: int, m: int, epsilon: float, share: float
) -> None:
    # every report (position, fragment report, word report) of every string of the tiny
    # domain: the worst likelihood ratio is e^(eps_f + eps_w) as implemented, at most e^eps
    sfp = SFP(epsilon=epsilon, max_length=3, alphabet="ab", puzzle_bits=1, k=k, m=m,
              sketch=sketch, fragment_share=share)  # fmt: skip
    prob = _cms_probability if sketch == "cms" else _hcms_probability
    strings = ["".join(t) for n in (1, 2, 3) for t in itertools.product("ab", repeat=n)]
    dists = []
    for s in strings:
        word = prob(sfp.word_sketch, s)  # type: ignore[arg-type]
        per_pos = [np.outer(prob(sfp.fragment_sketch, _record(sfp, s, p)), word)  # type: ignore[arg-type]
                   / sfp.positions for p in range(sfp.positions)]  # fmt: skip
        d = np.concatenate([x.ravel() for x in per_pos])
        assert math.isclose(d.sum(), 1.0, rel_tol=1e-12)
        dists.append(d)
    worst = max(float(np.max(np.log(a / b))) for a, b in itertools.permutations(dists, 2))
    assert math.isclose(worst, sfp.implemented_epsilon, rel_tol=1e-9)
    assert worst <= epsilon + 1e-12  # never above the stated total ...
    assert worst > epsilon - 1e-9  # ... and tight
    assert sfp.epsilon_per_device <= epsilon
    assert math.isclose(sfp.fragment_epsilon, share * epsilon, rel_tol=1e-15)
    assert math.isclose(sfp.fragment_epsilon + sfp.word_epsilon, epsilon, rel_tol=1e-15)


@pytest.mark.parametrize("epsilon", [0.1, 0.7, 1.3, 3.3, 8.0, 29.9])
@pytest.mark.parametrize("share", [0.1, 0.3, 0.5, 0.77])
def test_the_split_never_exceeds_the_stated_epsilon(epsilon: float, share: float) -> None:
    sfp = SFP(epsilon=epsilon, max_length=2, alphabet="ab", puzzle_bits=2)
    sfp = SFP(epsilon=epsilon, max_length=2, alphabet="ab", puzzle_bits=2, fragment_share=share)
    assert sfp.fragment_epsilon + sfp.word_epsilon <= epsilon
    assert sfp.implemented_epsilon <= epsilon
    assert sfp.fragment_sketch.epsilon == sfp.fragment_epsilon
    assert sfp.word_sketch.epsilon == sfp.word_epsilon


# ---- the device


def test_randomize_follows_the_documented_words_and_records() -> None:
    sfp = SFP(epsilon=4.0, max_length=5, alphabet=LETTERS, puzzle_bits=5, k=8, m=64)
    values = ["abc", "h", "abcde", "abc", "gg", "hhhhh"] * 5
    got = sfp.randomize(values, rng=np.random.default_rng(7))
    gen = np.random.default_rng(7)
    pos = uniform_below(random_words(gen, len(values)), 3).astype(np.int64)
    records = [_record(sfp, s, int(p)) for s, p in zip(values, pos, strict=True)]
    frag = sfp.fragment_sketch.randomize(records, rng=gen)
    word = sfp.word_sketch.randomize(values, rng=gen)
    assert np.array_equal(got.positions, pos)
    assert np.array_equal(got.fragments, frag)
    assert np.array_equal(got.words, word)
    assert len(got) == len(values) and len(got[:4]) == 4


def test_byte_strings_and_the_default_alphabet() -> None:
    sfp = SFP(epsilon=4.0, max_length=3, puzzle_bits=2, k=8, m=64)
    assert sfp.symbols == 256 and sfp.positions == 2
    # the default byte alphabet: 2^r ((A + 1)^2 - A) records a position, 2^24 at r = 8
    assert sfp.records_per_position == 4 * (257**2 - 256)
    assert SFP(epsilon=4.0, max_length=3).records_per_position == 256 * (257**2 - 256)
    s = "é!"  # 3 UTF-8 bytes: fragments (0xc3, 0xa9) and ("!", padding)
    idx = sfp.symbol_indices([s.encode()])
    assert idx.tolist() == [[0xC3, 0xA9, 0x21, 256]]
    reports = sfp.randomize([s, s.encode()], rng=1)
    assert len(reports) == 2


# ---- the server: thresholds, candidates


def _null_sd(sketch: HCMS, n: int, others: float) -> float:
    """HCMS variance of a share 0 (devices sampled), written out from the _cms_base
    docstring: a = 1 / (1 - 2 f)^2, b = 0, mu = c, V = c (1 - c) / k * others."""
    f = sketch.flip_threshold / TWO53
    a, c = 1 / (1 - 2 * f) ** 2, 1 / sketch.m
    big_v = c * (1 - c) / sketch.k * others
    return math.sqrt(((a - c * c - big_v) / n + big_v) / (1 - c) ** 2)


def test_threshold_is_the_bonferroni_normal_quantile_of_the_null_sd() -> None:
    sfp = SFP(epsilon=5.0, max_length=4, alphabet="abc", puzzle_bits=3, k=16, m=256,
              alpha=0.02)  # fmt: skip
    sketch = sfp.word_sketch
    assert isinstance(sketch, HCMS)
    for n, tests, moment in ((1000, 1, 0.0), (5000, 40, 0.3), (12345, 999, None)):
        want = norm.isf(0.02 / tests) * _null_sd(sketch, n, 1.0 if moment is None else moment)
        assert math.isclose(sfp.threshold(sketch, n, tests, moment), want, rel_tol=1e-12)


def test_candidates_are_the_cartesian_product_trimmed_and_puzzle_checked() -> None:
    sfp = SFP(epsilon=4.0, max_length=4, alphabet="ab", puzzle_bits=1, max_candidates=2)
    code = {"aa": 0, "ab": 1, "ba": 3, "bb": 4, "a_": 2}  # i (A + 1) + j, A = 2 (padding)
    p = _puzzle("abab", 1)
    kept = [
        {p: [(0.5, code["ab"]), (0.3, code["ba"]), (0.1, code["aa"])], 1 - p: [(0.9, 0)]},
        {p: [(0.4, code["ab"])]},
    ]
    cands, trimmed = sfp._candidates(kept)
    # 3 x 1 > 2: position 0 drops its smallest ("aa"); puzzle 1 - p lacks position 1
    assert trimmed == 1
    assert set(cands) == {s.encode() for s in ("abab", "baab") if _puzzle(s, 1) == p}
    # padding inside a string is never a candidate; trailing padding is stripped
    q = _puzzle("a", 1)
    kept = [{q: [(0.5, code["a_"])]}, {q: [(0.5, 8), (0.4, code["ab"])]}]  # 8: padding x2
    cands, trimmed = sfp._candidates(kept)
    assert cands == [b"a"] and trimmed == 0


def n_low(sfp: SFP, n: int) -> int:
    """Devices of a position, 5 sd below ``n / P`` (fewer with probability < 3e-7)."""
    share = 1 / sfp.positions
    return int(n * share - 5 * math.sqrt(n * share * (1 - share)))


def _planted_bound(sfp: SFP, n: int) -> tuple[float, float]:
    """Upper bounds on the two thresholds: F2 at its bound 1, n_l at 5 sd below n / P."""
    frag, word = sfp.fragment_sketch, sfp.word_sketch
    assert isinstance(frag, HCMS) and isinstance(word, HCMS)
    tests = sfp.positions * sfp.records_per_position
    t_f = norm.isf(sfp.alpha / tests) * _null_sd(frag, n_low(sfp, n), 1.0)
    t_w = norm.isf(sfp.alpha / sfp.max_candidates / 2**sfp.puzzle_bits) * _null_sd(word, n, 1.0)
    return t_f, t_w


def test_planted_strings_are_recalled_from_zipf_data() -> None:
    # n = 1e5 devices, five planted strings (Zipf, half the devices), the rest uniform over
    # 8**6 strings.  A planted string whose frequency f clears both thresholds' bounds by 5
    # of its sd is found; each such check fails with probability < 1e-6 (normal tails, union
    # over positions and stages), and a string not planted is listed with probability at
    # most alpha = 0.01 (the whole-string stage's Bonferroni bound).
    n = 100_000
    heavy = ["abc", "hadeg", "bbbbbb", "fed", "gah"]
    values = _zipf(n, heavy, 0.5, seed=11)
    sfp = SFP(epsilon=6.0, max_length=6, alphabet=LETTERS, puzzle_bits=6, k=64, m=1024)
    res = sfp.run(values, rng=12)
    truth = {h: values.count(h) / n for h in heavy}
    t_f, t_w = _planted_bound(sfp, n)
    # the thresholds used lie between the closed form with F2 = 0 and its bound F2 = 1
    assert all(0 < t <= t_f for t in res.fragment_thresholds)
    assert 0 < res.word_threshold <= t_w
    # HCMS: a report's variance a - mu^2 falls as the share grows, so sd(0) at F2 = 1 and
    # the fewest devices of a position bounds the sd of every estimate
    sd_f = _null_sd(sfp.fragment_sketch, n_low(sfp, n), 1.0)  # type: ignore[arg-type]
    sd_w = _null_sd(sfp.word_sketch, n, 1.0)  # type: ignore[arg-type]
    sure = [h for h in heavy if truth[h] > t_f + 5 * sd_f and truth[h] > t_w + 5 * sd_w]
    assert sure == ["abc", "hadeg", "bbbbbb"]  # the closed form says these three at least
    assert set(sure) <= set(res.strings)
    assert set(res.strings) <= set(heavy)
    for s, f, se in zip(res.strings, res.frequencies, res.se, strict=True):
        assert abs(f - truth[s]) < 5 * se  # false alarm < 1e-6 each
    assert list(res.frequencies) == sorted(res.frequencies, reverse=True)
    assert res.epsilon == 6.0 and res.n == n


def test_nothing_is_found_under_the_null() -> None:
    # uniform strings of 6 letters (8**6 values; the largest share about 1e-4): the
    # whole-string stage lists a string of frequency ~0 with probability at most alpha =
    # 0.01 (normal approximation, Bonferroni); the fragment stage keeps a record of share
    # ~2.4e-4 (of 64 x 64 equally likely) with probability < 1e-9 a position.
    n = 100_000
    values = _zipf(n, [], 0.0, seed=21)
    sfp = SFP(epsilon=6.0, max_length=6, alphabet=LETTERS, puzzle_bits=6, k=64, m=1024)
    res = sfp.run(values, rng=22)
    assert res.strings == ()
    assert res.fragments_kept == (0, 0, 0)
    assert res.candidates == 0 and math.isinf(res.word_threshold)


def test_tallies_add_and_estimate_from_a_tally() -> None:
    sfp = SFP(epsilon=6.0, max_length=4, alphabet="abcd", puzzle_bits=4, k=32, m=256)
    values = ["abcd"] * 3000 + ["dcb"] * 2000 + ["a", "b", "cc", "dddd", "bad"] * 1000
    reports = sfp.randomize(values, rng=3)
    whole = sfp.tally(reports)
    parts = sfp.tally(reports[:4000]) + sfp.tally(reports[4000:])
    assert isinstance(parts, SFPTally)
    for a, b in zip((*whole.fragments, whole.words), (*parts.fragments, parts.words),
                    strict=True):  # fmt: skip
        assert np.array_equal(a.counts, b.counts)
    assert sfp.estimate(parts) == sfp.estimate(reports)
    res = sfp.estimate(reports, level=0.9)
    assert {"abcd", "dcb"} <= set(res.strings)


def test_count_mean_sketch_variant_recalls_and_states_its_epsilon() -> None:
    # CMS instead of HCMS: n = 20000, two strings of 40 % and 30 % against 8**4 uniform
    # ones.  Fragment floor at most z(1e-2 / 2336) sd(0) = 4.45 x 0.0127 = 0.056 at n_l ~
    # 1e4 (F2 bounded by 1), so both clear it by > 15 sd (miss < 1e-9); nothing else is
    # listed (at most alpha = 0.01).
    sfp = SFP(epsilon=6.0, max_length=4, alphabet="abcdefgh", puzzle_bits=4, k=32, m=256,
              sketch="cms")  # fmt: skip
    assert isinstance(sfp.fragment_sketch, CMS) and isinstance(sfp.word_sketch, CMS)
    assert sfp.positions * sfp.records_per_position == 2 * 16 * (9**2 - 8)
    assert sfp.fragment_sketch.epsilon + sfp.word_sketch.epsilon <= 6.0
    rng = np.random.default_rng(8)
    rest = ["".join(LETTERS[j] for j in row) for row in rng.integers(0, 8, size=(6000, 4))]
    values = ["bead"] * 8000 + ["hag"] * 6000 + rest
    res = sfp.run(values, rng=9)
    assert all(t < 0.0564 for t in res.fragment_thresholds)
    assert set(res.strings) == {"bead", "hag"}
    for s, f, se in zip(res.strings, res.frequencies, res.se, strict=True):
        assert abs(f - {"bead": 0.4, "hag": 0.3}[s]) < 5 * se


def test_result_prints_and_serializes() -> None:
    sfp = SFP(epsilon=6.0, max_length=4, alphabet="abcd", puzzle_bits=4, k=32, m=256)
    res = sfp.run(["abcd"] * 4000 + ["bad"] * 3000 + ["c"] * 3000, rng=5)
    assert isinstance(res, SFPResult)
    data = json.loads(json.dumps(res.to_dict()))
    assert data["method"] == "sequence-fragment-puzzle"
    assert data["epsilon_per_device"] == 6.0
    assert data["fragment_epsilon"] + data["word_epsilon"] == 6.0
    assert len(data["fragment_thresholds"]) == 2 and data["alpha"] == 0.01
    z = norm.isf(0.025)
    for row in data["heavy_hitters"]:
        assert row["ci"][0] == pytest.approx(row["frequency"] - z * row["se"])
    text = str(res)
    assert "epsilon per device = 6" in text and "fragments at position 1" in text
    assert res.intervals(fixed=True)[0].width == pytest.approx(2 * z * res.se_fixed[0])


def test_bytes_alphabet_finds_a_frequent_string() -> None:
    # default byte alphabet, r = 1: 2 (257^2 - 256) = 131586 records a position
    sfp = SFP(epsilon=8.0, max_length=2, puzzle_bits=1, k=32, m=1024)
    rng = np.random.default_rng(4)
    rest = [bytes(r) for r in rng.integers(97, 123, size=(10_000, 2), dtype=np.uint8)]
    res = sfp.run(["hi"] * 10_000 + rest, rng=5)  # type: ignore[operator]
    assert res.strings[:1] == ("hi",)


# ---- bad input


@pytest.mark.parametrize(
    ("values", "match"),
    [
        ([""], r"`values`\[0\] must be a non-empty string"),
        (["ab", "abcdefg"], r"`values`\[1\] must be at most max_length = 6 characters, got 7"),
        (["abz"], r"`values`\[0\] must use only the alphabet's characters .*at character 2"),
        ([b"ab\xff"], r"`values`\[0\] must be valid UTF-8"),
        ([3], r"`values`\[0\] must be a str or UTF-8 bytes"),
    ],
)
def test_bad_strings_are_refused_by_name(values: list[object], match: str) -> None:
    sfp = SFP(epsilon=2.0, max_length=6, alphabet=LETTERS, puzzle_bits=2, k=16, m=64)
    with pytest.raises(DataError, match=match):
        sfp.randomize(values, rng=1)


def test_bytes_longer_than_the_bound_are_refused() -> None:
    sfp = SFP(epsilon=2.0, max_length=3, puzzle_bits=1, k=16, m=64)
    with pytest.raises(
        DataError, match=r"`values`\[0\] must be at most max_length = 3 bytes in UTF-8, got 4"
    ):
        sfp.randomize(["é!!"], rng=1)
    with pytest.raises(ParameterTypeError, match="`values` must be a string or a sequence"):
        sfp.randomize(5, rng=1)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"epsilon": 0.0}, ParameterError, "`epsilon`"),
        ({"epsilon": math.inf}, ParameterError, "`epsilon`"),
        ({"max_length": 0}, ParameterError, "`max_length`"),
        ({"max_length": 65}, ParameterError, "`max_length`"),
        ({"alphabet": "aba"}, ParameterError, "`alphabet` must hold 1 to 256 distinct"),
        ({"alphabet": ""}, ParameterError, "`alphabet` must hold"),
        ({"alphabet": b"ab"}, ParameterTypeError, "`alphabet` must be a str"),
        ({"puzzle_bits": 0}, ParameterError, "`puzzle_bits`"),
        ({"puzzle_bits": 17}, ParameterError, "`puzzle_bits`"),
        ({"sketch": "rappor"}, ParameterError, "`sketch`"),
        ({"fragment_share": 1.0}, ParameterError, r"`fragment_share` must be in \(0, 1\)"),
        ({"alpha": 0.0}, ParameterError, r"`alpha` must be in \(0, 1\)"),
        ({"max_candidates": 0}, ParameterError, "`max_candidates`"),
        ({"m": 100}, ParameterError, "`m` must be a power of two"),
        ({"k": 1, "m": 16}, ParameterError, r"`m` must give the fragment sketch .*m\*\*k = 16"),
        ({"epsilon": 80.0}, ParameterError, "`epsilon` must be at most 30"),
    ],
)
def test_bad_parameters_are_refused_by_name(kwargs: dict[str, object], error: type,
                                            match: str) -> None:  # fmt: skip
    args: dict[str, object] = {"epsilon": 2.0, "max_length": 4, "alphabet": "ab",
                               "puzzle_bits": 2, "k": 8, "m": 64}  # fmt: skip
    args.update(kwargs)
    with pytest.raises(error, match=match):
        SFP(**args)  # type: ignore[arg-type]


def test_bad_reports_and_tallies_are_refused() -> None:
    sfp = SFP(epsilon=2.0, max_length=4, alphabet="ab", puzzle_bits=2, k=8, m=64)
    reports = sfp.randomize(["ab", "ba", "a"], rng=1)
    with pytest.raises(ParameterTypeError, match="`reports` must be SFPReports"):
        sfp.tally(reports.words)
    bad = SFPReports(np.array([0, 2, 1]), reports.fragments, reports.words)
    with pytest.raises(DataError, match=r"`reports.positions` must be in 0..1, got 2"):
        sfp.tally(bad)
    short = SFPReports(reports.positions, reports.fragments, reports.words[:2])
    with pytest.raises(DataError, match=r"`reports.words` must hold one report per device \(3"):
        sfp.tally(short)
    other = SFP(epsilon=2.0, max_length=4, alphabet="ab", puzzle_bits=2, k=8, m=64, salt=1)
    with pytest.raises(DataError):
        sfp.estimate(other.tally(other.randomize(["ab"], rng=1)))
    with pytest.raises(ParameterError, match="`level` must be in"):
        sfp.estimate(reports, level=1.5)
    tally = sfp.tally(reports)
    with pytest.raises(DataError, match="must have 2 positions"):
        tally + SFPTally(tally.fragments[:1], tally.words, tally.key)
    # same sketches, another alphabet: the records mean other strings, so refused
    abc = SFP(epsilon=2.0, max_length=4, alphabet="ba", puzzle_bits=2, k=8, m=64)
    assert abc.fragment_sketch.key == sfp.fragment_sketch.key
    with pytest.raises(DataError, match="`data` must be a tally of this SFP"):
        abc.estimate(tally)
    with pytest.raises(DataError, match="must come from the same SFP"):
        tally + abc.tally(abc.randomize(["ab"], rng=1))


# ---- slow studies


@pytest.mark.slow
def test_recall_with_lowercase_and_digits() -> None:
    # n = 1e5, L = 8 (4 positions), A = 36, r = 8: 3.4e5 records a position.  The two most
    # frequent planted strings (0.2, 0.1) clear both thresholds by > 5 sd (false alarm
    # < 1e-6); nothing outside the planted list (at most alpha = 0.01).
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    n = 100_000
    heavy = ["hello", "world42", "x", "zz9zz9"]
    rng = np.random.default_rng(31)
    counts = [20_000, 10_000, 5_000, 5_000]
    values = [h for h, c in zip(heavy, counts, strict=True) for _ in range(c)]
    rest = rng.integers(0, 36, size=(n - len(values), 8))
    values += ["".join(alphabet[j] for j in row) for row in rest]
    sfp = SFP(epsilon=8.0, max_length=8, alphabet=alphabet, k=64, m=1024)
    res = sfp.run(values, rng=32)
    assert {"hello", "world42"} <= set(res.strings) <= set(heavy)


@pytest.mark.slow
def test_false_alarm_rate_under_the_null() -> None:
    # 20 seeded runs of the null: runs listing any string ~ Binomial(20, <= 0.01);
    # P(>= 4) < 5e-5
    sfp = SFP(epsilon=6.0, max_length=6, alphabet=LETTERS, puzzle_bits=6, k=64, m=1024,
              alpha=0.01)  # fmt: skip
    alarms = sum(bool(sfp.run(_zipf(50_000, [], 0.0, seed=s), rng=s + 1).strings)
                 for s in range(20))  # fmt: skip
    assert alarms <= 3
