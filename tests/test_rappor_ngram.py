"""RAPPOR over n-grams (Fanti, Pihur & Erlingsson 2016): strings nobody listed.

Closed forms (domain, positions, epsilon by enumeration), seeded statistical tests with
their false-alarm rates (the client's bit rates, recall of planted strings, the null), and
bad input.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.stats import chi2

from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.oracles import NgramDiscovery, NgramReports, Rappor, RapporNgram

ALPHABET = "abcdefghijklmnop"
# the paper's one-report setting (eps_1 = 1.0743 at h = 2)
NGRAM = Rappor(m=64, h=2, cohorts=32, f=0.5, p=0.5, q=0.75)
FULL = Rappor(m=128, h=2, cohorts=32, f=0.5, p=0.5, q=0.75)
PLANTED = {"banana": 0.25, "peg": 0.2, "deaf": 0.15}


def model(full: Rappor | None = FULL, **kw: object) -> RapporNgram:
    args: dict[str, object] = {"alphabet": ALPHABET, "gram": 2, "length": 6}
    args.update(kw)
    return RapporNgram(NGRAM, full, **args)  # type: ignore[arg-type]


def population(n: int, planted: dict[str, float], seed: int) -> tuple[np.ndarray, dict[str, int]]:
    """``n`` strings: the planted ones at their shares, the rest uniform over the 16**6
    strings of six letters (none frequent: each has probability 16**-6)."""
    rng = np.random.default_rng(seed)
    letters = np.array(list(ALPHABET))
    values = np.array(["".join(r) for r in letters[rng.integers(0, 16, (n, 6))]], dtype="U6")
    u = rng.random(n)
    low = 0.0
    for s, share in planted.items():
        values[(u >= low) & (u < low + share)] = s
        low += share
    uniq, counts = np.unique(values, return_counts=True)
    return values, dict(zip(uniq.tolist(), counts.tolist(), strict=True))


# ---- the encoding


def test_domain_is_every_ngram_with_padding_only_at_its_end() -> None:
    ng = model(alphabet="abc", gram=3, length=6)
    # |A|^3 full n-grams, |A|^2 + |A| + 1 ending in padding
    assert ng.domain_size == 27 + 9 + 3 + 1 == len(set(ng.domain))
    for w in ng.domain:
        assert len(w) == 3 and "_" not in w.rstrip("_")
    assert {"abc", "ab_", "a__", "___"} <= set(ng.domain)


def test_strings_are_padded_and_cut_at_fixed_positions() -> None:
    ng = model()
    grams = ng.grams(["ab", b"abcdef", "abc", "a\u0101"[:1]])
    assert grams.tolist() == [
        ["ab", "__", "__"],
        ["ab", "cd", "ef"],
        ["ab", "c_", "__"],
        ["a_", "__", "__"],
    ]
    assert ng.positions == 3
    assert ng.position_pairs.tolist() == [[0, 1], [0, 2], [1, 2]]


def test_the_ngram_reports_follow_rappors_channel() -> None:
    # every device holds "ab": its position-0 report sets a Bloom bit of "0:ab" with q*,
    # any other bit with p*.  Each rate over >= 4000 reports is checked at z = 5
    # (false alarm < 2 * 64 * 32 * 3e-7 < 1e-3 over all cells).
    ng = model(full=None, length=4)  # two positions: every device reports (0, 1)
    n = 40_000
    rep = ng.randomize(["ab"] * n, rng=5)
    assert (rep.positions == [0, 1]).all()
    first = rep.ngrams[0::2]
    bits = np.unpackbits(first.bits, axis=1, bitorder="little").astype(float)
    bloom = NGRAM.bloom(["0:ab"] * NGRAM.cohorts, np.arange(NGRAM.cohorts))
    for c in range(NGRAM.cohorts):
        rows = bits[first.cohorts == c]
        assert rows.shape[0] > n / NGRAM.cohorts / 2  # cohorts near uniform
        want = np.where(bloom[c], NGRAM.q_star, NGRAM.p_star)
        sd = np.sqrt(want * (1 - want) / rows.shape[0])
        assert (np.abs(rows.mean(axis=0) - want) < 5 * sd).all()


def test_each_device_draws_distinct_pairs_uniformly() -> None:
    ng = model(full=None, pairs=2)  # 2 of the 3 pairs per device
    n = 30_000
    rep = ng.randomize(["abc"] * n, rng=9)
    pos = rep.positions
    assert pos.shape == (n, 2, 2)
    assert (pos[:, 0] != pos[:, 1]).any(axis=1).all()  # the two pairs of a device differ
    idx = pos[..., 0] * 3 + pos[..., 1]
    counts = np.array([(idx == k).sum() for k in (1, 2, 5)])
    assert counts.sum() == 2 * n
    # each pair in 2/3 of devices: chi-square, false-alarm rate 1e-4
    expected = np.full(3, 2 * n / 3)
    stat = float(((counts - expected) ** 2 / expected).sum())
    assert stat < chi2.isf(1e-4, 2)
    assert len(rep.ngrams) == 4 * n and rep.full is None and len(rep) == n


# ---- epsilon


def test_epsilon_is_basic_composition_of_the_reports() -> None:
    ng = model(pairs=2)
    assert ng.epsilon == pytest.approx(4 * NGRAM.epsilon + FULL.epsilon, rel=1e-15)
    # fresh positions each collection: in time every one of the G = 3 n-grams is reported
    assert ng.permanent_epsilon == pytest.approx(
        3 * NGRAM.permanent_epsilon + FULL.permanent_epsilon, rel=1e-15
    )
    assert model(full=None).epsilon == pytest.approx(2 * NGRAM.epsilon, rel=1e-15)
    # the paper's setting: eps_1 = 2 ln(q*(1-p*)/(p*(1-q*))), q* = 11/16, p* = 9/16
    eps_1 = 2 * math.log((11 / 16) * (7 / 16) / ((9 / 16) * (5 / 16)))
    assert model(full=None).epsilon == pytest.approx(2 * eps_1, rel=1e-12)
    unbounded = RapporNgram(Rappor(m=8, h=1, cohorts=1, f=0.0, p=0.25, q=0.75), None, "ab", 1, 2)
    assert unbounded.permanent_epsilon == math.inf and math.isfinite(unbounded.epsilon)


def _report_ratio(r: Rappor, b1: np.ndarray, b2: np.ndarray) -> float:
    """The largest ``ln P(out | b1) / P(out | b2)`` over the ``2**m`` outputs of one report
    (enumerated), each bit set with ``q*`` where the Bloom bit is set, ``p*`` elsewhere."""
    outs = np.array(list(itertools.product([0, 1], repeat=r.m)), dtype=bool)

    def law(b: np.ndarray) -> np.ndarray:
        rate = np.where(b, r.q_star, r.p_star)
        return np.where(outs, rate, 1 - rate).prod(axis=1)

    return float(np.log(law(b1) / law(b2)).max())


def test_epsilon_holds_by_enumeration_and_is_reached() -> None:
    # m = 8 bits a report: every output of every report enumerated.  Given the (public)
    # cohort and positions the reports are independent, so the worst ratio of the device's
    # whole output is the sum of the reports' worst log-ratios.
    ngram = Rappor(m=8, h=1, cohorts=1, f=0.5, p=0.5, q=0.75)
    full = Rappor(m=8, h=1, cohorts=1, f=0.5, p=0.5, q=0.75)
    ng = RapporNgram(ngram, full, alphabet="abc", gram=1, length=2)
    strings = ["a", "b", "c", "ab", "ba", "cc", "ca", "bc"]
    reached = False
    for s1, s2 in itertools.combinations(strings, 2):
        g1, g2 = ng.grams([s1, s2])
        total = 0.0
        for j in (0, 1):  # a device's one pair is (0, 1)
            b = ngram.bloom([f"{j}:{g1[j]}", f"{j}:{g2[j]}"], [0, 0])
            total += _report_ratio(ngram, b[0], b[1])
        b = full.bloom([s1, s2], [0, 0])
        total += _report_ratio(full, b[0], b[1])
        assert total <= ng.epsilon * (1 + 1e-12)
        reached |= math.isclose(total, ng.epsilon, rel_tol=1e-12)
    assert reached  # some pair differs in every report's Bloom bit: the bound is tight


# ---- discovery


def test_planted_strings_are_recalled_and_nothing_else() -> None:
    # n = 5e4, seed fixed.  Each planted string's n-grams have shares >= 0.15, about 10
    # standard errors above the n-gram threshold z(0.05 / (3 * 273)) ~ 3.8 se; an absent
    # string is discovered with probability <= alpha = 0.05 (step 4's Bonferroni).  The
    # interval check is at z = 4 (false alarm 6e-5 a string).
    n = 50_000
    values, counts = population(n, PLANTED, seed=7)
    ng = model()
    found = ng.discover(ng.randomize(values, rng=11))
    assert isinstance(found, NgramDiscovery)
    assert set(found.strings) == set(PLANTED)
    assert found.strings == tuple(sorted(PLANTED, key=lambda s: -PLANTED[s]))
    for s, value, se in zip(found.strings, found.values, found.se, strict=True):
        assert abs(value - counts[s] / n) < 4 * se
    low, high = found.ci(0.95)
    assert (low < found.values).all() and (found.values < high).all()
    assert set(found.ngrams[0]) == {"ba", "pe", "de"}
    assert set(found.ngrams[2]) >= {"na", "__"}
    assert found.ngram_threshold == pytest.approx(0.05 / (3 * ng.domain_size))
    assert found.string_threshold == pytest.approx(0.05 / len(found.candidates))
    d = found.to_dict(0.95)
    assert [row["string"] for row in d["strings"]] == list(found.strings)
    assert d["edge_threshold"] == 0.02 and len(d["strings"][0]["ci_wald"]) == 2
    assert "banana" in str(found)


@pytest.mark.parametrize("lengths", ["six", "one to six"])
def test_under_the_null_nothing_is_discovered(lengths: str) -> None:
    # uniform strings of six letters: every string has share 16**-6 and every n-gram 1/256;
    # cut to uniform lengths 1..6, padding n-grams are frequent (share 1/3 at position 1)
    # but no string is (at most 1/16 / 6).  The rule discovers some string with
    # probability at most about alpha = 0.05 (step 4's Bonferroni, whatever the candidates):
    # the stated bound here is 0 strings, false alarm 0.05.
    n = 50_000
    values, _ = population(n, {}, seed=3)
    if lengths != "six":
        cut = np.random.default_rng(31).integers(1, 7, n)
        values = np.array([s[:k] for s, k in zip(values.tolist(), cut.tolist(), strict=True)])
    ng = model()
    found = ng.discover(ng.randomize(values, rng=4))
    assert found.strings == ()
    assert found.values.size == 0
    if lengths != "six":
        assert "__" in found.ngrams[2]  # the padding is found, and no string from it


def test_without_full_reports_the_candidates_come_without_frequencies() -> None:
    n = 30_000
    values, _ = population(n, {"abc": 0.4, "ponmlk": 0.3}, seed=1)
    ng = model(full=None)
    found = ng.discover(ng.randomize(values, rng=2))
    assert found.estimate is None and found.string_threshold is None
    assert {"abc", "ponmlk"} <= set(found.strings) == set(found.candidates)
    assert np.isnan(found.values).all() and np.isnan(found.se).all()


def test_a_lower_edge_threshold_admits_more_candidates() -> None:
    values, _ = population(30_000, PLANTED, seed=21)
    ng = model()
    rep = ng.randomize(values, rng=22)
    loose = ng.discover(rep, edge_threshold=1e-6)
    default = ng.discover(rep)
    strict = ng.discover(rep, edge_threshold=0.3)  # above every planted string's share
    assert set(strict.candidates) <= set(default.candidates) <= set(loose.candidates)
    assert len(default.candidates) < len(loose.candidates)
    assert set(PLANTED) <= set(default.strings) <= set(loose.strings)
    assert not set(PLANTED) <= set(strict.candidates)
    with pytest.raises(ParameterError, match="`max_candidates` \\(2\\)"):
        ng.discover(rep, edge_threshold=1e-6, max_candidates=2)


# ---- bad input


@pytest.mark.parametrize(
    ("values", "match"),
    [
        ([""], r"`values\[0\]` must hold 1\.\.6 characters \(`length`\), got 0"),
        (["abc", "abcdefa"], r"`values\[1\]` must hold 1\.\.6 characters \(`length`\), got 7"),
        (["ab", b"a\xffb"], r"`values\[1\]` must be valid UTF-8, got bytes with an invalid byte "),
        (["abz"], r"`values\[0\]` must hold characters of `alphabet`.*at character 2"),
        (["ab", 3], r"`values\[1\]` must be a str or UTF-8 bytes, got int"),
        ([["ab"]], r"`values` must be 1-D"),
        ([], r"`values` must hold at least one string, got none"),
    ],
)
def test_bad_values_are_refused_naming_them(values: object, match: str) -> None:
    with pytest.raises(DataError, match=match):
        model().randomize(values, rng=1)


def test_a_lone_string_is_not_a_sequence() -> None:
    with pytest.raises(ParameterTypeError, match="`values` must be a sequence"):
        model().randomize("abc", rng=1)


@pytest.mark.parametrize(
    ("kw", "error", "match"),
    [
        ({"alphabet": "ab_"}, ParameterError, "`alphabet` must hold .* without `pad`"),
        ({"alphabet": "abca"}, ParameterError, "`alphabet` must hold .* each once"),
        ({"alphabet": 5}, ParameterTypeError, "`alphabet` must be a str"),
        ({"pad": "ab"}, ParameterError, "`pad` must be one character"),
        ({"length": 7}, ParameterError, "`length` must be a multiple of `gram`"),
        ({"length": 2}, ParameterError, r"`length` must be an integer in \[4, 64\]"),
        ({"gram": 4}, ParameterError, "n-gram domain .* at most 8192 .* got 69905"),
        ({"pairs": 4}, ParameterError, r"`pairs` must be an integer in \[1, 3\]"),
        ({"full": "rappor"}, ParameterTypeError, "`full` must be a Rappor or None"),
    ],
)
def test_bad_parameters_are_refused(kw: dict[str, object], error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        model(**kw)  # type: ignore[arg-type]


def test_bad_discovery_arguments_are_refused() -> None:
    ng = model()
    rep = ng.randomize(["abc", "ab"] * 20, rng=1)
    with pytest.raises(ParameterError, match="`alpha` must be in"):
        ng.discover(rep, alpha=0.0)
    with pytest.raises(ParameterError, match="`edge_threshold` must be in"):
        ng.discover(rep, edge_threshold=1.0)
    with pytest.raises(ParameterTypeError, match="`reports` must be NgramReports"):
        ng.discover(rep.ngrams)  # type: ignore[arg-type]
    with pytest.raises(DataError, match=r"`reports\.full` must be None"):
        model(full=None).discover(rep)
    with pytest.raises(DataError, match=r"`reports\.positions` must hold pairs"):
        ng.discover(NgramReports(rep.positions[:, :, ::-1].copy(), rep.ngrams, rep.full))
    with pytest.raises(DataError, match=r"`reports\.ngrams` must hold 2 pairs n = 80"):
        ng.discover(NgramReports(rep.positions, rep.ngrams[:10], rep.full))
    with pytest.raises(ParameterTypeError, match=r"`reports\.ngrams` must be RapporReports"):
        bits_only = NgramReports(rep.positions, rep.ngrams.bits, rep.full)  # type: ignore[arg-type]
        ng.discover(bits_only)
    one = NgramReports(np.array([[[0, 1]]]), rep.ngrams[:2], rep.full[:1] if rep.full else None)
    with pytest.raises(DataError, match="n-gram reports of every position, got none of 2"):
        ng.discover(one)


# ---- studies


@pytest.mark.slow
def test_recall_and_null_rates_over_seeds() -> None:
    # 10 seeds of each: planted strings at 0.25, 0.2, 0.15 are all recalled in every run
    # (each is ~10 se above its thresholds); under the null some string is discovered with
    # probability <= 0.05 a run, so 3 or more runs of 10 with a discovery has probability
    # <= P(Binomial(10, 0.05) >= 3) = 0.0115 (the false-alarm rate of this check).
    ng = model()
    alarms = 0
    for seed in range(10):
        values, _ = population(50_000, PLANTED, seed=100 + seed)
        assert set(PLANTED) <= set(ng.discover(ng.randomize(values, rng=seed)).strings)
        null, _ = population(50_000, {}, seed=200 + seed)
        alarms += bool(ng.discover(ng.randomize(null, rng=seed)).strings)
    assert alarms <= 2
