"""The part of a memo store that a memoizing randomizer reads and writes: the
:class:`MemoAccess` protocol (``get_or_create`` and ``lookup``).

:class:`~deniable.mechanisms.MemoStore` extends it (with ``forget`` and ``snapshot``);
``oracles`` (RAPPOR's client, the longitudinal oracles, the memoized counters) needs only
this part and, a sibling of ``mechanisms``, finds it here, keyed like the ledgers by
canonical respondent keys (:func:`~deniable.accounting.respondent_keys`).  The promises
(one atomic get-or-create per (key, question); a report given back only to the mechanism
that drew it) are stated in :class:`~deniable.mechanisms.MemoStore`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from deniable.accounting._keys import Keys

__all__ = ["MemoAccess"]


@runtime_checkable
class MemoAccess(Protocol):
    """What a memoizing randomizer asks of its store: ``get_or_create(question, keys,
    create, *, mechanism)`` and ``lookup(question, keys, *, mechanism)``, as
    :class:`~deniable.mechanisms.MemoStore` states them (matched by structure)."""

    def get_or_create(
        self,
        question: str,
        keys: Keys,
        create: Callable[[npt.NDArray[np.bool_]], npt.ArrayLike],
        *,
        mechanism: str,
    ) -> npt.NDArray[np.int64]: ...

    def lookup(self, question: str, keys: Keys, *, mechanism: str) -> npt.NDArray[np.int64]: ...
