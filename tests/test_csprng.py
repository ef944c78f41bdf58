"""The default CSPRNG (``ChaCha20Words`` behind ``SystemRandom`` and ``rng=None``): its words
against the published RFC 8439 vectors and an independent pure-Python ChaCha20, the
re-keying and reseeding schedule, fork safety, threads, and its parameters."""

from __future__ import annotations

import copy
import multiprocessing
import pickle
import struct
import subprocess
import sys
import threading
from typing import Any

import numpy as np
import pytest

from deniable.designs import Binary, Categorical
from deniable.exceptions import ParameterError, ParameterTypeError, PrivacyError
from deniable.randomness import (
    REKEY_BYTES,
    RESEED_BYTES,
    ChaCha20Words,
    SystemRandom,
    default_stream,
    python_words,
    random_words,
    resolve_rng,
)

# --- an independent ChaCha20 (RFC 8439 section 2.3), checked against the RFC's vectors -------

_M = 0xFFFFFFFF


def _rotl(x: int, n: int) -> int:
    return ((x << n) | (x >> (32 - n))) & _M


def _quarter(s: list[int], a: int, b: int, c: int, d: int) -> None:
    s[a] = (s[a] + s[b]) & _M
    s[d] = _rotl(s[d] ^ s[a], 16)
    s[c] = (s[c] + s[d]) & _M
    s[b] = _rotl(s[b] ^ s[c], 12)
    s[a] = (s[a] + s[b]) & _M
    s[d] = _rotl(s[d] ^ s[a], 8)
    s[c] = (s[c] + s[d]) & _M
    s[b] = _rotl(s[b] ^ s[c], 7)


def chacha20_block(key: bytes, counter: int, nonce: bytes) -> bytes:
    """The 64-byte ChaCha20 block of RFC 8439, section 2.3, written out plainly."""
    init = [0x61707865, 0x3320646E, 0x79622D32, 0x6B206574]
    init += [*struct.unpack("<8I", key), counter, *struct.unpack("<3I", nonce)]
    w = list(init)
    for _ in range(10):
        for a, b, c, d in ((0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15)):
            _quarter(w, a, b, c, d)
        for a, b, c, d in ((0, 5, 10, 15), (1, 6, 11, 12), (2, 7, 8, 13), (3, 4, 9, 14)):
            _quarter(w, a, b, c, d)
    return struct.pack("<16I", *((x + y) & _M for x, y in zip(w, init, strict=True)))


def words_of(data: bytes) -> list[int]:
    """Bytes read as little-endian 64-bit words (the generator's documented order)."""
    return [int.from_bytes(data[i : i + 8], "little") for i in range(0, len(data) - 7, 8)]


def hexbytes(text: str) -> bytes:
    return bytes.fromhex("".join(text.split()))


