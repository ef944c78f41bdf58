"""The default CSPRNG: the ChaCha20 keystream read as 64-bit words, with fast key erasure.

Proof note (why the words are a CSPRNG, and what a stolen state reveals)
-------------------------------------------------------------------------
Claim.  To anyone who does not know the current key, the words of :class:`ChaCha20Words`
are indistinguishable from independent uniform 64-bit words; and someone who reads the
whole state of the generator at some moment learns nothing about the words of the
segments that were finished before that moment (forward secrecy).

Construction (Bernstein, "Fast-key-erasure random-number generators", 2017; the
"serial re-keying" of Abdalla & Bellare, ASIACRYPT 2000, and the forward-secure generator
built from a PRF in Bellare & Yee, CT-RSA 2003, section 2.5).  Write ``F(K, N, c)`` for the
ChaCha20 block function of RFC 8439 (section 2.3): 64 bytes from a 256-bit key ``K``, a
96-bit nonce ``N`` and a 32-bit block counter ``c``.  Segment ``i`` has key ``K_i``:

* ``K_{i+1}`` is the first 32 bytes of ``F(K_i, N, 0)`` (the other 32 are dropped);
* the segment's output is ``F(K_i, N, 1) || ... || F(K_i, N, S)``, ``S = rekey_bytes / 64``
  blocks, read as little-endian 64-bit words; the stream of the generator is the outputs
  of segments 0, 1, 2, ... one after the other, handed out in order (an array draw takes
  the next words, a scalar draw the next word of a chunk of 512 taken from the stream);
* ``K_0`` is 32 bytes of ``os.urandom``, and so is the key of the first segment after
  every ``reseed_bytes`` of output (and of the first segment after a fork, in the child).

Argument.  The standard assumption on ChaCha20 (Bernstein, "ChaCha, a variant of Salsa20",
SASC 2008; RFC 8439 section 1; the
security analysis of Procter, "A security analysis of the composition of ChaCha20 and
Poly1305", IACR ePrint 2014/613, section 3, which models it the same way) is that
``F(K, N, .)`` is a pseudorandom function of the counter for a uniform secret ``K``: an
adversary making ``q`` queries tells it from a uniformly random function with advantage
at most ``adv_prf(q)``, negligible.  Within one segment the counters ``0..S`` are distinct,
so ``F(K_i, N, 0..S)`` (the next key and the output) is indistinguishable from
``(S + 1) * 64`` uniform bytes.  A hybrid over the segments (replace segment 0's block
function by a random function, then segment 1's, which now has a uniform key, and so on)
bounds the advantage against ``m`` segments by ``m * adv_prf(S + 1)``: the output is a PRG
(Abdalla & Bellare 2000 bound serial re-keying the same way).  Forward secrecy: once
segment ``i`` is finished its key is no longer referenced; the state holds ``K_{i+1}``
and later keys only, which are outputs of ``F(K_i, ...)`` and so, by the same hybrid,
independent-looking of segment ``i``'s words (Bellare & Yee 2003, section 2: the
generator that outputs one block and keeps the next as its state is forward-secure when
the underlying generator is a PRG).  A snapshot taken while segment ``i`` is being handed
out holds its cipher context and ``K_{i+1}``, so it reveals the words of segment ``i``
(earlier ones of it included, at most ``rekey_bytes``) and every word after them until the
next reseed; no word of an earlier segment.  Python cannot promise to overwrite
freed memory (the ``bytes`` a cipher object was built from may linger until reused): the
key schedule is the guarantee, the erasure of memory a best effort (the array the words
for small requests are made in is zeroed, and a word handed out leaves the generator).
Reseeding from ``os.urandom`` adds recovery after a compromise: a state stolen before a
reseed says nothing about the segments after it.

Tests that check it: ``tests/test_csprng.py``: the words against the RFC 8439 test
vectors (sections 2.3.2 and 2.4.2, appendix A.1; the next key against appendix A.1 vector 1
and A.4 vector 2) and against an independent pure-Python ChaCha20 across the re-keying
boundary and the reseed; a fork child never repeats the parent's words; threads never get
the same words.  ``tests/test_csprng_statistics.py``: NIST SP 800-22 style smoke checks
and the randomizers' statistical checks with the default source.
"""

