"""The RAPPOR client (Erlingsson, Pihur & Korolova 2014): each device's cohort and permanent
randomized responses (PRRs) memoized in a :class:`~deniable.mechanisms.MemoStore`, a fresh
instantaneous response (IRR) on every report.

**Memo identity.**  A device's permanent state belongs to the device and the value, and is
defined by what defines it: the cohort by the client, stored with the number of cohorts
(:attr:`Rappor.cohort_key <deniable.oracles.Rappor.cohort_key>`), the PRR by the (client,
value), stored with ``m``, ``h``, ``cohorts``, ``f`` and the hash family
(:attr:`Rappor.permanent_key <deniable.oracles.Rappor.permanent_key>`).  So a client whose
IRR changes (``p``, ``q``) keeps its PRRs and cohort, and any other change is refused for a
client that holds them: the result of a configuration change is the same permanent
response or a refusal, never a second one.  (Before, every question was keyed by the whole
mechanism; ``deniable.mechanisms._memo_legacy`` reads that layout.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.accounting import MemoAccess, respondent_keys
from deniable.exceptions import DataError, ParameterTypeError, PrivacyError
from deniable.oracles._rappor import Rappor, RapporReports
from deniable.oracles._rappor_decode import _strings
from deniable.randomness import random_words, resolve_rng

__all__ = ["RapporClient"]

# Proof note (the longitudinal epsilon of memoization, docs/architecture.md#proof-notes).
# Claim: a device reporting value v in any number of rounds loses at most the PRR's
# epsilon (2 h ln((1 - f/2) / (f/2)), Erlingsson, Pihur & Korolova 2014, sec. 3.1,
# Thm. 1); k rounds lose at most min(that, k eps_1), eps_1 the one-round epsilon of
# PRR then IRR.  Argument: as for MemoizedRandomizer (post-processing of the one PRR,
# basic composition of the rounds): every IRR is drawn from the PRR and fresh coins.
# The PRR is drawn once per (device, value) because the memo is keyed by the client and
# the value and stored with Rappor.permanent_key, and a client holding a PRR (or cohort)
# of another permanent stage is refused (issue 14), not given a second one.  Checked by:
# tests/test_rappor.py::test_memoized_within_a_batch_and_across_batches,
# ::test_a_new_irr_keeps_every_clients_prr_and_cohort,
# ::test_a_new_permanent_stage_is_refused_for_a_client_that_holds_one,
# ::test_prr_survives_a_restart_with_a_persistent_store.
_32 = np.uint64(32)
#: Bits of the PRR kept in one memo-store report (a non-negative int64): 7 bytes.
_CHUNK_BYTES = 7


class RapporClient:
    """The RAPPOR client of many devices: cohorts and PRRs memoized in a
    :class:`~deniable.mechanisms.MemoStore` (``store``, required: where a device keeps its
    permanent state is its choice), a fresh IRR on every report.

    Each client's cohort is kept under the question ``"rappor/cohort"`` with the mechanism
    :attr:`Rappor.cohort_key` (the number of cohorts), and the PRR of a (client, value) in
    ``ceil(m / 56)`` reports of 56 bits under ``"rappor/prr/<value>/<chunk>"`` with the
    mechanism :attr:`Rappor.permanent_key` (``m``, ``h``, ``cohorts``, ``f``, the hash
    family).  So a client object over the same store (a device restarted, with a store that
    persists, e.g. ``deniable.service.stores.SqlMemoStore``) replays the same permanent bits
    and cohort, also after a change of ``p`` or ``q``; after a change of the PRR's parameters
    (or of the number of cohorts) a client holding a PRR (a cohort) is refused with
    :class:`~deniable.exceptions.PrivacyError`, never given a second one.  Every chunk is one
    atomic get-or-create; the PRR's bits are independent given the Bloom filter, so chunks
    stored by different calls still make one exact PRR draw.

    >>> from deniable.mechanisms import InMemoryMemoStore
    >>> rappor = Rappor(m=16, h=2, cohorts=4, f=0.5, p=0.25, q=0.75)
    >>> client = RapporClient(rappor, InMemoryMemoStore())
    >>> a = client.report([1, 2], ["x", "y"], rng=1)
    >>> a.bits.shape, bool((client.permanent([1, 2], ["x", "y"]) ==
    ...                     client.permanent([1, 2], ["x", "y"])).all())
    ((2, 2), True)
    """

    __slots__ = ("_rappor", "_store")

    def __init__(self, rappor: Rappor, store: Any) -> None:
        if not isinstance(rappor, Rappor):
            raise ParameterTypeError(f"`rappor` must be a Rappor, got {type(rappor).__name__}.")
        if not isinstance(store, MemoAccess):
            raise ParameterTypeError(
                "`store` must be a MemoStore (e.g. deniable.mechanisms.InMemoryMemoStore() or "
                f"deniable.service.stores.SqlMemoStore(url)), got {type(store).__name__}."
            )
        self._rappor = rappor
        self._store = store

    def __repr__(self) -> str:
        return f"RapporClient({self._rappor!r})"

    @property
    def rappor(self) -> Rappor:
        """The mechanism."""
        return self._rappor

    @property
    def store(self) -> Any:
        """Where cohorts and PRRs live."""
        return self._store

    def _stored(
        self,
        question: str,
        keys: npt.NDArray[Any],
        create: Callable[[npt.NDArray[np.bool_]], npt.ArrayLike],
        *,
        cohort: bool,
    ) -> npt.NDArray[np.int64]:
        """The store's get-or-create under the cohort's or the PRR's mechanism key; a
        refusal says what defines the permanent state."""
        r = self._rappor
        mechanism = r.cohort_key if cohort else r.permanent_key
        try:
            got = self._store.get_or_create(question, keys, create, mechanism=mechanism)
        except PrivacyError as exc:
            what = (
                "a client's cohort is drawn once, among `cohorts` cohorts; another number of "
                "cohorts would give it a second cohort"
                if cohort
                else "a client's PRR of a value is defined by m, h, cohorts, f and the hash "
                "family; p and q (the instantaneous response) may change, any other change "
                "would draw a second PRR"
            )
            raise PrivacyError(f"RAPPOR: {exc}  ({what}.)") from exc
        return np.asarray(got, dtype=np.int64)

    def cohorts_of(
        self, clients: Any, cohorts: Any = None, *, rng: Any = None
    ) -> npt.NDArray[np.int64]:
        """Each client's cohort: stored, else ``cohorts`` (given) or uniform (drawn), then
        stored.  A given cohort that differs from a stored one is refused."""
        keys = respondent_keys(clients, unique=False, name="clients")
        uniq, inverse = _unique(keys)
        r = self._rappor
        given = None
        if cohorts is not None:
            per = r._cohorts(cohorts, keys.size)
            given = np.full(uniq.size, -1, dtype=np.int64)
            given[inverse] = per
            if (given[inverse] != per).any():
                raise DataError("`cohorts` must give one cohort per client, got two for one.")
        gen = resolve_rng(rng)

        def create(missing: npt.NDArray[np.bool_]) -> npt.NDArray[np.int64]:
            if given is not None:
                return given[missing]
            words = random_words(gen, int(missing.sum()))
            return ((words >> _32) * np.uint64(r.cohorts) >> _32).astype(np.int64)

        stored = self._stored("rappor/cohort", uniq, create, cohort=True)
        if given is not None and (stored != given).any():
            j = int(np.flatnonzero(stored != given)[0])
            raise DataError(
                f"`cohorts`: client {uniq.tolist()[j]!r} is in cohort {int(stored[j])} "
                f"(stored), got {int(given[j])}; a client's cohort is permanent."
            )
        return stored[inverse].astype(np.int64)

    def permanent(
        self, clients: Any, values: Any, *, cohorts: Any = None, rng: Any = None
    ) -> npt.NDArray[np.bool_]:
        """``(n, m)``: the PRR bits of each (client, value), drawn and stored on first use."""
        r = self._rappor
        keys = respondent_keys(clients, unique=False, name="clients")
        vals = _strings("values", values)
        if vals.size != keys.size:
            raise DataError(
                f"`values` must have one value per client ({keys.size}), got {vals.size}."
            )
        gen = resolve_rng(rng)
        coh = self.cohorts_of(keys, cohorts, rng=gen)
        out = np.zeros((keys.size, r.m), dtype=np.bool_)
        uvals, vinv = np.unique(vals, return_inverse=True)
        vinv = vinv.reshape(-1)
        order = np.argsort(vinv, kind="stable")
        bounds = np.concatenate(([0], np.cumsum(np.bincount(vinv, minlength=uvals.size))))
        for j, value in enumerate(uvals.tolist()):  # one pass per distinct value
            rows = order[bounds[j] : bounds[j + 1]]
            ukeys, kinv = _unique(keys[rows])
            first = rows[np.unique(kinv, return_index=True)[1]]
            bits = self._stored_prr(value, ukeys, coh[first], gen)
            out[rows] = bits[kinv]
        return out

    def _stored_prr(
        self, value: str, keys: npt.NDArray[Any], cohorts: npt.NDArray[np.int64], gen: Any
    ) -> npt.NDArray[np.bool_]:
        """The PRR of ``value`` for distinct ``keys`` in ``cohorts``: get-or-create of each
        56-bit chunk; the clients missing a chunk get it from one fresh PRR draw."""
        r = self._rappor
        nchunks = -(-r.width // _CHUNK_BYTES)
        cache: dict[bytes, npt.NDArray[np.uint8]] = {}

        def draw(missing: npt.NDArray[np.bool_]) -> npt.NDArray[np.uint8]:
            if missing.tobytes() not in cache:
                sel = np.flatnonzero(missing)
                bloom = r.bloom(np.full(sel.size, value), cohorts[sel])
                packed = np.packbits(r.permanent(bloom, rng=gen), axis=1, bitorder="little")
                padded = np.zeros((sel.size, nchunks * 8), dtype=np.uint8)
                for ch in range(nchunks):
                    part = packed[:, ch * _CHUNK_BYTES : (ch + 1) * _CHUNK_BYTES]
                    padded[:, ch * 8 : ch * 8 + part.shape[1]] = part
                cache[missing.tobytes()] = padded
            return cache[missing.tobytes()]

        stored = np.zeros((keys.size, nchunks * _CHUNK_BYTES), dtype=np.uint8)
        for ch in range(nchunks):
            lo = ch * 8

            def create(missing: npt.NDArray[np.bool_], lo: int = lo) -> npt.NDArray[np.int64]:
                if not missing.any():
                    return np.zeros(0, dtype=np.int64)
                return draw(missing)[:, lo : lo + 8].copy().view("<i8").reshape(-1)

            got = self._stored(f"rappor/prr/{value}/{ch}", keys, create, cohort=False)
            chunk = np.asarray(got, dtype="<i8").reshape(-1, 1).view(np.uint8)
            stored[:, ch * _CHUNK_BYTES : (ch + 1) * _CHUNK_BYTES] = chunk[:, :_CHUNK_BYTES]
        packed = np.ascontiguousarray(stored[:, : r.width])
        return np.unpackbits(packed, axis=1, bitorder="little").astype(np.bool_)

    def report(
        self, clients: Any, values: Any, *, cohorts: Any = None, rng: Any = None
    ) -> RapporReports:
        """One report per (client, value): the stored PRR (drawn on first use) through a
        fresh IRR, packed, with each client's cohort."""
        gen = resolve_rng(rng)
        keys = respondent_keys(clients, unique=False, name="clients")
        prr = self.permanent(keys, values, cohorts=cohorts, rng=gen)
        coh = self.cohorts_of(keys)
        return RapporReports(coh, self._rappor.instantaneous(prr, rng=gen))


def _unique(keys: npt.NDArray[Any]) -> tuple[npt.NDArray[Any], npt.NDArray[np.intp]]:
    try:
        uniq, inverse = np.unique(keys, return_inverse=True)
    except TypeError:
        raise DataError(
            "`clients` must be keys of one kind (all integers or all strings) to be sorted."
        ) from None
    return uniq, inverse.reshape(-1)
