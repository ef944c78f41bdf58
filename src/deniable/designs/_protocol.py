"""The one mechanism protocol: what every design (and every other mechanism) offers.

Every randomized-response design, the k-ary design, the two-group designs, the noise
mechanisms and memoized randomized response (through the adapters in
:mod:`deniable.mechanisms`) answer the same calls, so code that collects, merges, audits or
estimates needs no ``isinstance`` on the kind of mechanism::

    reports = mechanism.randomize(values, rng=...)   # on the respondent's device
    tally = mechanism.tally(reports)                 # a Tally bound to mechanism.key
    reports, tally = mechanism.randomize_and_tally(values, rng=...)  # both, in one pass
    total = sum(tallies)                             # tallies add across shards
    result = mechanism.estimate(total)               # an Estimate, or a richer result
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy.typing as npt

from deniable.designs._channel import Channel
from deniable.designs._tally import Tally

__all__ = ["Mechanism"]


@runtime_checkable
class Mechanism(Protocol):
    """A local randomizer with its exact privacy, channel, sufficient statistic and
    estimator.

    * ``name``: the registry name; ``key``: the identity its tallies carry
      (:func:`~deniable.designs.mechanism_key` of the name and exact parameters);
    * ``epsilon``: the exact epsilon (``math.inf`` when some report reveals the input);
    * ``channel``: ``P[cell | input]`` as a :class:`~deniable.designs.Channel` operator;
    * ``randomize(values, *, rng=None)``: reports for the inputs ``values`` (CSPRNG unless
      ``rng`` is given);
    * ``tally(reports)``: the :class:`~deniable.designs.Tally` of reports, bound to ``key``;
    * ``randomize_and_tally(values, *, rng=None)``: ``(reports, tally)``, bit for bit what
      ``randomize`` then ``tally`` give (``MechanismBase`` supplies it; binary and k-ary
      randomized response count each block as they make it);
    * ``estimate(tally)``: the estimate from a tally (reports are accepted too); an unbound
      tally of the right length is bound, a tally of another mechanism refused.
    """

    @property
    def name(self) -> str: ...

    @property
    def key(self) -> str: ...

    @property
    def epsilon(self) -> float: ...

    @property
    def channel(self) -> Channel: ...

    def randomize(self, values: npt.ArrayLike, /, *, rng: Any = None) -> npt.NDArray[Any]: ...

    def tally(self, reports: npt.ArrayLike, /) -> Tally: ...

    def randomize_and_tally(
        self, values: npt.ArrayLike, /, *, rng: Any = None
    ) -> tuple[npt.NDArray[Any], Tally]: ...

    def estimate(self, tally: Any, /) -> Any: ...
