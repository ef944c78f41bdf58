"""What every mechanism derives from its parameters in the same way: :class:`MechanismBase`.

A mechanism of the protocol (:class:`~deniable.designs.Mechanism`) is its parameters plus
what it does with them: a channel, a randomizer and an estimator.  Everything else follows
from the parameters the same way for every mechanism (designs, frequency oracles, means of
numbers, the noise and memoization adapters), and is written once here:

* ``parameters()`` (the dataclass fields, by name) and ``key``, the identity
  :func:`~deniable.designs.mechanism_key` of the name and the exact parameters, which every
  tally of the mechanism carries;
* pickling that carries the parameters and drops the values cached from them
  (``functools.cached_property``), which whoever loads the mechanism recomputes with its
  own version of the code;
* ``tally(reports)`` (the count of each report value), ``tally_counts(counts)``,
  ``bind(tally)`` (an unbound tally of the right length gets the key, a tally of another
  mechanism is refused) and the reading of an ``estimate`` argument (reports, a tally, or
  ``yes`` and ``n`` where the mechanism takes them);
* ``describe()``: the mechanism as plain JSON data.

A new mechanism writes only what is its own: ``name``, ``epsilon``, ``channel``,
``randomize`` and ``estimate``, and, where its tally is not the count of each report value,
``tally`` and the checks of its cells (``_tally_cells``, ``_check_counts``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import fields
from functools import cached_property
from typing import Any, ClassVar, TypeGuard

import numpy as np
import numpy.typing as npt

from deniable.common import to_jsonable
from deniable.common import validation as v
from deniable.designs._identity import mechanism_key
from deniable.designs._tally import Tally
from deniable.exceptions import DataError
from deniable.randomness import CHUNK

__all__ = ["MechanismBase", "blocks", "one_answer"]

#: Types of one answer that the randomizers take on their scalar fast path (a Python int or
#: bool; anything else, numpy scalars included, takes the array path).
_SCALAR = (int, bool)


def one_answer(value: Any, k: int) -> TypeGuard[int]:
    """Whether ``value`` is one answer in ``0..k-1`` given as a Python ``int`` or ``bool``:
    the randomizers' scalar fast path (the same words and the same report as the array
    path, without building an array first)."""
    return value.__class__ in _SCALAR and 0 <= value < k


def blocks(size: int, step: int = CHUNK) -> Iterator[tuple[int, int]]:
    """``(start, stop)`` of consecutive blocks of at most ``step`` of ``size`` items: the
    randomizers draw and convert one block of words at a time (bounded memory)."""
    for start in range(0, size, step):
        yield start, min(start + step, size)


class MechanismBase:
    """The part of a mechanism that follows from its parameters (module docstring).

    Subclasses are frozen dataclasses (or give ``parameters()`` themselves) with a class
    attribute ``name``; they give ``epsilon``, ``channel``, ``randomize`` and ``estimate``.
    """

    #: Registry name (the CLI's, the spec's ``mechanism``), the first part of :attr:`key`.
    name: ClassVar[str]
    #: How messages name the kind of mechanism ("design", "oracle", "mechanism").
    _noun: ClassVar[str] = "mechanism"
    #: Whether ``estimate`` also takes ``yes`` and ``n`` (:meth:`_tally_of_yes`).
    _takes_yes_n: ClassVar[bool] = False

    # ---- identity

    def parameters(self) -> dict[str, Any]:
        """The parameters by name (the dataclass fields)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}  # type: ignore[arg-type]

    @cached_property
    def key(self) -> str:
        """The identity: :func:`~deniable.designs.mechanism_key` of the name and the exact
        parameters.  Its tallies carry it; tallies of different keys never add."""
        return mechanism_key(self.name, self.parameters())

    def __getstate__(self) -> dict[str, Any]:
        """Pickle (and copy) the parameters, not the values cached from them (thresholds,
        key, plans: ``functools.cached_property``), which whoever loads the mechanism
        recomputes with its own version of the code."""
        cls = type(self)
        return {
            name: value
            for name, value in self.__dict__.items()
            if not isinstance(getattr(cls, name, None), cached_property)
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)  # frozen dataclasses too: no __setattr__ involved

    # ---- description

    def describe(self) -> dict[str, Any]:
        """The mechanism as plain JSON data: its name (under ``"design"`` for a design,
        ``"oracle"`` for an oracle, else ``"mechanism"``), ``parameters``, the probabilities
        that define its channel (binary designs: ``p_yes_given_1`` and ``p_yes_given_0``;
        the categorical design: ``p_report_true``, the channel's diagonal; an oracle: its
        support probabilities ``p`` and ``q``) and ``epsilon`` (``"inf"`` when infinite)."""
        me: Any = self
        out = {self._noun: self.name, "parameters": self.parameters(), **self._channel_fields()}
        out["epsilon"] = me.epsilon
        described: dict[str, Any] = to_jsonable(out)
        return described

    def _channel_fields(self) -> dict[str, Any]:
        """The channel's defining probabilities for :meth:`describe` (none by default)."""
        return {}

    # ---- tallies

    @property
    def _tally_cells(self) -> int:
        """The length of a tally: the channel's cells (a subclass with a cheaper answer,
        or a tally that is not the count of each report value, says so)."""
        me: Any = self
        return int(me.channel.n_cells)

    def _tally_layout(self) -> str:
        """What the cells of a tally are, for messages ("" when they count report values)."""
        return ""

    def _check_counts(self, counts: npt.NDArray[np.int64]) -> None:
        """Refuse counts of the right length that this mechanism cannot have produced (a
        support count above the number of reports, ...); nothing by default."""

    def _reports_in(self, tally: Tally) -> int:
        """The number of reports a (bound) tally holds: the sum of its counts by default."""
        return tally.n

    def tally(self, reports: npt.ArrayLike) -> Tally:
        """Count reports into a mergeable :class:`~deniable.designs.Tally` bound to
        :attr:`key` (the count of each report value)."""
        return Tally.from_reports(reports, self._tally_cells, mechanism=self.key)

    def randomize_and_tally(
        self, values: npt.ArrayLike, /, *, rng: Any = None
    ) -> tuple[npt.NDArray[Any], Tally]:
        """Randomize ``values`` and count the reports: ``(reports, tally)``, bit for bit
        what ``reports = randomize(values, rng=rng)`` and ``tally(reports)`` give (the
        same words, the same reports).  This default does exactly that; a mechanism whose
        randomizer can count each block while it is in cache (binary and k-ary randomized
        response) does it in one pass, which is faster."""
        me: Any = self
        reports = me.randomize(values, rng=rng)
        return reports, self.tally(reports)

    def tally_counts(self, counts: Any) -> Tally:
        """The tally of this mechanism with the given ``counts`` (one per cell)."""
        return self.bind(Tally(counts))

    def bind(self, tally: Tally) -> Tally:
        """``tally`` bound to this mechanism: an unbound tally (built by hand) of the right
        length gets :attr:`key`; a tally of another mechanism, or of the wrong length, is
        refused (:class:`~deniable.exceptions.DataError`; a non-tally raises
        :class:`~deniable.exceptions.ParameterTypeError`)."""
        v.instance("tally", tally, Tally, "a Tally")
        if tally.mechanism is not None and tally.mechanism != self.key:
            raise DataError(
                f"the tally belongs to mechanism {tally.mechanism}, not to this {self._noun} "
                f"{self.key}: estimate it with its own {self._noun}."
            )
        cells = self._tally_cells
        if len(tally.counts) != cells:
            layout = self._tally_layout()
            raise DataError(
                f"the tally has {len(tally.counts)} report values, the {self._noun} "
                f"{self.name!r} has {cells}{f' ({layout})' if layout else ''}."
            )
        self._check_counts(tally.counts)
        return tally.bind(self.key)

    def _tally_of_yes(self, yes: Any, n: Any) -> Tally:
        """The tally of ``yes`` "yes" reports among ``n``, for mechanisms that take them."""
        raise DataError(f"{self._noun} {self.name!r} takes reports or a Tally, not `yes` and `n`.")

    def _as_tally(self, data: Any, yes: Any = None, n: Any = None) -> Tally:
        """The bound tally of an ``estimate`` argument: reports, a tally, or (where the
        mechanism takes them) ``yes`` and ``n``; refused when it holds no reports."""
        if data is None:
            if yes is None and n is None:
                layout = self._tally_layout()
                also = ", or `yes` and `n`" if self._takes_yes_n else ""
                raise DataError(
                    f"give reports or a Tally{f' of {layout}' if layout else ''}{also}."
                )
            if yes is None or n is None:
                raise DataError("give either reports / a Tally, or both `yes` and `n`.")
            tally = self._tally_of_yes(yes, n)
        elif yes is not None or n is not None:
            raise DataError("give either reports / a Tally, or `yes` and `n`, not both.")
        elif isinstance(data, Tally):
            tally = self.bind(data)
        else:
            tally = self.tally(data)
        self._refuse_empty(tally)
        return tally

    def _refuse_empty(self, tally: Tally) -> None:
        """Refuse a tally without reports (nothing to estimate from)."""
        if self._reports_in(tally) == 0:
            raise DataError("`n` must be at least 1, got 0 reports.")