ZERO_KEY = bytes(32)
ZERO_NONCE = bytes(12)
SEQ_KEY = bytes(range(32))  # RFC 8439 sections 2.3.2 and 2.4.2
# RFC 8439, appendix A.1: test vectors 1 to 5 (key, nonce, counter, block)
A1 = [
    (ZERO_KEY, ZERO_NONCE, 0,
     "76 b8 e0 ad a0 f1 3d 90 40 5d 6a e5 53 86 bd 28 bd d2 19 b8 a0 8d ed 1a a8 36 ef cc"
     "8b 77 0d c7 da 41 59 7c 51 57 48 8d 77 24 e0 3f b8 d8 4a 37 6a 43 b8 f4 15 18 a1 1c"
     "c3 87 b6 69 b2 ee 65 86"),
    (ZERO_KEY, ZERO_NONCE, 1,
     "9f 07 e7 be 55 51 38 7a 98 ba 97 7c 73 2d 08 0d cb 0f 29 a0 48 e3 65 69 12 c6 53 3e"
     "32 ee 7a ed 29 b7 21 76 9c e6 4e 43 d5 71 33 b0 74 d8 39 d5 31 ed 1f 28 51 0a fb 45"
     "ac e1 0a 1f 4b 79 4d 6f"),
    (bytes(31) + b"\x01", ZERO_NONCE, 1,
     "3a eb 52 24 ec f8 49 92 9b 9d 82 8d b1 ce d4 dd 83 20 25 e8 01 8b 81 60 b8 22 84 f3"
     "c9 49 aa 5a 8e ca 00 bb b4 a7 3b da d1 92 b5 c4 2f 73 f2 fd 4e 27 36 44 c8 b3 61 25"
     "a6 4a dd eb 00 6c 13 a0"),
    (b"\x00\xff" + bytes(30), ZERO_NONCE, 2,
     "72 d5 4d fb f1 2e c4 4b 36 26 92 df 94 13 7f 32 8f ea 8d a7 39 90 26 5e c1 bb be a1"
     "ae 9a f0 ca 13 b2 5a a2 6c b4 a6 48 cb 9b 9d 1b e6 5b 2c 09 24 a6 6c 54 d5 45 ec 1b"
     "73 74 f4 87 2e 99 f0 96"),
    (ZERO_KEY, bytes(11) + b"\x02", 0,
     "c2 c6 4d 37 8c d5 36 37 4a e2 04 b9 ef 93 3f cd 1a 8b 22 88 b3 df a4 96 72 ab 76 5b"
     "54 ee 27 c7 8a 97 0e 0e 95 5c 14 f3 a8 8e 74 1b 97 c2 86 f7 5f 8f c2 99 e8 14 83 62"
     "fa 19 8a 39 53 1b ed 6d"),
]  # fmt: skip
# RFC 8439, section 2.3.2: key 00..1f, this nonce, counter 1
NONCE_232 = hexbytes("00 00 00 09 00 00 00 4a 00 00 00 00")
BLOCK_232 = hexbytes(
    "10 f1 e7 e4 d1 3b 59 15 50 0f dd 1f a3 20 71 c4 c7 d1 f4 c7 33 c0 68 03 04 22 aa 9a "
    "c3 d4 6c 4e d2 82 64 46 07 9f aa 09 14 c2 d7 05 d9 8b 02 a2 b5 12 9c d1 de 16 4e b9 "
    "cb d0 83 e8 a2 50 3c 4e"
)
# RFC 8439, section 2.4.2: the keystream (ciphertext xor plaintext) of 114 bytes from counter
# 1, key 00..1f, this nonce
NONCE_242 = hexbytes("00 00 00 00 00 00 00 4a 00 00 00 00")
KEYSTREAM_242 = hexbytes(
    "22 4f 51 f3 40 1b d9 e1 2f de 27 6f b8 63 1d ed 8c 13 1f 82 3d 2c 06 e2 7e 4f ca ec "
    "9e f3 cf 78 8a 3b 0a a3 72 60 0a 92 b5 79 74 cd ed 2b 93 34 79 4c ba 40 c6 3e 34 cd "
    "ea 21 2c 4c f0 7d 41 b7 69 a6 74 9f 3f 63 0f 41 22 ca fe 28 ec 4d c4 7e 26 d4 34 6d "
    "70 b9 8c 73 f3 e9 c5 3a c4 0c 59 45 39 8b 6e da 1a 83 2c 89 c1 67 ea cd 90 1d 7e 2b "
    "f3 63"
)
# RFC 8439, appendix A.4, test vector 2: the first 32 bytes of the block at counter 0 of key
# 00..01 and nonce 00..02 (the Poly1305 one-time key): the second key of that stream
A4_KEY, A4_NONCE = bytes(31) + b"\x01", bytes(11) + b"\x02"
A4_OTK = hexbytes(
    "ec fa 25 4f 84 5f 64 74 73 d3 cb 14 0d a9 e8 76 06 cb 33 06 6c 44 7b 87 bc 26 66 dd "
    "e3 fb b7 39"
)


def test_the_reference_chacha20_is_rfc_8439() -> None:
    s = [0x11111111, 0x01020304, 0x9B8D6F43, 0x01234567]  # section 2.1.1
    _quarter(s, 0, 1, 2, 3)
    assert s == [0xEA2A92F4, 0xCB1CF8CE, 0x4581472E, 0x5881C4BB]
    for key, nonce, counter, block in A1:
        assert chacha20_block(key, counter, nonce) == hexbytes(block)
    assert chacha20_block(SEQ_KEY, 1, NONCE_232) == BLOCK_232
    stream = chacha20_block(SEQ_KEY, 1, NONCE_242) + chacha20_block(SEQ_KEY, 2, NONCE_242)
    assert stream[:114] == KEYSTREAM_242
    assert chacha20_block(A4_KEY, 0, A4_NONCE)[:32] == A4_OTK


def stream(key: bytes, nonce: bytes = ZERO_NONCE, **kw: Any) -> ChaCha20Words:
    return ChaCha20Words(key, nonce=nonce, reseed_bytes=kw.pop("reseed_bytes", None), **kw)


