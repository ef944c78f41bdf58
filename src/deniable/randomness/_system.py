"""``SystemRandom``: the default source, the process's ChaCha20 keystream or ``os.urandom``."""

from __future__ import annotations

import os
import threading
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from deniable.exceptions import ParameterError, ParameterTypeError
from deniable.randomness._chacha import ChaCha20Words, check_word_buffer

__all__ = ["SOURCES", "SystemRandom", "default_stream"]

#: The sources :class:`SystemRandom` can draw from.
SOURCES: Final = ("chacha20", "os")

#: Words :meth:`SystemRandom.fill` reads from ``os.urandom`` a call (64 kB).
_OS_STEP: Final = 1 << 13

_default: ChaCha20Words | None = None
_default_lock = threading.Lock()


def default_stream() -> ChaCha20Words:
    """The process's one :class:`ChaCha20Words` (made on first use), which every
    ``SystemRandom()`` and every ``rng=None`` draws from."""
    global _default
    stream = _default
    if stream is None:
        with _default_lock:
            if _default is None:
                _default = ChaCha20Words()
            stream = _default
    return stream


class SystemRandom:
    """The CSPRNG for real respondents: the default whenever ``rng`` is ``None``.

    ``SystemRandom()`` draws from the process's ChaCha20 keystream
    (:class:`ChaCha20Words`: keyed from ``os.urandom``, a fresh key every 2**20 bytes and
    one from the OS every 2**30 bytes, safe across threads and ``fork``), at the speed of
    the cipher; ``SystemRandom(source="os")`` reads every word from ``os.urandom`` (the
    kernel's CSPRNG, about ten times slower).  ``random_raw(size)`` returns ``size``
    independent uniform 64-bit words.  There is no seed and no state to save: every
    ``SystemRandom()`` of a process shares its one stream (a pickled one draws from the
    stream of the process that loads it).  Use it for real respondents, never for
    reproducible simulation.

    >>> SystemRandom()
    SystemRandom()
    >>> SystemRandom(source="os").random_raw(3).shape
    (3,)
    """

    __slots__ = ("_os",)

    def __init__(self, source: str = "chacha20") -> None:
        if not isinstance(source, str):
            raise ParameterTypeError(
                f"`source` must be one of 'chacha20', 'os', got {type(source).__name__}."
            )
        if source not in SOURCES:
            raise ParameterError(f"`source` must be one of 'chacha20', 'os', got {source!r}.")
        self._os = source == "os"

    @property
    def source(self) -> str:
        """``'chacha20'`` (the process's keystream) or ``'os'`` (``os.urandom``)."""
        return "os" if self._os else "chacha20"

    def random_raw(self, size: int) -> npt.NDArray[np.uint64]:
        """Return ``size`` uniform 64-bit words."""
        if self._os:
            return np.frombuffer(os.urandom(8 * size), dtype=np.uint64)
        return default_stream().random_raw(size)

    def fill(self, out: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
        """Write ``out.size`` uniform 64-bit words into ``out`` (a writeable contiguous 1-D
        ``uint64`` array) and return it; from the keystream with no new array."""
        if self._os:  # os.urandom 2**13 words at a time: no second buffer of out's size
            check_word_buffer(out)
            for start in range(0, out.size, _OS_STEP):
                stop = min(start + _OS_STEP, out.size)
                out[start:stop] = np.frombuffer(os.urandom(8 * (stop - start)), dtype=np.uint64)
            return out
        return default_stream().fill(out)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SystemRandom):
            return NotImplemented
        return self._os == other._os

    def __hash__(self) -> int:
        return hash((SystemRandom, self._os))

    def __reduce__(self) -> tuple[Any, ...]:
        return (SystemRandom, (self.source,))

    def __repr__(self) -> str:
        return "SystemRandom(source='os')" if self._os else "SystemRandom()"
