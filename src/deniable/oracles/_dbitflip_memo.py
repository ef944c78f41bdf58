"""The memoized dBitFlipPM of a fleet of devices (Ding, Kulkarni & Yekhanin 2017, sec. 4;
the privacy statement is in :mod:`deniable.oracles._dbitflip`): sampled buckets drawn once
per device, bits once per bucket value, and the realized longitudinal epsilon per device."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.exceptions import DataError, ParameterTypeError
from deniable.oracles._dbitflip import DBitFlipPM, DBitFlipReports
from deniable.randomness import resolve_rng

__all__ = ["DBitFlipMemo", "device_keys"]


def device_keys(devices: Any) -> list[Hashable]:
    """``devices`` as a list of hashable keys (integers, strings), or a clear error."""
    if isinstance(devices, str | bytes):
        raise ParameterTypeError("`devices` must be a sequence of device keys, got a string.")
    try:
        keys = list(devices)
        for key in keys:
            hash(key)
    except TypeError:
        raise ParameterTypeError(
            "`devices` must be a sequence of hashable device keys (integers or strings), "
            f"got {type(devices).__name__}."
        ) from None
    return keys


class DBitFlipMemo:
    """The memoized dBitFlipPM of a fleet of devices (module docstring): each device's
    sampled buckets are drawn once, and its bits once per bucket value it has been in.

    >>> memo = DBitFlipMemo(DBitFlipPM(1.0, k=16, b=4, d=2))
    >>> day1 = memo.report(["a", "b"], [0, 9], rng=1)
    >>> day2 = memo.report(["a", "b"], [1, 9], rng=2)     # same buckets: replayed
    >>> bool((day1.bits == day2.bits).all()), memo.distinct_buckets("a")
    (True, 1)
    >>> _ = memo.report(["a"], [15], rng=3)                # a new bucket: fresh bits
    >>> memo.distinct_buckets("a"), memo.realized_epsilon("a"), memo.realized_epsilon("b")
    (2, 2.0, 1.0)
    """

    __slots__ = ("_bits", "_buckets", "_mechanism")

    def __init__(self, mechanism: DBitFlipPM) -> None:
        if not isinstance(mechanism, DBitFlipPM):
            raise ParameterTypeError(
                f"`mechanism` must be a DBitFlipPM, got {type(mechanism).__name__}."
            )
        self._mechanism = mechanism
        self._buckets: dict[Hashable, npt.NDArray[np.int64]] = {}
        self._bits: dict[Hashable, dict[int, npt.NDArray[np.uint8]]] = {}

    @property
    def mechanism(self) -> DBitFlipPM:
        """The mechanism whose reports are memoized."""
        return self._mechanism

    def report(
        self, devices: Sequence[Hashable], values: npt.ArrayLike, *, rng: Any = None
    ) -> DBitFlipReports:
        """One day's reports of ``devices`` (distinct keys) whose values are ``values``."""
        mech = self._mechanism
        own = mech.bucket_of(values)
        keys = device_keys(devices)
        if len(keys) != own.size or len(set(keys)) != len(keys):
            raise DataError(
                f"`devices` must hold {own.size} distinct device keys, one per value, got "
                f"{len(keys)} keys ({len(set(keys))} distinct)."
            )
        gen = resolve_rng(rng)
        new = [key for key in keys if key not in self._buckets]
        if new:
            for key, row in zip(new, mech.sample_buckets(len(new), rng=gen), strict=True):
                self._buckets[key] = row
                self._bits[key] = {}
        fresh = [i for i, key in enumerate(keys) if int(own[i]) not in self._bits[key]]
        if fresh:
            sampled = np.stack([self._buckets[keys[i]] for i in fresh])
            drawn = mech._draw_bits(own[fresh], sampled, gen)
            for i, row in zip(fresh, drawn, strict=True):
                self._bits[keys[i]][int(own[i])] = row
        if not keys:
            return DBitFlipReports(
                np.empty((0, mech.d), dtype=np.int64), np.empty((0, mech.d), dtype=np.uint8)
            )
        buckets = np.stack([self._buckets[key] for key in keys])
        bits = np.stack([self._bits[key][int(j)] for key, j in zip(keys, own, strict=True)])
        return DBitFlipReports(buckets, bits)

    def distinct_buckets(self, device: Hashable) -> int:
        """The number of distinct buckets ``device`` has reported (0 if never seen)."""
        return len(self._bits.get(device, {}))

    def realized_epsilon(self, device: Hashable) -> float:
        """The privacy loss of ``device`` so far: ``distinct * report_epsilon``."""
        return self._mechanism.longitudinal_epsilon(self.distinct_buckets(device))