def draw(source: ChaCha20Words, sizes: list[int], how: str) -> list[int]:
    """Words of ``source`` in requests of ``sizes``, through one of the paths that hand
    words out."""
    out: list[int] = []
    for size in sizes:
        if how == "random_raw":
            out += source.random_raw(size).tolist()
        elif how == "python_words":
            out += source.python_words(size)
        elif how == "random_words":
            out += random_words(resolve_rng(source), size).tolist()
        else:
            out += python_words(source, size)
    return out


# --- known-answer vectors, through every path that hands words out --------------------------

PATHS = ["random_raw", "python_words", "random_words", "python_words"]
SPLITS = [[16], [1] * 16, [3, 5, 1, 7], [2, 14]]


@pytest.mark.parametrize("how", PATHS)
@pytest.mark.parametrize("sizes", SPLITS, ids=str)
def test_words_are_the_rfc_8439_keystream_from_counter_1(how: str, sizes: list[int]) -> None:
    """A key's first output block is its block at counter 1 (counter 0 makes the next key):
    appendix A.1 vectors 2 and 3 (counter 1) and 4 (counter 2: the second block)."""
    _, _, _, tv2 = A1[1]
    assert draw(stream(ZERO_KEY), sizes, how)[:8] == words_of(hexbytes(tv2))
    key3, _, _, tv3 = A1[2]
    assert draw(stream(key3), sizes, how)[:8] == words_of(hexbytes(tv3))
    key4, _, _, tv4 = A1[3]
    assert draw(stream(key4), sizes, how)[8:16] == words_of(hexbytes(tv4))


@pytest.mark.parametrize("how", PATHS)
def test_words_of_sections_2_3_2_and_2_4_2(how: str) -> None:
    """The injected nonce: section 2.3.2's block, section 2.4.2's keystream (its first 112
    of 114 bytes: 14 words)."""
    assert draw(stream(SEQ_KEY, NONCE_232), [8], how) == words_of(BLOCK_232)
    assert draw(stream(SEQ_KEY, NONCE_242), [5, 9], how) == words_of(KEYSTREAM_242[:112])


def test_words_are_little_endian_uint64_arrays() -> None:
    words = stream(ZERO_KEY).random_raw(8)
    assert words.dtype == np.uint64 and words.shape == (8,) and words.flags.writeable
    _, _, _, tv2 = A1[1]
    assert words.astype("<u8").tobytes() == hexbytes(tv2)


# --- the re-keying schedule ------------------------------------------------------------------


