"""pack/unpack of dBitFlipPM's memo rows (oracles/_dbitflip_state.py): value j of a row at
bits ``width * (j % per)`` of chunk ``j // per``, checked against Python integers."""

from __future__ import annotations

import numpy as np
import pytest

from deniable.oracles._dbitflip_state import pack, unpack


@pytest.mark.parametrize(("width", "per"), [(1, 62), (16, 3)])
@pytest.mark.parametrize("d", [1, 2, 3, 4, 61, 62, 63, 130])
def test_pack_places_each_value_at_its_bits_and_unpack_inverts_it(
    width: int, per: int, d: int
) -> None:
    rng = np.random.default_rng(d)
    for n in (0, 1, 9):
        values = rng.integers(0, 2**width, size=(n, d))
        packed = pack(values, width, per)
        assert packed.dtype == np.int64 and packed.shape == (n, -(-d // per))
        for r in range(n):
            for c in range(packed.shape[1]):
                want = sum(
                    int(values[r, j]) << (width * (j % per)) for j in range(d) if j // per == c
                )
                assert int(packed[r, c]) == want
        back = unpack(packed, width, per, d)
        assert back.shape == (n, d) and back.dtype == np.int64
        assert np.array_equal(back, values)