from __future__ import annotations

import os
import sys
import threading
import weakref
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from deniable.exceptions import ParameterError, ParameterTypeError, PrivacyError

__all__ = ["REKEY_BYTES", "RESEED_BYTES", "ChaCha20Words"]

#: Output bytes per key (1 MiB): every segment of this many bytes has a key of its own.
REKEY_BYTES: Final = 1 << 20
#: Output bytes between fresh keys from the operating system (1 GiB).
RESEED_BYTES: Final = 1 << 30

_BLOCK: Final = 64
_KEY_BYTES: Final = 32
_NONCE_BYTES: Final = 12
#: RFC 8439's counter has 32 bits; counter 0 makes the next key, so a segment has at most
#: 2**32 - 1 output blocks.
_MAX_REKEY_BYTES: Final = ((1 << 32) - 1) * _BLOCK
#: Words taken from the stream at a time for the scalar paths: one chunk serves 512 one-word
#: calls.
_BUFFER_WORDS: Final = 512
#: The plaintext the cipher encrypts: zeros, so that its output is the keystream itself.
_ZEROS: Final = memoryview(bytes(1 << 18))
_LITTLE: Final = sys.byteorder == "little"

#: Every live generator, so that a forked child re-keys them all (see ``_after_fork``).
_LIVE: weakref.WeakSet[ChaCha20Words] = weakref.WeakSet()
_cipher_factory: Any = None


def _new_cipher(key: bytes, nonce: bytes) -> Any:
    """An encryptor of ChaCha20 (RFC 8439) from block counter 0; cryptography is imported
    on first use (``import deniable`` does not load it)."""
    global _cipher_factory
    if _cipher_factory is None:
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

        def make(key: bytes, nonce: bytes) -> Any:
            # cryptography's 16-byte nonce is RFC 8439's 32-bit counter (little-endian)
            # followed by its 96-bit nonce
            return Cipher(algorithms.ChaCha20(key, bytes(4) + nonce), mode=None).encryptor()

        _cipher_factory = make
    return _cipher_factory(key, nonce)


def _bytes_parameter(name: str, value: Any, length: int) -> bytes:
    if not isinstance(value, bytes | bytearray | memoryview):
        raise ParameterTypeError(f"`{name}` must be {length} bytes, got {type(value).__name__}.")
    data = bytes(value)
    if len(data) != length:
        raise ParameterError(f"`{name}` must be {length} bytes, got {len(data)} bytes.")
    return data


def check_word_buffer(out: Any) -> None:
    """Refuse an ``out`` that words cannot be written into (ParameterTypeError naming it)."""
    if (
        isinstance(out, np.ndarray)
        and out.dtype == np.uint64
        and out.ndim == 1
        and out.flags.c_contiguous
        and out.flags.writeable
    ):
        return
    if isinstance(out, np.ndarray):
        flags = "" if out.flags.writeable else "read-only "
        got = f"a {flags}array of dtype {out.dtype} and shape {out.shape}"
    else:
        got = type(out).__name__
    raise ParameterTypeError(f"`out` must be a writeable, contiguous 1-D uint64 array, got {got}.")


