"""Random sources: a fast CSPRNG for real respondents, seeded generators for simulation.

Every randomizer in ``deniable`` consumes randomness in 64-bit *words*, a fixed number of
words per report, whatever the true answer is.  A Bernoulli(p) draw compares the top 53
bits of one word with an integer threshold ``t`` (probability ``t / 2**53``): exact whenever
``p`` is dyadic with denominator at most ``2**53`` (3/4, 5/8, ...), and within ``2**-53`` of
``p`` otherwise.  The designs round their thresholds *toward privacy*
(:func:`binary_thresholds`): the channel they implement never has a larger epsilon than the
one they state.
(:func:`words_below` evaluates ``word >> 11 < t`` as ``word < t << 11``, the same test
without the shift; see ``docs/performance.md``.)

Sources accepted wherever a function takes ``rng``:

* ``None`` -- :class:`SystemRandom`, the default for real respondents;
* a :class:`SystemRandom`: ``SystemRandom()`` draws from the process's ChaCha20 keystream,
  ``SystemRandom(source="os")`` from ``os.urandom`` (below);
* a :class:`ChaCha20Words` of one's own (its own key, or an injected one for tests);
* a ``numpy.random.Generator`` -- for reproducible simulation (its bit generator's raw
  64-bit output is used, so results depend only on the seed);
* an ``int`` seed -- shorthand for ``numpy.random.Generator(numpy.random.PCG64(seed))``;
* an :class:`ArrayWords` -- an explicit array of words, handed out in order (test vectors:
  the same words give the same reports in any client, see ``docs/specs.md``);
* any other :class:`WordSource`: an object with ``random_raw(size)`` returning ``size``
  ``uint64`` words (a numpy bit generator such as ``numpy.random.PCG64(1)`` is one).

The default CSPRNG.  ``rng=None`` and ``SystemRandom()`` draw from one
:class:`ChaCha20Words` per process (:func:`default_stream`): the ChaCha20 keystream of
RFC 8439 (through the ``cryptography`` package's OpenSSL binding), read as little-endian
64-bit words, with fast key erasure (Bernstein 2017).  Its first key is 32 bytes of
``os.urandom``; every segment of :data:`REKEY_BYTES` (2**20) output bytes has a key of its
own, taken from the keystream block at counter 0 of the previous key, which is then
dropped; and the first segment after every :data:`RESEED_BYTES` (2**30) bytes of output
takes a fresh key from ``os.urandom``.  Every call takes its words atomically (threads
never share a word), and a child made by ``os.fork`` re-keys from ``os.urandom`` before its
first word (it never repeats its parent's).  Why this is a CSPRNG (ChaCha20's PRF security,
a hybrid over the segments, forward secrecy): the proof note in
``deniable/randomness/_chacha.py``, and ``docs/performance.md``.  To read every word from
the kernel instead (``getrandom(2)``, about ten times slower), pass
``rng=SystemRandom(source="os")``.
"""

from __future__ import annotations

from deniable.randomness._chacha import REKEY_BYTES, RESEED_BYTES, ChaCha20Words
from deniable.randomness._sources import (
    CHUNK,
    ArrayWords,
    RandomSource,
    WordSource,
    fill_words,
    python_words,  # the scalar fast paths of deniable.designs: the same words, as ints
    random_words,
    resolve_rng,
)
from deniable.randomness._system import SOURCES, SystemRandom, default_stream
from deniable.randomness._words import (
    bernoulli,
    binary_thresholds,
    exp_lower_bound,
    probability_threshold,
    uniform_below,
    uniform_below_into,
    words_below,
)

__all__ = [
    "CHUNK",
    "REKEY_BYTES",
    "RESEED_BYTES",
    "SOURCES",
    "ArrayWords",
    "ChaCha20Words",
    "RandomSource",
    "SystemRandom",
    "WordSource",
    "bernoulli",
    "binary_thresholds",
    "default_stream",
    "exp_lower_bound",
    "fill_words",
    "probability_threshold",
    "python_words",
    "random_words",
    "resolve_rng",
    "uniform_below",
    "uniform_below_into",
    "words_below",
]
