"""The memoized dBitFlipPM of a fleet of devices (Ding, Kulkarni & Yekhanin 2017, sec. 4;
the privacy statement is in :mod:`deniable.oracles._dbitflip`): sampled buckets drawn once
per device, bits once per bucket value, and the realized longitudinal epsilon per device.

A device's state lives in a memo store (``deniable.oracles._dbitflip_state``): its ``d``
sampled buckets under the questions ``<name>/buckets/<chunk>`` (three 16-bit bucket ids a
report), and the ``d`` bits it drew for bucket value ``j`` under ``<name>/bits/<j>/<chunk>``
(62 bits a report), every report carrying ``DBitFlipPM.key`` (``epsilon``, ``k``,
``b``, ``d``).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.exceptions import DataError
from deniable.oracles._dbitflip import DBitFlipPM, DBitFlipReports, repeats
from deniable.oracles._dbitflip_state import (
    _FleetMemo,
    device_keys,
    memoized_rows,
    pack,
    seen,
    unpack,
)
from deniable.randomness import resolve_rng

__all__ = ["DBitFlipMemo"]

#: Bucket ids (below 2**16) kept in one memo report, and their width in bits.
_IDS, _ID_BITS = 3, 16
#: Bits kept in one memo report (a non-negative int64).
_BITS = 62


class DBitFlipMemo(_FleetMemo[DBitFlipPM]):
    """The memoized dBitFlipPM of a fleet of devices (module docstring): each device's
    sampled buckets are drawn once, and its bits once per bucket value it has been in.

    ``store`` is where the devices' state lives: a :class:`~deniable.mechanisms.MemoStore`
    (``deniable.mechanisms.InMemoryMemoStore()``, or the service's
    ``deniable.service.storage.SqlMemoStore(url)``, where it survives a restart), by default
    a store of this object's own in memory.  ``name`` prefixes its questions, so that one
    store can hold several attributes of a device.  A device's state is only ever given back
    to the mechanism that drew it: another ``epsilon``, ``k``, ``b`` or ``d`` over the same
    store and name is refused (:class:`~deniable.exceptions.PrivacyError`) for a device that
    holds state, never given fresh buckets or bits.

    >>> memo = DBitFlipMemo(DBitFlipPM(1.0, k=16, b=4, d=2))
    >>> day1 = memo.report(["a", "b"], [0, 9], rng=1)
    >>> day2 = memo.report(["a", "b"], [1, 9], rng=2)     # same buckets: replayed
    >>> bool((day1.bits == day2.bits).all()), memo.distinct_buckets("a")
    (True, 1)
    >>> _ = memo.report(["a"], [15], rng=3)                # a new bucket: fresh bits
    >>> memo.distinct_buckets("a"), memo.realized_epsilon("a"), memo.realized_epsilon("b")
    (2, 2.0, 1.0)
    >>> memo.realized_epsilons(["a", "b", "c"]).tolist()
    [2.0, 1.0, 0.0]
    """

    __slots__ = ()
    _kind = DBitFlipPM

    def __init__(self, mechanism: DBitFlipPM, store: Any = None, *, name: str = "dbitflip") -> None:
        super().__init__(mechanism, store, name)

    def _bucket_questions(self, _: int = 0) -> list[str]:
        return [f"{self._name}/buckets/{c}" for c in range(-(-self._mechanism.d // _IDS))]

    def _bit_questions(self, bucket: int) -> list[str]:
        return [f"{self._name}/bits/{bucket}/{c}" for c in range(-(-self._mechanism.d // _BITS))]

    def report(
        self, devices: Sequence[Hashable], values: npt.ArrayLike, *, rng: Any = None
    ) -> DBitFlipReports:
        """One day's reports of ``devices`` (distinct keys) whose values are ``values``."""
        mech = self._mechanism
        own = mech.bucket_of(values)
        keys = device_keys(devices, own.size)
        gen = resolve_rng(rng)
        if not keys.size:
            return DBitFlipReports(
                np.empty((0, mech.d), dtype=np.int64), np.empty((0, mech.d), dtype=np.uint8)
            )

        def draw_buckets(rows: npt.NDArray[np.intp], prefix: npt.NDArray[np.int64]) -> Any:
            if prefix.shape[1] == 0:  # a device's first day
                return pack(mech.sample_buckets(rows.size, rng=gen), _ID_BITS, _IDS)
            head = unpack(prefix, _ID_BITS, _IDS, prefix.shape[1] * _IDS)
            return pack(mech._extend_buckets(head, rng=gen), _ID_BITS, _IDS)

        stored = memoized_rows(
            self._store,
            self._bucket_questions,
            keys,
            np.zeros(keys.size, dtype=np.int64),
            draw_buckets,
            mechanism=mech.key,
        )
        buckets = unpack(stored, _ID_BITS, _IDS, mech.d)
        if buckets.max() >= mech.buckets or repeats(buckets):
            raise DataError(  # only a store written by something else can hold this
                f"the store holds sampled buckets that are not {mech.d} distinct ids in "
                f"0..{mech.buckets - 1} under {self._name!r}: refused."
            )

        def draw_bits(rows: npt.NDArray[np.intp], _: npt.NDArray[np.int64]) -> Any:
            # the bits of a row are independent given the buckets: chunks of two draws
            # still make one exact draw
            return pack(mech._draw_bits(own[rows], buckets[rows], gen).astype(np.int64), 1, _BITS)

        bits = memoized_rows(
            self._store, self._bit_questions, keys, own, draw_bits, mechanism=mech.key
        )
        return DBitFlipReports(buckets, unpack(bits, 1, _BITS, mech.d).astype(np.uint8))

    def distinct_counts(self, devices: Any) -> npt.NDArray[np.int64]:
        """The number of distinct buckets each device has reported (0 if never seen): one
        lookup per bucket over every device."""
        keys = device_keys(devices)
        questions = [self._bit_questions(j)[0] for j in range(self._mechanism.buckets)]
        return seen(self._store, questions, keys, mechanism=self._mechanism.key)

    def realized_epsilons(self, devices: Any) -> npt.NDArray[np.float64]:
        """The privacy loss of each device so far: ``distinct * report_epsilon``."""
        return np.asarray(
            self.distinct_counts(devices) * self._mechanism.report_epsilon, dtype=np.float64
        )

    def distinct_buckets(self, device: Hashable) -> int:
        """The number of distinct buckets ``device`` has reported (0 if never seen)."""
        return int(self.distinct_counts([device])[0])

    def realized_epsilon(self, device: Hashable) -> float:
        """The privacy loss of ``device`` so far: ``distinct * report_epsilon``."""
        return self._mechanism.longitudinal_epsilon(self.distinct_buckets(device))
