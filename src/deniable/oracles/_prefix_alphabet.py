"""The alphabet of PEM's and TreeHist's strings: the bytes a string may contain, public
configuration that narrows the candidates of every round (``oracles._heavy_hitters``).

A string over the alphabet ``A`` (a set of nonzero bytes) is padded with NUL bytes to
``max_bytes``, so its padded bytes ``b_0 .. b_(L-1)`` satisfy: ``b_0`` in ``A``; ``b_i`` in
``A`` or NUL when ``b_(i-1)`` is not NUL; NUL after a NUL.  A prefix of ``s`` bits is
*valid* when it is the prefix of some such padded string: its whole bytes obey the rule and
the top ``s mod 8`` bits of its last, partial byte are the top bits of a byte the rule
allows there.  A round counts and ranks only the valid extensions of its kept prefixes, so a
step of ``8 t`` bits has at most ``|A| + 1`` choices a byte instead of ``256``: fewer
candidates compete for the ``top_k`` places and, with ``alpha``, the Bonferroni threshold
over ``m_j`` candidates is lower.

**Privacy.**  The alphabet is public, like ``max_bytes``: it is in the key and the spec, it
does not depend on any device's string, and a device's report is computed exactly as
without it (one OLH report of its prefix).  The per-device epsilon is unchanged; only the
server's candidates change.  A device whose string has a byte outside the alphabet is
refused before any randomness is drawn (the error names the string and the byte's
position, not the byte: it is part of the value).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.oracles._strings import WordArray, bytes_of

__all__ = [
    "alphabet_from_hex",
    "alphabet_hex",
    "check_alphabet",
    "check_in_alphabet",
    "valid_prefixes",
]

BoolArray = npt.NDArray[np.bool_]


def check_alphabet(value: Any) -> bytes | None:
    """``value`` as the sorted distinct bytes of an alphabet, or None (every byte): a
    ``str`` gives its UTF-8 bytes, ``bytes`` themselves; empty, NUL (the padding) or another
    type is refused naming ``alphabet``.

    >>> check_alphabet("w0123456789")
    b'0123456789w'
    """
    if value is None:
        return None
    if isinstance(value, str):
        try:
            raw = value.encode("utf-8")
        except UnicodeEncodeError:
            raise ParameterError(f"`alphabet` must be encodable as UTF-8, got {value!r}.") from None
    elif isinstance(value, bytes | bytearray):
        raw = bytes(value)
    else:
        raise ParameterTypeError(
            f"`alphabet` must be a str, bytes or None (every byte), got {type(value).__name__}."
        )
    if not raw:
        raise ParameterError("`alphabet` must hold at least one byte or be None, got none.")
    if 0 in raw:
        raise ParameterError(
            "`alphabet` must not contain the NUL byte (it is the padding), got one."
        )
    return bytes(sorted(set(raw)))


def alphabet_hex(alphabet: bytes) -> str:
    """The alphabet as it stands in a key and a spec: its sorted bytes in lowercase hex."""
    return alphabet.hex()


def alphabet_from_hex(value: Any, where: str) -> bytes:
    """The alphabet of a key's or spec's ``alphabet`` (``where`` naming it): lowercase hex
    of sorted distinct nonzero bytes, as :func:`alphabet_hex` writes it; anything else is
    refused with :class:`~deniable.exceptions.DataError`."""
    try:
        raw = bytes.fromhex(value) if isinstance(value, str) else None
    except ValueError:
        raw = None
    if raw is None or not raw or alphabet_hex(bytes(sorted(set(raw) - {0}))) != value:
        raise DataError(
            f"{where} must be the lowercase hex of sorted distinct nonzero bytes "
            f"(like {alphabet_hex(b'0123456789w')!r}), got {value!r}."
        )
    return raw


def _allowed(alphabet: bytes) -> npt.NDArray[np.bool_]:
    table = np.zeros(256, dtype=np.bool_)
    table[np.frombuffer(alphabet, dtype=np.uint8)] = True
    return table


def valid_prefixes(prefixes: WordArray, bits: int, alphabet: bytes) -> BoolArray:
    """Which of ``prefixes`` (``(m, W)`` words, ``bits`` bits each) are prefixes of a padded
    string over ``alphabet`` (module docstring)."""
    m = prefixes.shape[0]
    whole, part = divmod(bits, 8)
    raw = bytes_of(prefixes, whole + (part > 0))
    in_a = _allowed(alphabet)
    ok = np.ones(m, dtype=np.bool_)
    prev_nul = np.zeros(m, dtype=np.bool_)
    for i in range(whole):
        b = raw[:, i]
        nul = b == 0
        ok &= in_a[b] if i == 0 else np.where(prev_nul, nul, nul | in_a[b])
        prev_nul = nul
    if part:
        top = raw[:, whole] >> np.uint8(8 - part)
        tops = np.zeros(1 << part, dtype=np.bool_)
        tops[np.frombuffer(alphabet, dtype=np.uint8) >> (8 - part)] = True
        nul = top == 0
        if whole == 0:
            ok &= tops[top]
        else:  # a NUL byte after a letter (its top bits 0), a letter only after a letter
            ok &= np.where(prev_nul, nul, nul | tops[top])
    return ok


def check_in_alphabet(x: WordArray, max_bytes: int, alphabet: bytes | None) -> None:
    """Refuse the first string of ``x`` (encoded, ``oracles._strings``) with a byte outside
    ``alphabet``, naming the string and the byte's position, never the byte (a part of the
    value the randomization hides; ``tests/test_errors_never_echo_values.py``)."""
    if alphabet is None:
        return
    raw = bytes_of(x, max_bytes)
    bad = (raw != 0) & ~_allowed(alphabet)[raw]
    if bad.any():
        i, at = (int(t) for t in np.argwhere(bad)[0])
        raise DataError(
            f"`items[{i}]` must hold only bytes of `alphabet` ({alphabet!r}), got one that "
            f"is not at byte {at} (the item is not shown)."
        )
