"""Word sources: anything that hands out uniform 64-bit words, how ``rng`` arguments are
normalised, and how the randomizers take their words (the public names are documented in
``deniable.randomness``)."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterable
from typing import Any, Protocol, TypeAlias, runtime_checkable

import numpy as np
import numpy.typing as npt

from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.randomness import _system
from deniable.randomness._chacha import ChaCha20Words, check_word_buffer
from deniable.randomness._system import SystemRandom, default_stream

__all__ = [
    "CHUNK",
    "ArrayWords",
    "RandomSource",
    "WordSource",
    "fill_words",
    "python_words",
    "random_words",
    "resolve_rng",
]

#: Reports are randomized in blocks of this many so that temporaries stay in cache (and the
#: memory a randomizer needs beyond its output is a few MB whatever ``n``).  Changing it
#: changes which word goes to which report for designs with several words per report.
CHUNK = 1 << 16


@runtime_checkable
class WordSource(Protocol):
    """Anything that hands out uniform 64-bit words: ``random_raw(size)`` returns a 1-D
    ``uint64`` array of ``size`` words.

    :class:`SystemRandom`, :class:`ArrayWords` and numpy's bit generators
    (``numpy.random.PCG64(seed)``, ...) are word sources; so is any object of a client's own
    with that method.  A randomizer draws its words in a documented order
    (``docs/specs.md``), so the same words give the same reports whatever their source.
    """

    def random_raw(self, size: int) -> npt.NDArray[np.uint64]:
        """Return the next ``size`` words."""
        ...  # pragma: no cover - a protocol


class ArrayWords:
    """An explicit array of 64-bit words, handed out in order: ``random_raw(size)`` returns the
    next ``size`` of them.

    Use it to replay given words (a test vector, another client's words) through any
    randomizer: ``design.randomize(truth, rng=ArrayWords(words))``.  ``words`` may be
    integers in ``[0, 2**64 - 1]``, a numpy integer array, or strings of decimal or ``0x``
    hexadecimal digits (as JSON files hold them, since a 64-bit word does not fit a JSON
    number).  Asking for more words than are left raises
    :class:`~deniable.exceptions.DataError` naming ``rng`` with how many were asked and how
    many are left, and hands out nothing.  It is safe to share between threads (each call
    takes its words atomically).

    >>> src = ArrayWords([0, "0xffffffffffffffff", "12"])
    >>> src.random_raw(2)
    array([                   0, 18446744073709551615], dtype=uint64)
    >>> src.remaining
    1
    """

    __slots__ = ("_lock", "_position", "_words")

    def __init__(self, words: Iterable[Any] | npt.NDArray[Any]) -> None:
        arr = _as_words(words)
        arr.flags.writeable = False
        self._words = arr
        self._position = 0
        self._lock = threading.Lock()

    def random_raw(self, size: int) -> npt.NDArray[np.uint64]:
        """The next ``size`` words (a read-only view)."""
        if isinstance(size, bool) or not isinstance(size, int | np.integer) or size < 0:
            raise ParameterError(f"`size` must be an integer >= 0, got {size!r}.")
        size = int(size)
        with self._lock:
            start = self._position
            left = self._words.size - start
            if size > left:
                raise DataError(
                    f"`rng` (ArrayWords) has {left} of its {self._words.size} words left, "
                    f"{size} were asked: give as many words as the reports consume (the "
                    "spec's words_per_report per report)."
                )
            self._position = start + size
        return self._words[start : start + size]

    @property
    def used(self) -> int:
        """How many words have been handed out."""
        return self._position

    @property
    def remaining(self) -> int:
        """How many words are left."""
        return self._words.size - self._position

    def __len__(self) -> int:
        return int(self._words.size)

    def __repr__(self) -> str:
        return f"ArrayWords({self._words.size} words, {self._position} used)"


_WORD_RANGE = "integers in [0, 2**64 - 1] (or strings of decimal or 0x hex digits)"


def _word(i: int, item: Any) -> int:
    if isinstance(item, str):
        text = item.strip()
        try:
            value = int(text, 16) if text[:2].lower() == "0x" else int(text, 10)
        except ValueError:
            raise ParameterTypeError(
                f"`words[{i}]` must be one of {_WORD_RANGE}, got {item!r}."
            ) from None
    elif isinstance(item, int | np.integer) and not isinstance(item, bool | np.bool_):
        value = int(item)
    else:
        raise ParameterTypeError(
            f"`words[{i}]` must be one of {_WORD_RANGE}, got {type(item).__name__} {item!r}."
        )
    if not 0 <= value < 1 << 64:
        raise ParameterError(f"`words[{i}]` must be one of {_WORD_RANGE}, got {value}.")
    return value


def _as_words(words: Any) -> npt.NDArray[np.uint64]:
    if isinstance(words, np.ndarray):
        if words.ndim != 1:
            raise ParameterError(f"`words` must be a 1-D array, got shape {words.shape}.")
        if words.dtype == np.uint64:
            return words.copy()
        if words.dtype.kind not in "iu":
            raise ParameterTypeError(
                f"`words` must hold {_WORD_RANGE}, got an array of dtype {words.dtype}."
            )
        if words.size and int(words.min()) < 0:
            raise ParameterError(f"`words` must hold {_WORD_RANGE}, got {int(words.min())}.")
        return words.astype(np.uint64)
    if isinstance(words, str | bytes) or not isinstance(words, Iterable):
        raise ParameterTypeError(
            f"`words` must be a sequence of {_WORD_RANGE}, got {type(words).__name__}."
        )
    return np.array([_word(i, x) for i, x in enumerate(words)], dtype=np.uint64)


#: What ``resolve_rng`` returns: a source :func:`random_words` can draw from.
RandomSource: TypeAlias = (
    "np.random.Generator | SystemRandom | ChaCha20Words | ArrayWords | WordSource"
)


def resolve_rng(rng: Any = None) -> RandomSource:
    """Normalise ``rng``: ``None`` (the CSPRNG, ``SystemRandom()``), an ``int`` seed (PCG64),
    a ``Generator``, :class:`SystemRandom`, :class:`ChaCha20Words`, :class:`ArrayWords` or
    any other :class:`WordSource`."""
    if rng is None:
        return SystemRandom()
    if isinstance(rng, SystemRandom | np.random.Generator | ArrayWords | ChaCha20Words):
        return rng
    if isinstance(rng, int | np.integer) and not isinstance(rng, bool):
        if rng < 0:
            raise ParameterError(f"`seed` must be a non-negative integer, got {rng}.")
        return np.random.Generator(np.random.PCG64(int(rng)))
    if not isinstance(rng, type) and callable(getattr(rng, "random_raw", None)):
        return rng  # type: ignore[no-any-return]
    raise ParameterTypeError(
        "`rng` must be None, an int seed, a numpy.random.Generator, deniable.SystemRandom, "
        "an ArrayWords or another word source with random_raw(size), "
        f"got {type(rng).__name__}."
    )


def random_words(rng: RandomSource, size: int) -> npt.NDArray[np.uint64]:
    """Return ``size`` uniform 64-bit words from ``rng`` (a source from :func:`resolve_rng`).

    A word source of a client's own must return a 1-D ``uint64`` array of ``size`` words;
    anything else raises :class:`~deniable.exceptions.DataError` naming ``rng``.
    """
    if isinstance(rng, SystemRandom | ArrayWords | ChaCha20Words):
        return rng.random_raw(size)
    if isinstance(rng, np.random.Generator):
        out = rng.bit_generator.random_raw(size)
        return np.asarray(out, dtype=np.uint64)
    got = rng.random_raw(size)
    arr = got if isinstance(got, np.ndarray) else np.asarray(got)
    if arr.dtype != np.uint64 or arr.shape != (size,):
        raise DataError(
            f"`rng` ({type(rng).__name__}) must return {size} uint64 words from "
            f"random_raw({size}), got an array of dtype {arr.dtype} and shape {arr.shape}."
        )
    return arr


#: Words a numpy ``Generator`` draws at a time for :func:`fill_words` (256 kB).
_FILL_STEP = 1 << 15


def fill_words(rng: RandomSource, out: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """Write the next ``out.size`` words of ``rng`` (a source from :func:`resolve_rng`)
    into ``out``, a writeable contiguous 1-D ``uint64`` array, and return ``out``: the
    words ``random_words(rng, out.size)`` returns.

    The default keystream writes them straight into ``out`` (no new array: a randomizer
    that draws block after block into one buffer keeps it in cache); a numpy
    ``Generator`` draws them ``2**15`` at a time (its bit generator hands out the same
    words however the requests split them), every other source in one call.

    >>> import numpy as np
    >>> fill_words(ArrayWords([5, 7, 9]), np.empty(2, dtype=np.uint64)).tolist()
    [5, 7]
    """
    if isinstance(rng, SystemRandom | ChaCha20Words):
        return rng.fill(out)
    check_word_buffer(out)
    if isinstance(rng, np.random.Generator):
        bits = rng.bit_generator
        for start in range(0, out.size, _FILL_STEP):
            stop = min(start + _FILL_STEP, out.size)
            out[start:stop] = bits.random_raw(stop - start)
        return out
    out[...] = random_words(rng, out.size)
    return out


def python_words(rng: Any, size: int) -> list[int]:
    """The next ``size`` words of ``rng`` as Python ints: the words
    ``random_words(resolve_rng(rng), size)`` returns, in the same order and taken with the
    same calls on a word source, without building arrays (the scalar fast paths).

    ``None`` and ``SystemRandom()`` take the next words of the process's keystream
    (:func:`default_stream`), ``SystemRandom(source="os")`` reads ``os.urandom(8 * size)``
    as native-order 64-bit words, as its ``random_raw`` does; a ``Generator`` hands out its
    bit generator's raw words (one word is ``random_raw()``, the same word as
    ``random_raw(1)[0]``); every other source goes through :func:`random_words` and its
    checks.
    """
    if rng is None:
        return (_system._default or default_stream()).python_words(size)
    cls = rng.__class__
    if cls is SystemRandom:
        if not rng._os:
            return (_system._default or default_stream()).python_words(size)
        buf = os.urandom(8 * size)
        if size == 1:
            return [int.from_bytes(buf, sys.byteorder)]
        return [int.from_bytes(buf[i : i + 8], sys.byteorder) for i in range(0, 8 * size, 8)]
    if cls is ChaCha20Words:
        return rng.python_words(size)  # type: ignore[no-any-return]
    if cls is np.random.Generator:
        bits = rng.bit_generator
        if size <= 4:  # a few scalar calls beat building an array (same words, in order)
            return [bits.random_raw() for _ in range(size)]
        return list(bits.random_raw(size).tolist())
    return list(random_words(resolve_rng(rng), size).tolist())
