"""Statistical smoke checks of the default CSPRNG's words (NIST SP 800-22 style, on 2**22
words), and the randomizers' statistical checks run with the default source (``rng=None``).

The generator is deterministic given its key, so every check here runs on a fixed key
(the default construction, ``ChaCha20Words``, with an injected key instead of one from
``os.urandom``): the outcome is reproducible, and each check's false-alarm rate is the
probability, over keys, that words indistinguishable from uniform fail it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from scipy import special, stats

from deniable.designs import Design
from deniable.oracles import support_probabilities
from deniable.randomness import ChaCha20Words, SystemRandom

KEY = bytes.fromhex("5b1e0c2f9d4a7e3b8c6f1a2d4e9b0c7a3f5e8d2c1b4a6978e0f3d2c5b8a71e46")
N_WORDS = 1 << 22
N_BITS = 64 * N_WORDS
#: Each smoke check's false-alarm rate (five checks: about 5e-6 in all).
ALPHA = 1e-6

_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


@pytest.fixture(scope="module")
def words() -> np.ndarray:
    """2**22 words of the default construction (re-keyed every 2**20 bytes: 32 segments),
    in requests of the sizes the randomizers make."""
    gen = ChaCha20Words(KEY, reseed_bytes=None)
    parts = [gen.random_raw(1 << 16) for _ in range(N_WORDS >> 16)]
    return np.concatenate(parts)


def _ones(data: np.ndarray) -> int:
    return int(_POPCOUNT[data.view(np.uint8)].sum(dtype=np.int64))


def test_monobit_frequency(words: np.ndarray) -> None:
    """SP 800-22 section 2.1: ``S = ones - zeros`` over the 2**28 bits; p-value
    ``erfc(|S| / sqrt(2 n))`` above 1e-6 (false alarm 1e-6)."""
    s = 2 * _ones(words) - N_BITS
    assert special.erfc(abs(s) / math.sqrt(2 * N_BITS)) > ALPHA


def test_runs(words: np.ndarray) -> None:
    """SP 800-22 section 2.3 on the bits in order (each word from its least significant
    bit): the number of runs ``V`` against ``2 n pi (1 - pi)``; p-value above 1e-6 (false
    alarm 1e-6)."""
    pi = _ones(words) / N_BITS
    assert abs(pi - 0.5) < 2 / math.sqrt(N_BITS)  # the test's prerequisite
    inside = (words ^ (words >> np.uint64(1))) & np.uint64((1 << 63) - 1)  # 63 pairs a word
    across = int(np.count_nonzero((words[:-1] >> np.uint64(63)) != (words[1:] & np.uint64(1))))
    runs = 1 + _ones(inside) + across
    z = abs(runs - 2 * N_BITS * pi * (1 - pi)) / (2 * math.sqrt(2 * N_BITS) * pi * (1 - pi))
    assert special.erfc(z) > ALPHA


def test_bytes_are_uniform(words: np.ndarray) -> None:
    """A chi-square test of the 2**25 bytes over 256 values (255 degrees of freedom),
    p-value above 1e-6 (false alarm 1e-6)."""
    counts = np.bincount(words.view(np.uint8), minlength=256)
    assert stats.chisquare(counts).pvalue > ALPHA


def test_byte_pairs_are_uniform(words: np.ndarray) -> None:
    """Serial test: the 2**24 non-overlapping pairs of bytes over 65,536 values (512
    expected in each), chi-square p-value above 1e-6 (false alarm 1e-6)."""
    counts = np.bincount(words.view(np.uint16), minlength=1 << 16)
    assert stats.chisquare(counts).pvalue > ALPHA


def test_every_bit_position_is_a_fair_coin(words: np.ndarray) -> None:
    """Each of the 64 bit positions over the 2**22 words: the sum of the 64 squared
    z-scores is chi-square with 64 degrees of freedom; p-value above 1e-6 (false alarm
    1e-6).  Catches a word assembled wrongly (a stuck or repeated byte)."""
    ones = np.array([np.count_nonzero(words & np.uint64(1 << b)) for b in range(64)], dtype=float)
    z = (ones - N_WORDS / 2) / math.sqrt(N_WORDS / 4)
    assert stats.chi2.sf(float(np.sum(z**2)), 64) > ALPHA


def test_no_repeated_word(words: np.ndarray) -> None:
    """No word twice among 2**22 (a repeat has probability about 2**44 / 2**65 = 5e-7)."""
    ordered = np.sort(words)
    assert not np.any(ordered[1:] == ordered[:-1])


# --- the randomizers with the default source -------------------------------------------------

N_EMPIRICAL = 200_000


@pytest.fixture
def default_source(monkeypatch: pytest.MonkeyPatch) -> None:
    """``rng=None`` draws from a default generator with a fixed key (reproducible)."""
    monkeypatch.setattr(
        "deniable.randomness._system._default", ChaCha20Words(KEY, reseed_bytes=None)
    )


def test_empirical_channel_with_the_default_source(design: Design, default_source: None) -> None:
    """As the conformance suite does with a seeded generator, with ``rng=None``: per cell
    of the channel, an exact two-sided binomial test at level 1e-6 on 200,000 respondents
    per truth (false alarm <= 1e-6 per cell, ~4e-4 over the ~400 cells); impossible and
    certain reports exactly."""
    for x in range(design.n_truths):
        reports = design.randomize(np.full(N_EMPIRICAL, x))
        counts = np.bincount(reports, minlength=design.n_reports)
        for r, p in enumerate(np.asarray(design.channel)[:, x]):
            c = int(counts[r])
            if p == 0:
                assert c == 0, (r, x)
            elif p == 1:
                assert c == N_EMPIRICAL, (r, x)
            else:
                assert stats.binomtest(c, N_EMPIRICAL, p).pvalue > 1e-6, (r, x, c, p)


def test_oracle_support_with_the_default_source(oracle: Any, default_source: None) -> None:
    """For three true values, 20,000 reports each with ``rng=None`` (and with
    ``SystemRandom()``): every value's support share is within 6 binomial SEs of ``p`` (the
    true value) or ``q`` (any other); false alarm ~2e-9 per value and input."""
    p, q = support_probabilities(oracle)
    k = oracle.channel.n_truths
    n = 20_000
    for rng in (None, SystemRandom()):
        for x in sorted({0, k // 2, k - 1}):
            counts = oracle.tally(oracle.randomize(np.full(n, x), rng=rng)).counts[:k]
            expected = np.full(k, q)
            expected[x] = p
            z = (counts / n - expected) / np.sqrt(expected * (1 - expected) / n)
            assert np.max(np.abs(z)) <= 6, (x, float(np.max(np.abs(z))))