def _size_parameter(name: str, value: Any, allowed: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ParameterTypeError(f"`{name}` must be {allowed}, got {type(value).__name__}.")
    if not (low <= value <= high and value % _BLOCK == 0):
        raise ParameterError(f"`{name}` must be {allowed}, got {value}.")
    return int(value)


class ChaCha20Words:
    """The ChaCha20 keystream (RFC 8439) as uniform 64-bit words, re-keyed every
    ``rekey_bytes`` and reseeded from ``os.urandom`` every ``reseed_bytes``: the source
    behind :class:`SystemRandom`, the default ``rng``.

    Segment ``i`` of ``rekey_bytes`` output bytes comes from its own key ``K_i``: the
    ChaCha20 block at counter 0 gives the next key (its first 32 bytes), the blocks at
    counters 1, 2, ... give the segment's bytes, read as little-endian words, and ``K_i``
    is dropped when the segment is finished (fast key erasure, Bernstein 2017).  The
    first key is 32 bytes of ``os.urandom`` unless ``key`` is given, and the first segment
    after every ``reseed_bytes`` of output (``None``: never) takes a fresh key from
    ``os.urandom``.  ``random_raw`` hands out the next words of the stream, however the
    requests split them; ``python_words`` (the scalar paths) the next words of a chunk of
    512 taken from the stream when the last one is used up.

    It is safe to share between threads (array draws take their words under a lock, the
    scalar paths pop words of their chunk one by one, so two callers never get the same
    word), and a child process made by ``os.fork`` (or
    multiprocessing's ``fork`` start method) re-keys every generator from ``os.urandom``
    before its first word, so it never repeats its parent's words.  It cannot be copied
    or pickled: a copy would hand out the same words as the original.

    ``key`` and ``nonce`` are for tests and for replaying the published ChaCha20 test
    vectors; real use takes the defaults.  Why the words are a CSPRNG: the proof note of
    ``deniable/randomness/_chacha.py``.

    Parameters
    ----------
    key : bytes, optional
        The first key, 32 bytes (default: ``os.urandom(32)``).
    nonce : bytes
        The 96-bit nonce of every segment, 12 bytes (default zeros: each key makes one
        segment only).
    rekey_bytes : int
        Output bytes per key, a multiple of 64 in ``[64, 64 * (2**32 - 1)]``
        (default ``2**20``).
    reseed_bytes : int or None
        Output bytes between keys from ``os.urandom``, a multiple of 64 of at least 64, or
        ``None`` for never (default ``2**30``).

    Examples
    --------
    RFC 8439, appendix A.1, test vector 2: the block of the all-zero key and nonce at
    counter 1 is the first segment's first 8 words.

    >>> words = ChaCha20Words(bytes(32), reseed_bytes=None).random_raw(8)
    >>> words[:2].tobytes().hex()
    '9f07e7be5551387a98ba977c732d080d'
    """

    __slots__ = (
        "__weakref__",
        "_cipher",
        "_key",
        "_left",
        "_lock",
        "_nonce",
        "_pid",
        "_rekey_bytes",
        "_reseed_bytes",
        "_since_reseed",
        "_small",
    )

    def __init__(
        self,
        key: bytes | None = None,
        *,
        nonce: bytes = bytes(_NONCE_BYTES),
        rekey_bytes: int = REKEY_BYTES,
        reseed_bytes: int | None = RESEED_BYTES,
    ) -> None:
        first = os.urandom(_KEY_BYTES) if key is None else _bytes_parameter("key", key, 32)
        self._nonce = _bytes_parameter("nonce", nonce, _NONCE_BYTES)
        self._rekey_bytes = _size_parameter(
            "rekey_bytes", rekey_bytes, "a multiple of 64 in [64, 64 * (2**32 - 1)]",
            _BLOCK, _MAX_REKEY_BYTES,
        )  # fmt: skip
        self._reseed_bytes = (
            None
            if reseed_bytes is None
            else _size_parameter(
                "reseed_bytes",
                reseed_bytes,
                "None or a multiple of 64 of at least 64",
                _BLOCK,
                sys.maxsize,
            )
        )
        _new_cipher(bytes(_KEY_BYTES), self._nonce)  # imports cryptography now, not mid-draw
        self._lock = threading.Lock()
        self._key = bytearray(first)
        self._start()
        _LIVE.add(self)

    def _start(self, key: bytes | None = None) -> None:
        """No segment under way and an empty buffer; ``key`` (if given) is the next key."""
        if key is not None:
            self._key[:] = key
        self._cipher: Any = None
        self._left = 0  # output bytes of the current segment not yet produced
        self._since_reseed = 0
        # the next words of the stream for small requests, as Python ints, the next one
        # last: list.pop() hands each out atomically, so the scalar paths take no lock
        self._small: list[int] = []
        self._pid = os.getpid()

    def _next_segment(self) -> None:
        reseed = self._reseed_bytes
        if reseed is not None and self._since_reseed >= reseed:
            self._key[:] = os.urandom(_KEY_BYTES)
            self._since_reseed = 0
        cipher = _new_cipher(bytes(self._key), self._nonce)
        block = bytearray(_BLOCK)
        cipher.update_into(_ZEROS[:_BLOCK], block)  # counter 0: the next key
        self._key[:] = block[:_KEY_BYTES]
        block[:] = bytes(_BLOCK)
        self._cipher = cipher  # the previous segment's cipher (and key) is dropped here
        self._left = self._rekey_bytes
        self._since_reseed += self._rekey_bytes

    def _fill(self, out: npt.NDArray[np.uint64]) -> None:
        """Write the next ``out.size`` words of the stream into ``out``."""
        view = out.data.cast("B")
        done, size = 0, len(view)
        while done < size:
            if self._left == 0:
                self._next_segment()
            m = min(size - done, self._left, len(_ZEROS))
            self._cipher.update_into(_ZEROS[:m], view[done : done + m])
            done += m
            self._left -= m
        if not _LITTLE:
            out.byteswap(inplace=True)

    def _check_fork(self) -> None:
        # os.register_at_fork re-keys every generator in a child forked by os.fork; this
        # catches a fork that bypassed it (a C library calling fork(2) directly)
        if os.getpid() != self._pid:
            self._start(os.urandom(_KEY_BYTES))

    def random_raw(self, size: int) -> npt.NDArray[np.uint64]:
        """Return the next ``size`` uniform 64-bit words of the stream (a new array)."""
        if isinstance(size, bool) or not isinstance(size, int | np.integer) or size < 0:
            raise ParameterError(f"`size` must be an integer >= 0, got {size!r}.")
        out = np.empty(int(size), dtype=np.uint64)
        with self._lock:
            self._check_fork()
            self._fill(out)
        return out

    def fill(self, out: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
        """Write the next ``out.size`` words of the stream into ``out`` (a writeable,
        C-contiguous 1-D ``uint64`` array) and return it: the words ``random_raw(out.size)``
        would return, without a new array (the randomizers reuse one buffer a block)."""
        check_word_buffer(out)
        with self._lock:
            self._check_fork()
            self._fill(out)
        return out

    def python_words(self, size: int) -> list[int]:
        """``size`` words as Python ints (the scalar paths of the randomizers).

        They come from a chunk of 512 consecutive words of the stream made ahead for
        small requests, one ``list.pop`` each: no lock (a pop is atomic, so no word goes
        to two callers) and no process-id check (a system call): ``os.register_at_fork``
        empties the chunk in a forked child, and the check runs whenever words are made.
        A chunk is made, under the lock, when the last one is used up."""
        small = self._small
        if size == 1:  # the commonest call: one report of a binary design
            try:
                return [small.pop()]
            except IndexError:
                pass
        words: list[int] = []
        while len(words) < size:
            try:
                words.append(self._small.pop())
            except IndexError:
                with self._lock:
                    self._check_fork()
                    if not self._small:  # not made by another thread meanwhile
                        made = np.empty(_BUFFER_WORDS, dtype=np.uint64)
                        self._fill(made)
                        chunk: list[int] = made.tolist()
                        chunk.reverse()  # the next word last
                        made.fill(0)
                        self._small = chunk
        return words

    @property
    def rekey_bytes(self) -> int:
        """Output bytes per key."""
        return self._rekey_bytes

    @property
    def reseed_bytes(self) -> int | None:
        """Output bytes between keys from ``os.urandom`` (``None``: never)."""
        return self._reseed_bytes

    def __reduce__(self) -> Any:
        raise PrivacyError(
            "A ChaCha20Words cannot be copied or pickled: the copy would hand out the same "
            "words as the original (each process makes its own: SystemRandom())."
        )

    def __repr__(self) -> str:  # never the key
        return f"ChaCha20Words(rekey_bytes={self._rekey_bytes}, reseed_bytes={self._reseed_bytes})"


def _after_fork() -> None:
    """In a forked child: a new lock (the parent's may have been held by a thread that
    does not exist here) and a fresh key from the OS for every generator."""
    for stream in list(_LIVE):
        stream._lock = threading.Lock()
        stream._start(os.urandom(_KEY_BYTES))


os.register_at_fork(after_in_child=_after_fork)
