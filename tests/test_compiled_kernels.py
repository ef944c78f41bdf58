"""The compiled kernels of randomize_and_tally (deniable/designs/_compiled.py, numba, the
``fast`` extra) against the numpy path and against the closed form of the reports.

Both paths must consume the same words in the same order and give the same reports and
tallies bit for bit; ``DENIABLE_KERNEL`` chooses the path and refuses other values.  These
tests run with numba installed (CI installs the extra): nothing here is skipped.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import numpy as np
import pytest

import deniable
from deniable.designs import _compiled
from deniable.exceptions import ParameterError
from deniable.randomness import CHUNK, ArrayWords, ChaCha20Words

#: Sizes: empty, one, shorter than a block, a block and one, several blocks and a tail
#: (neither a multiple of CHUNK nor of the binary block, GROUP * CHUNK).
SIZES = (0, 1, 7, CHUNK + 1, 4 * CHUNK + 3, 9 * CHUNK + 12_345)


def _designs() -> list[tuple[str, Any, int]]:
    return [
        ("binary", deniable.Binary(1.0), 2),
        ("warner", deniable.Warner(0.3), 2),  # t1 < t0: the other threshold order
        ("k=2", deniable.Categorical.from_epsilon(1.0, 2), 2),
        ("k=3", deniable.Categorical.from_epsilon(1.0, 3), 3),  # multiply-shift
        ("k=16", deniable.Categorical.from_epsilon(1.0, 16), 16),
        ("k=1024", deniable.Categorical.from_epsilon(1.0, 1024), 1024),
        ("forced", deniable.Categorical(3, 0.5, forced=[0.2, 0.3, 0.5]), 3),  # cumulative
        # cumulative, the truth always kept (keep = 2**53: the keep test's largest word)
        ("forced kept", deniable.Categorical(3, 1.0, forced=[0.2, 0.3, 0.5]), 3),
        # and never kept (p_truthful = 2**-53 rounds toward privacy to keep = 0)
        ("forced never kept", deniable.Categorical(3, 2**-53, forced=[0.2, 0.3, 0.5]), 3),
        ("k=70000", deniable.Categorical.from_epsilon(1.0, 70_000), 70_000),  # uint32 reports
        # the top-bits (k a power of two) and multiply-shift loops at the keep test's ends:
        # keep = 2**53 (the answer always kept), keep = 1 (k = 16: kept for words below
        # 2**11 only) and keep = 0 (k = 3: never kept)
        ("k=16 kept", deniable.Categorical(16, 1.0), 16),
        ("k=16 keep=1", deniable.Categorical(16, 2**-53), 16),
        ("k=3 kept", deniable.Categorical(3, 1.0), 3),
        ("k=3 never kept", deniable.Categorical(3, 2**-53), 3),
    ]


DESIGNS = _designs()


def _answers(n: int, k: int, seed: int) -> np.ndarray:
    # every category appears (n >= k), in a seeded order, as the narrowest dtype
    x = np.arange(n) % k
    np.random.default_rng(seed).shuffle(x)
    return x.astype(np.uint8 if k <= 2 else np.uint16 if k <= 1 << 16 else np.uint32)


@pytest.fixture(autouse=True)
def _every_size_compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    # the kernel for every size here (by default fewer than MIN_REPORTS take numpy's path)
    monkeypatch.setattr(_compiled, "MIN_REPORTS", 0)


def _run(monkeypatch: pytest.MonkeyPatch, kernel: str, design: Any, x: np.ndarray, seed: int):
    monkeypatch.setenv("DENIABLE_KERNEL", kernel)
    gen = np.random.Generator(np.random.PCG64(seed))
    reports, tally = design.randomize_and_tally(x, rng=gen)
    plain = design.randomize(x, rng=np.random.Generator(np.random.PCG64(seed)))
    return reports, tally.counts, gen.bit_generator.state, plain


@pytest.mark.parametrize(("name", "design", "k"), DESIGNS, ids=[d[0] for d in DESIGNS])
@pytest.mark.parametrize("n", SIZES)
def test_numba_path_equals_numpy_path(
    monkeypatch: pytest.MonkeyPatch, name: str, design: Any, k: int, n: int
) -> None:
    if k > 1 << 16 and n > CHUNK + 1:
        n = CHUNK + 1  # a large k's counts: the sizes that matter are the short ones
    x = _answers(n, k, seed=n)
    a = _run(monkeypatch, "numpy", design, x, seed=11 + n)
    b = _run(monkeypatch, "numba", design, x, seed=11 + n)
    assert a[0].dtype == b[0].dtype and a[0].shape == (n,)
    np.testing.assert_array_equal(b[0], a[0])  # the same reports
    np.testing.assert_array_equal(b[1], a[1])  # the same tally
    assert b[2] == a[2]  # the same words consumed: the generator states agree after
    np.testing.assert_array_equal(b[3], a[3])  # randomize alone, too
    np.testing.assert_array_equal(a[3], a[0])
    # the tally counts the reports (a closed form: bincount of what came out)
    np.testing.assert_array_equal(b[1], np.bincount(b[0], minlength=k))


@pytest.mark.parametrize("kernel", ["numpy", "numba"])
def test_binary_reports_match_the_closed_form(monkeypatch: pytest.MonkeyPatch, kernel: str) -> None:
    # report i = (w_i >> 11) < t[x_i], computed here in Python integers from the words
    monkeypatch.setenv("DENIABLE_KERNEL", kernel)
    for design in (deniable.Binary(1.0), deniable.Warner(0.3)):
        t0, t1 = design._thresholds
        n = 5_003
        words = np.random.default_rng(3).integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True)
        # words at the thresholds: just below and at each one (the comparison is strict)
        edge = [(t << 11) - 1 for t in (t0, t1)] + [t << 11 for t in (t0, t1)]
        words[: len(edge)] = edge
        x = np.random.default_rng(4).integers(0, 2, n).astype(np.uint8)
        reports, tally = design.randomize_and_tally(x, rng=ArrayWords(words))
        want = [int(int(w) >> 11 < (t1 if xi else t0)) for w, xi in zip(words, x, strict=True)]
        assert reports.tolist() == want
        assert tally.counts.tolist() == [n - sum(want), sum(want)]


@pytest.mark.parametrize("kernel", ["numpy", "numba"])
def test_kary_reports_match_the_closed_form(monkeypatch: pytest.MonkeyPatch, kernel: str) -> None:
    # a block of m reports takes m keep words then m category words; report i keeps x_i iff
    # (keep word >> 11) < keep, else takes the forced category of its category word
    monkeypatch.setenv("DENIABLE_KERNEL", kernel)
    for design in (
        deniable.Categorical.from_epsilon(1.0, 3),
        deniable.Categorical.from_epsilon(0.5, 16),
        deniable.Categorical(3, 0.5, forced=[0.2, 0.3, 0.5]),
    ):
        plan, k = design._plan, design.k
        n = 1_001  # one short block
        words = np.random.default_rng(5).integers(
            0, 2**64 - 1, 2 * n, dtype=np.uint64, endpoint=True
        )
        x = np.random.default_rng(6).integers(0, k, n)
        reports, tally = design.randomize_and_tally(x, rng=ArrayWords(words))
        want = [
            int(xi) if int(words[i]) >> 11 < plan.keep else plan.category(int(words[n + i]))
            for i, xi in enumerate(x)
        ]
        assert reports.tolist() == want
        assert tally.counts.tolist() == [want.count(j) for j in range(k)]


def test_default_keystream_same_words_both_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    # the default source (ChaCha20, an injected key): the same reports and the next word
    design = deniable.Categorical.from_epsilon(1.0, 16)
    x = _answers(3 * CHUNK + 5, 16, seed=1)
    out = {}
    for kernel in ("numpy", "numba"):
        monkeypatch.setenv("DENIABLE_KERNEL", kernel)
        stream = ChaCha20Words(bytes(range(32)))
        reports, tally = design.randomize_and_tally(x, rng=stream)
        out[kernel] = (reports, tally.counts, stream.random_raw(1)[0])
    np.testing.assert_array_equal(out["numba"][0], out["numpy"][0])
    np.testing.assert_array_equal(out["numba"][1], out["numpy"][1])
    assert out["numba"][2] == out["numpy"][2]


@pytest.mark.parametrize("bad", ["", "c", "numba2", "NUMPY ", "fast"])
def test_bad_kernel_value_is_refused(monkeypatch: pytest.MonkeyPatch, bad: str) -> None:
    monkeypatch.setenv("DENIABLE_KERNEL", bad)
    if bad.strip().lower() in _compiled.KERNELS:  # case and spaces are forgiven
        assert _compiled.kernel_backend() in ("numpy", "numba")
        return
    with pytest.raises(
        ParameterError, match=r"`DENIABLE_KERNEL` must be one of 'auto', 'numba', 'numpy', got"
    ):
        deniable.Binary(1.0).randomize_and_tally(np.zeros(3, dtype=np.uint8), rng=1)


def test_auto_picks_numba_when_importable_else_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DENIABLE_KERNEL", "auto")
    assert _compiled.kernel_backend() == "numba"  # numba is installed where the tests run
    monkeypatch.delenv("DENIABLE_KERNEL")
    assert _compiled.kernel_backend() == "numba"  # auto is the default
    monkeypatch.setattr(_compiled, "_compiled", lambda: None)  # as without numba
    assert _compiled.kernel_backend() == "numpy"
    monkeypatch.setenv("DENIABLE_KERNEL", "numba")
    with pytest.raises(ParameterError, match=r"needs numba"):
        _compiled.kernel_backend()
    monkeypatch.setenv("DENIABLE_KERNEL", "numpy")
    assert _compiled.kernel_backend() == "numpy"


def test_small_inputs_take_the_numpy_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_compiled, "MIN_REPORTS", 4096)
    monkeypatch.setenv("DENIABLE_KERNEL", "numba")
    assert not _compiled.use_kernel(4095)
    assert _compiled.use_kernel(4096)
    monkeypatch.setenv("DENIABLE_KERNEL", "numpy")
    assert not _compiled.use_kernel(10**6)
    monkeypatch.setenv("DENIABLE_KERNEL", "bogus")  # refused whatever the size
    with pytest.raises(ParameterError, match="DENIABLE_KERNEL"):
        _compiled.use_kernel(1)
    # a small call imports no numba (a fresh process: this one has it loaded)
    code = (
        "import sys, numpy as np, deniable\n"
        "deniable.Binary(1.0).randomize_and_tally(np.zeros(100, dtype=np.uint8), rng=1)\n"
        "deniable.Categorical.from_epsilon(1.0, 16).randomize(np.arange(100) % 16, rng=1)\n"
        "assert 'numba' not in sys.modules\n"
    )
    env = {"DENIABLE_KERNEL": "auto", "PYTHONPATH": ":".join(sys.path)}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=300)


def test_forced_numpy_path_imports_no_numba() -> None:
    # DENIABLE_KERNEL=numpy: the numpy path, and numba is never imported
    code = (
        "import sys, numpy as np, deniable\n"
        "d = deniable.Categorical.from_epsilon(1.0, 16)\n"
        "r, t = d.randomize_and_tally(np.arange(100_000) % 16, rng=1)\n"
        "assert int(t.counts.sum()) == 100_000\n"
        "assert 'numba' not in sys.modules\n"
    )
    env = {"DENIABLE_KERNEL": "numpy", "PYTHONPATH": ":".join(sys.path)}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=300)


def test_no_writable_cache_compiles_without_one(monkeypatch: pytest.MonkeyPatch) -> None:
    # numba refuses cache=True when no cache directory is writable (RuntimeError at
    # decoration): the loops are compiled for the process instead, with the same reports
    import numba

    real = numba.njit

    def refusing(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("cache"):
            raise RuntimeError("cannot cache function: no locator available")
        return real(*args, **kwargs)

    design = deniable.Categorical.from_epsilon(1.0, 16)
    x = _answers(CHUNK + 9, 16, seed=2)
    want = _run(monkeypatch, "numpy", design, x, seed=3)
    try:
        with monkeypatch.context() as m:
            m.setattr(numba, "njit", refusing)
            _compiled._compiled.cache_clear()
            assert _compiled._compiled() is not None
            got = _run(m, "numba", design, x, seed=3)
    finally:
        _compiled._compiled.cache_clear()  # the next call compiles (or loads) as usual
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


@pytest.mark.parametrize("k", [2, 3, 15, 16, 17, 1024])
@pytest.mark.parametrize("n", [0, 1, 2, 7, 8, 9, 4099])
def test_kernel_cells_count_every_report(k: int, n: int) -> None:
    # kary_cells / kary_counts: two uint16 reports a cell for k <= PAIRED_VALUES (an odd
    # last report on its own), one a cell above; every value, the largest included, counted
    # once per report, whatever the block boundaries
    design = deniable.Categorical.from_epsilon(1.0, k)
    words = np.random.default_rng(n).integers(0, 2**64 - 1, 2 * n, dtype=np.uint64, endpoint=True)
    x = (np.arange(n) % k).astype(np.uint16)[::-1].copy()  # k - 1 first
    out = np.empty(n, dtype=np.uint16)
    cells = _compiled.kary_cells(k)
    width = 256 + 16 if k <= _compiled.PAIRED_VALUES else k
    assert cells.shape == (_compiled.LANES, width) and not cells.any()
    arguments = _compiled.kary_arguments(design._plan)
    block = 3 if n > 3 else max(n, 1)  # odd blocks: an odd report at the end of each
    for start in range(0, n, block):
        stop = min(start + block, n)
        w = words[2 * start : 2 * stop]
        _compiled.kary_kernel(w, x[start:stop], out[start:stop], cells, arguments, stop - start, k)
    counts = _compiled.kary_counts(cells, k)
    assert counts.dtype == np.int64 and counts.shape == (k,)
    np.testing.assert_array_equal(counts, np.bincount(out, minlength=k))