def reference_words(key: bytes, nonce: bytes, rekey_bytes: int, n_words: int) -> list[int]:
    """The documented construction, from the independent block function: segment i's key
    makes the next key from its block at counter 0 and its output from counters 1, 2, ..."""
    out: list[int] = []
    while len(out) < n_words:
        blocks = [chacha20_block(key, c, nonce) for c in range(1, rekey_bytes // 64 + 1)]
        out += words_of(b"".join(blocks))
        key = chacha20_block(key, 0, nonce)[:32]
    return out[:n_words]


@pytest.mark.parametrize("rekey_bytes", [64, 192, 4096])
@pytest.mark.parametrize("how", ["random_raw", "python_words"])
def test_rekeying_at_the_segment_boundary(rekey_bytes: int, how: str) -> None:
    """Across several segments (and the 512-word buffer), in uneven requests: the words are
    the construction's, and the second segment's key is RFC 8439's published block at
    counter 0 (appendix A.1 vector 1 and A.4 vector 2)."""
    n = 3 * rekey_bytes // 8 + 700
    sizes = [1, 7, rekey_bytes // 8 - 1, 2, 600, n]
    for key, nonce in ((ZERO_KEY, ZERO_NONCE), (A4_KEY, A4_NONCE), (SEQ_KEY, NONCE_232)):
        got = draw(stream(key, nonce, rekey_bytes=rekey_bytes), sizes, how)[:n]
        assert got == reference_words(key, nonce, rekey_bytes, n)
    # the second key, from the published vectors (not from the reference)
    seg = rekey_bytes // 8
    second = stream(ZERO_KEY, rekey_bytes=rekey_bytes).random_raw(seg + 8)[seg:].tolist()
    assert second == words_of(chacha20_block(hexbytes(A1[0][3])[:32], 1, ZERO_NONCE))
    second = stream(A4_KEY, A4_NONCE, rekey_bytes=rekey_bytes).random_raw(seg + 8)[seg:]
    assert second.tolist() == words_of(chacha20_block(A4_OTK, 1, A4_NONCE))


def test_the_default_schedule_rekeys_every_2_20_bytes() -> None:
    """At the default ``rekey_bytes`` (2**20: 2**17 words), the last word of the first
    segment is the key's block 2**14, and the next word the next key's block 1."""
    assert REKEY_BYTES == 1 << 20 and RESEED_BYTES == 1 << 30
    seg = REKEY_BYTES // 8
    words = stream(ZERO_KEY).random_raw(seg + 8)
    last = chacha20_block(ZERO_KEY, REKEY_BYTES // 64, ZERO_NONCE)
    assert words[seg - 8 : seg].tolist() == words_of(last)
    assert words[seg:].tolist() == words_of(chacha20_block(hexbytes(A1[0][3])[:32], 1, ZERO_NONCE))


def test_reseeding_takes_a_fresh_key_from_the_os(monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``reseed_bytes = 128`` and one 64-byte block a segment: segments 0 and 1 come
    from the key chain, segment 2 from a key read from ``os.urandom``, segment 3 from that
    key's chain, segment 4 from the OS again, and so on: 600 words are 75 segments, so 37
    keys from the OS."""
    calls: list[int] = []

    def urandom(n: int) -> bytes:
        calls.append(n)
        return bytes([len(calls)]) * n

    gen = ChaCha20Words(ZERO_KEY, rekey_bytes=64, reseed_bytes=128)
    monkeypatch.setattr("os.urandom", urandom)
    got = gen.random_raw(600).tolist()
    monkeypatch.undo()
    assert calls == [32] * 37
    want = reference_words(ZERO_KEY, ZERO_NONCE, 64, 16)
    for i in range(1, 38):
        want += reference_words(bytes([i]) * 32, ZERO_NONCE, 64, 16)
    assert got == want[:600]


def test_an_unseeded_generator_is_keyed_from_the_os(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.urandom", lambda n: bytes(range(n)))
    got = ChaCha20Words().random_raw(8).tolist()
    monkeypatch.undo()
    assert got == words_of(chacha20_block(SEQ_KEY, 1, ZERO_NONCE))


# --- fork safety -----------------------------------------------------------------------------


def _child_words(conn: Any, shared: ChaCha20Words) -> None:
    conn.send(
        (
            SystemRandom().random_raw(256).tolist(),
            shared.random_raw(256).tolist(),
            python_words(None, 3) + shared.python_words(3),
        )
    )
    conn.close()


@pytest.mark.filterwarnings("ignore:.*fork.*:DeprecationWarning")  # Python >= 3.12, threads
def test_a_forked_child_never_repeats_its_parents_words() -> None:
    """Both the process's stream and a generator with a fixed key (whose child, without the
    fork hook, would hand out exactly the parent's next words) give the child other words:
    no word in common among 2 x 259 words each (a coincidence has probability ~3e-15)."""
    shared = stream(SEQ_KEY)
    default_stream().random_raw(5)  # both streams under way, the small buffers part-used
    python_words(None, 1)
    shared.python_words(1)
    ctx = multiprocessing.get_context("fork")
    parent_end, child_end = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child_words, args=(child_end, shared))
    child.start()
    got = parent_end.recv()
    child.join(timeout=300)  # a hang catcher, not a speed limit
    assert child.exitcode == 0
    mine = (
        SystemRandom().random_raw(256).tolist(),
        shared.random_raw(256).tolist(),
        python_words(None, 3) + shared.python_words(3),
    )
    for theirs, ours in zip(got, mine, strict=True):
        assert not set(theirs) & set(ours)
    # and the fixed-key stream in the parent went on as if no child existed
    twin = stream(SEQ_KEY)
    twin.python_words(1)  # the parent's draw before the fork
    assert twin.random_raw(256).tolist() == mine[1]


def test_a_changed_process_id_rekeys_before_the_next_batch() -> None:
    """The fallback for a fork that bypassed ``os.register_at_fork``: the process id is
    checked whenever words are made, and a changed one re-keys from the OS."""
    a, b = stream(SEQ_KEY), stream(SEQ_KEY)
    assert a.random_raw(4).tolist() == b.random_raw(4).tolist()
    b._pid = -1  # as after a fork that ran no Python hook
    assert not set(a.random_raw(1024).tolist()) & set(b.random_raw(1024).tolist())


# --- threads ---------------------------------------------------------------------------------


@pytest.mark.parametrize("which", ["default", "keyed"])
def test_threads_drawing_at_once_never_share_a_word(
    which: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """8 threads start together and draw 2**17 words each (big and small requests mixed)
    from one generator: 2**20 words, no repeat (for uniform words a repeat has probability
    about (2**20)**2 / 2**65 = 2**-25, 3e-8).  With a fixed key, the words handed out and
    those left in the scalar paths' chunk are exactly a prefix of the stream: none lost,
    none given twice."""
    gen = stream(SEQ_KEY)
    if which == "default":
        monkeypatch.setattr("deniable.randomness._system._default", gen)
    threads_n, per_thread = 8, 1 << 17
    barrier = threading.Barrier(threads_n)
    results: list[list[int]] = [[] for _ in range(threads_n)]

    def work(i: int) -> None:
        barrier.wait()
        out = results[i]
        while len(out) < per_thread:
            left = per_thread - len(out)
            if len(out) % 3 == 0:
                out += SystemRandom().random_raw(min(4099, left)).tolist()
            elif len(out) % 3 == 1:  # the scalar paths: one, two or five words
                size = min((1, 2, 5)[len(out) % 7 % 3], left)
                out += python_words(None if which == "default" else gen, size)
            else:
                out += gen.random_raw(min(700, left)).tolist()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(threads_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    words = np.array([w for r in results for w in r], dtype=np.uint64)
    assert words.size == threads_n * per_thread
    assert np.unique(words).size == words.size
    if which == "keyed":  # every SystemRandom() call above drew from the real default stream
        return
    seen = np.concatenate([words, np.array(gen._small, dtype=np.uint64)])
    assert np.array_equal(np.sort(seen), np.sort(stream(SEQ_KEY).random_raw(seen.size)))


# --- SystemRandom, the default, parameters ---------------------------------------------------


def test_system_random_draws_from_the_process_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    """``rng=None`` and ``SystemRandom()`` take the process stream's next words: array draws
    in order, the scalar paths from a chunk of 512 taken from it."""
    monkeypatch.setattr("deniable.randomness._system._default", stream(SEQ_KEY))
    want = stream(SEQ_KEY).random_raw(24 + 512 + 16).tolist()
    got = SystemRandom().random_raw(8).tolist() + SystemRandom().random_raw(8).tolist()
    got += Binary(1.0).randomize(np.zeros(0, dtype=np.uint8)).tolist()  # no words
    got += random_words(resolve_rng(None), 8).tolist()
    assert got == want[:24]
    chunk = want[24 : 24 + 512]
    assert python_words(None, 3) + python_words(SystemRandom(), 5) == chunk[:8]
    assert random_words(SystemRandom(), 16).tolist() == want[24 + 512 :]
    # a randomizer with rng=None consumes the next words: one per binary report, two per
    # k-ary report; one answer as a Python int takes the next word of the chunk
    twin = stream(SEQ_KEY)
    twin.random_raw(24)
    twin.python_words(8)
    twin.random_raw(16)
    binary = Binary(1.0)
    x = np.array([0, 1, 1, 0, 1], dtype=np.uint8)
    assert binary.randomize(x).tolist() == binary.randomize(x, rng=twin).tolist()
    k_ary = Categorical.from_epsilon(1.0, 16)
    assert k_ary.randomize(np.arange(16) % 16).tolist() == (
        k_ary.randomize(np.arange(16) % 16, rng=twin).tolist()
    )
    assert binary.randomize(1).tolist() == binary.randomize(1, rng=twin).tolist()


def test_system_random_source_os(monkeypatch: pytest.MonkeyPatch) -> None:
    data = bytes(range(24))
    monkeypatch.setattr("os.urandom", lambda n: data[:n])
    sr = SystemRandom(source="os")
    assert sr.source == "os" and SystemRandom().source == "chacha20"
    assert sr.random_raw(3).tolist() == [
        int.from_bytes(data[i : i + 8], sys.byteorder) for i in (0, 8, 16)
    ]
    assert repr(sr) == "SystemRandom(source='os')" and repr(SystemRandom()) == "SystemRandom()"
    assert sr == SystemRandom("os") and sr != SystemRandom()
    assert hash(sr) == hash(SystemRandom("os"))
    assert Binary(1.0).randomize(np.ones(3, dtype=np.uint8), rng=sr).shape == (3,)


def test_system_random_pickles_as_a_handle() -> None:
    for sr in (SystemRandom(), SystemRandom(source="os")):
        back = pickle.loads(pickle.dumps(sr))
        assert back == sr and back.source == sr.source


@pytest.mark.parametrize("bad", ["urandom", "", "ChaCha20"])
def test_system_random_rejects_unknown_sources(bad: str) -> None:
    allowed = "`source` must be one of 'chacha20', 'os', got"
    with pytest.raises(ParameterError, match=rf"{allowed} {bad!r}"):
        SystemRandom(source=bad)
    with pytest.raises(ParameterTypeError, match=f"{allowed} int"):
        SystemRandom(source=1)  # type: ignore[arg-type]


def test_a_generator_cannot_be_copied_or_pickled() -> None:
    gen = stream(SEQ_KEY)
    for dup in (copy.copy, copy.deepcopy, pickle.dumps):
        with pytest.raises(PrivacyError, match="the copy would hand out the same words"):
            dup(gen)


def test_repr_never_shows_the_key() -> None:
    gen = ChaCha20Words(b"\xab" * 32, rekey_bytes=128, reseed_bytes=None)
    assert repr(gen) == "ChaCha20Words(rekey_bytes=128, reseed_bytes=None)"
    assert "ab" not in repr(gen).lower().replace("rekey", "").replace("bytes", "")
    assert gen.rekey_bytes == 128 and gen.reseed_bytes is None
    assert ChaCha20Words().reseed_bytes == RESEED_BYTES


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"key": bytes(31)}, ParameterError, "`key` must be 32 bytes, got 31 bytes"),
        ({"key": "0" * 32}, ParameterTypeError, "`key` must be 32 bytes, got str"),
        ({"nonce": bytes(16)}, ParameterError, "`nonce` must be 12 bytes, got 16 bytes"),
        ({"rekey_bytes": 100}, ParameterError,
         r"`rekey_bytes` must be a multiple of 64 in \[64, 64 \* \(2\*\*32 - 1\)\], got 100"),
        ({"rekey_bytes": 0}, ParameterError, "`rekey_bytes` must be a multiple of 64"),
        ({"rekey_bytes": 64 << 32}, ParameterError, "`rekey_bytes` must be a multiple of 64"),
        ({"rekey_bytes": 64.0}, ParameterTypeError, "`rekey_bytes` must be .* got float"),
        ({"rekey_bytes": True}, ParameterTypeError, "`rekey_bytes` must be .* got bool"),
        ({"reseed_bytes": 0}, ParameterError,
         "`reseed_bytes` must be None or a multiple of 64 of at least 64, got 0"),
        ({"reseed_bytes": 65}, ParameterError, "`reseed_bytes` must be None or a multiple"),
    ],
)  # fmt: skip
def test_bad_parameters(kwargs: dict[str, Any], error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        ChaCha20Words(**kwargs)


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3"])
def test_bad_sizes(bad: Any) -> None:
    with pytest.raises(ParameterError, match="`size` must be an integer >= 0"):
        stream(SEQ_KEY).random_raw(bad)


def test_zero_words_consume_nothing() -> None:
    gen = stream(SEQ_KEY)
    assert gen.random_raw(0).shape == (0,) and gen.python_words(0) == []
    assert gen.random_raw(8).tolist() == words_of(chacha20_block(SEQ_KEY, 1, ZERO_NONCE))


def test_the_scalar_paths_take_a_chunk_of_the_stream() -> None:
    """The words of the scalar paths are a chunk of 512 consecutive words of the stream; a
    word handed out is no longer held by the generator; array draws go on after the
    chunk, and a new chunk is taken when the last one is used up."""
    gen = stream(SEQ_KEY)
    want = stream(SEQ_KEY).random_raw(3 * 512).tolist()
    words = gen.python_words(5)
    held = gen._small[::-1]  # the next word last
    assert words + held == want[:512]
    assert gen.random_raw(3).tolist() == want[512:515]
    assert gen.python_words(507 + 2) == want[5:512] + want[515:517]
    assert gen._small[::-1] == want[517 : 515 + 512]


def test_cryptography_is_imported_on_first_use() -> None:
    code = (
        "import sys\n"
        "import deniable.randomness, deniable.designs\n"
        "assert 'cryptography' not in sys.modules\n"
        "deniable.designs.Binary(1.0).randomize([1, 0])\n"
        "assert 'cryptography' in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
