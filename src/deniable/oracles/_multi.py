"""Several attributes per device: SPL, SMP and RS+FD over any mix of the frequency oracles.

A device holds ``d >= 2`` values, value ``j`` in ``0..k_j-1``.  Three protocols report them
(Arcolezi, Couchot, Al Moussawi & Xiao 2021, "Random sampling plus fake data:
multidimensional frequency estimates with local differential privacy", CIKM; SPL and SMP
after Wang et al. 2019 and Nguyen et al. 2016):

* **SPL** (split): every attribute is reported with its oracle at ``epsilon / d``; the
  device's epsilon is the sum (basic composition, tight for oracles that attain their
  ratio).
* **SMP** (sample): the device draws one attribute ``j`` uniformly and reports ``(j, y)``,
  ``y`` its oracle's report of value ``j`` at the full ``epsilon``.
* **RS+FD** (random sampling plus fake data): the device draws one attribute ``j``
  uniformly, reports value ``j`` with its oracle, and for every other attribute reports a
  *fake* value drawn uniformly from its domain, randomized by the same oracle (or, for
  ``"oue-z"``, the all-zero unary vector randomized with OUE's ``q``); the server is not
  told ``j``.

**One estimator for all three.**  A device's report of attribute ``j`` supports value ``v``
with probability ``p'`` if its value ``j`` is ``v`` and ``q'`` otherwise, independently
across devices, with the oracle's ``(p, q)``:

* SPL: ``p' = p``, ``q' = q`` (the oracle at ``epsilon / d``);
* SMP: ``p' = p / d``, ``q' = q / d`` (a device that sampled another attribute supports
  nothing of ``j``), the Horvitz-Thompson form: the estimate scales the count by ``d``;
* RS+FD: ``p' = p / d + (1 - 1/d) phi``, ``q' = q / d + (1 - 1/d) phi`` with ``phi = (p +
  (k - 1) q) / k`` the chance that the report of a uniform fake value supports ``v`` (OUE-z:
  ``phi = q``).  With GRR this is the paper's ``f = (C d k - n (d - 1 + q k)) / (n k (p -
  q))``, with OUE-z its ``d (C - n q) / (n (p - q))``.

So ``f_hat_v = (C_v / n - q') / (p' - q')`` is unbiased, and the oracles' two variances
(:mod:`deniable.oracles._base`) hold with ``(p', q')`` in place of ``(p, q)``: the per
attribute estimate is a :class:`~deniable.designs.FrequencyEstimate` built from them.

**Epsilon of RS+FD (proof note).**  Claim: with oracles of epsilons ``e_1..e_d``, the
report tuple of RS+FD is ``max_j e_j``-LDP against any change of the device's values, and
this is tight (for GRR, enumerated in tests/test_multi_attribute.py).  Argument: with
``F_i`` the distribution of attribute ``i``'s report of a fake value, ``P(y | x) = (1/d)
prod_i F_i(y_i) sum_j P_j(y_j | x_j) / F_j(y_j)``; a ratio of two sums of positive terms
is at most the largest ratio of the terms, ``P_j(y_j | x_j) / P_j(y_j | x'_j) <= e^{e_j}``;
when every value changes and every ``y_j`` attains its oracle's ratio, the bound is met.
The paper's amplified ``epsilon' = ln(d (e^epsilon - 1) + 1)`` (each oracle run at
``epsilon'`` for a device budget ``epsilon``) holds only against a change of **one**
attribute: the other terms are then equal in both sums, at least ``(d - 1) k q`` for GRR
(every term ``k p`` or ``k q``), so the ratio is at most ``(p + (d - 1) q) / (d q) =
(e^{epsilon'} + d - 1) / d = e^epsilon``.  A device whose every value changes is protected
only at ``epsilon'``, so deniable does not amplify: RS+FD runs its oracles at the device's
``epsilon`` (:attr:`MultiAttribute.epsilon` is the bound over every change), and
:func:`rsfd_attribute_epsilon` states the exact bound against a change of one attribute
for GRR: the paper's when the domains are equal, larger when they are not (the others'
terms ``k_i q_i`` then differ).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.designs import MAX_COUNT, FrequencyEstimate, Tally
from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.oracles._base import check_epsilon
from deniable.oracles._registry import FREQUENCY_ORACLES
from deniable.oracles._unary import OUE
from deniable.oracles._variance import support_probabilities
from deniable.randomness import random_words, resolve_rng, uniform_below, words_below

__all__ = [
    "MULTI_ORACLES",
    "MULTI_PROTOCOLS",
    "MultiAttribute",
    "MultiReports",
    "MultiTally",
    "rsfd_attribute_epsilon",
]

FloatArray = npt.NDArray[np.float64]

#: The protocols for several attributes per device.
MULTI_PROTOCOLS = ("spl", "smp", "rs+fd")
#: The one-shot oracles an attribute may use (``"oue-z"``: RS+FD only, OUE with zero-vector
#: fake data).
MULTI_ORACLES = ("grr", "sue", "oue", "blh", "olh", "olh-linear", "hadamard", "subset")
_OUE_Z = "oue-z"


def check_ks(ks: Any) -> tuple[int, ...]:
    """The domain sizes of ``d >= 2`` attributes, each an integer >= 2."""
    if isinstance(ks, str | bytes) or not isinstance(ks, Sequence | np.ndarray):
        raise ParameterTypeError(f"`ks` must be a sequence of domain sizes, got {ks!r}.")
    if len(ks) < 2:
        raise ParameterError(
            f"`ks` must give d >= 2 attributes (one oracle covers one), got {len(ks)}."
        )
    return tuple(v.integer(f"ks[{j}]", k, minimum=2) for j, k in enumerate(ks))


def rsfd_attribute_epsilon(epsilon: float, ks: Sequence[int]) -> float:
    """The epsilon of RS+FD[GRR], every oracle at ``epsilon``, against a change of **one**
    attribute of a device with domains ``ks`` (the module's proof note): with ``c_i = k_i /
    (e^epsilon + k_i - 1)`` (``k_i q_i``) and ``S_j`` the sum of the others' ``c_i``, it is
    ``max_j ln((e^epsilon c_j + S_j) / (c_j + S_j))``.  For equal domains this is
    Arcolezi et al.'s ``ln((e^epsilon + d - 1) / d)``; for unequal ones it is larger (the
    paper's calibration then overstates the protection).  A change of every attribute costs
    the full ``epsilon``.

    >>> round(rsfd_attribute_epsilon(math.log(3 * (math.e - 1) + 1), [4, 4, 4]), 12)
    1.0
    >>> round(rsfd_attribute_epsilon(math.log(2 * (math.e - 1) + 1), [2, 3]), 4)
    1.0718
    """
    eps = check_epsilon(epsilon)
    kk = check_ks(ks)
    big = math.exp(eps)
    c = [k / (big + k - 1) for k in kk]
    total = math.fsum(c)
    return max(math.log((big * cj + total - cj) / total) for cj in c)


def effective_support(protocol: str, name: str, oracle: Any, d: int) -> tuple[float, float]:
    """``(p', q')`` of one attribute reported by ``oracle`` (registered as ``name``) under
    ``protocol`` with ``d`` attributes (module doc)."""
    p, q = support_probabilities(oracle)
    if protocol == "spl":
        return p, q
    if protocol == "smp":
        return p / d, q / d
    k = int(oracle.k)
    phi = q if name == _OUE_Z else (p + (k - 1) * q) / k
    return p / d + (1 - 1 / d) * phi, q / d + (1 - 1 / d) * phi


@dataclass(frozen=True, eq=False)
class MultiReports:
    """The reports of ``n`` devices: ``reports[j]`` the oracle reports of attribute ``j``
    (``n`` rows for SPL and RS+FD; for SMP the rows of the devices that sampled ``j``, in
    order, ``attribute`` saying which attribute each device sampled)."""

    protocol: str
    n: int
    reports: tuple[Any, ...]
    attribute: npt.NDArray[np.int64] | None = None


@dataclass(frozen=True, eq=False)
class MultiTally:
    """Support counts per attribute (``counts[j]``, ``k_j`` int64 cells) of ``n`` devices
    of the protocol ``key``; tallies of one protocol add with ``+``."""

    key: str
    counts: tuple[npt.NDArray[np.int64], ...]
    n: int

    def __add__(self, other: MultiTally) -> MultiTally:
        if not isinstance(other, MultiTally) or other.key != self.key:
            raise DataError(f"only tallies of {self.key} add to this tally.")
        counts = tuple(a + b for a, b in zip(self.counts, other.counts, strict=True))
        return MultiTally(self.key, counts, self.n + other.n)


class MultiAttribute:
    """``d >= 2`` attributes per device, domains ``ks``, reported by ``protocol`` (``"spl"``,
    ``"smp"`` or ``"rs+fd"``) with ``oracle`` (a name of :data:`MULTI_ORACLES`, or one per
    attribute; ``"oue-z"`` for RS+FD) at a device budget ``epsilon`` (module doc).

    >>> import numpy as np
    >>> multi = MultiAttribute([3, 4], 1.0, protocol="rs+fd", oracle="grr")
    >>> multi.epsilon, multi.d
    (1.0, 2)
    >>> values = np.random.default_rng(1).choice(3, size=(100_000, 2), p=[0.6, 0.3, 0.1])
    >>> est = multi.estimate(multi.randomize(values, rng=7))  # attribute 0: 0.6, 0.3, 0.1
    >>> est[0].values.round(2).tolist(), round(float(est[0].se[0]), 3)
    ([0.61, 0.28, 0.11], 0.008)
    """

    def __init__(
        self, ks: Sequence[int], epsilon: float, *, protocol: str = "smp",
        oracle: str | Sequence[str] = "grr",
    ) -> None:  # fmt: skip
        self.ks = check_ks(ks)
        self.protocol = v.choice("protocol", protocol, MULTI_PROTOCOLS)
        self.requested_epsilon = check_epsilon(epsilon)
        d = len(self.ks)
        names = [oracle] * d if isinstance(oracle, str) else list(oracle)
        if len(names) != d:
            raise ParameterError(
                f"`oracle` must be one name or d = {d} names (one per attribute), got {len(names)}."
            )
        allowed = (*MULTI_ORACLES, _OUE_Z) if self.protocol == "rs+fd" else MULTI_ORACLES
        self.oracle_names = tuple(v.choice("oracle", name, allowed) for name in names)
        per = self.requested_epsilon / d if self.protocol == "spl" else self.requested_epsilon
        self.oracles = tuple(
            FREQUENCY_ORACLES["oue" if name == _OUE_Z else name].from_epsilon(per, k)
            for name, k in zip(self.oracle_names, self.ks, strict=True)
        )

    def __repr__(self) -> str:
        return (
            f"MultiAttribute(ks={list(self.ks)}, epsilon={self.requested_epsilon!r}, "
            f"protocol={self.protocol!r}, oracle={list(self.oracle_names)!r})"
        )

    @property
    def d(self) -> int:
        """The number of attributes."""
        return len(self.ks)

    @cached_property
    def key(self) -> str:
        """The protocol and every attribute's oracle key (tallies are bound to it)."""
        inner = ", ".join(
            f"{n}:{o.key}" for n, o in zip(self.oracle_names, self.oracles, strict=True)
        )
        return f"multi{{protocol={self.protocol}, attributes=[{inner}]}}"

    @property
    def epsilon(self) -> float:
        """The device's epsilon against any change of its values: SPL the sum of the
        oracles' epsilons (at most the request), SMP and RS+FD their largest (proof note in
        the module doc; RS+FD is not amplified)."""
        eps = [float(o.epsilon) for o in self.oracles]
        return math.fsum(eps) if self.protocol == "spl" else max(eps)

    # ---- the channel of one attribute

    def support(self, j: int) -> tuple[float, float]:
        """``(p', q')`` of attribute ``j``: the chance that a device's report supports
        value ``v`` when its value ``j`` is ``v``, and when it is not (module doc)."""
        jj = v.integer("j", j, minimum=0, maximum=self.d - 1)
        return effective_support(self.protocol, self.oracle_names[jj], self.oracles[jj], self.d)

    def variance(
        self, n: int, frequencies: Sequence[npt.ArrayLike] | None = None, *,
        population: str = "fixed",
    ) -> tuple[FloatArray, ...]:  # fmt: skip
        """Variance of each value's estimate, per attribute, from ``n`` devices at the true
        ``frequencies`` (one array per attribute, default uniform): the ``fixed``
        population's exact variance ``(pi p'(1 - p') + (1 - pi) q'(1 - q')) / (n (p' -
        q')^2)`` or, ``iid``, ``lambda (1 - lambda) / (n (p' - q')^2)`` with ``lambda = q' +
        (p' - q') pi``."""
        v.choice("population", population, ("fixed", "iid"))
        size = v.integer("n", n, minimum=1, maximum=MAX_COUNT)
        if frequencies is not None and len(frequencies) != self.d:
            raise DataError(f"`frequencies` must give d = {self.d} arrays, got {len(frequencies)}.")
        out = []
        for j, k in enumerate(self.ks):
            p, q = self.support(j)
            pi = np.full(k, 1 / k) if frequencies is None else np.asarray(frequencies[j], float)
            if pi.shape != (k,):
                raise DataError(f"`frequencies[{j}]` must have {k} entries, got {pi.shape}.")
            if population == "iid":
                lam = q + (p - q) * pi
                num = lam * (1 - lam)
            else:
                num = pi * p * (1 - p) + (1 - pi) * q * (1 - q)
            out.append(np.asarray(num / (size * (p - q) ** 2), dtype=np.float64))
        return tuple(out)

    # ---- randomizer

    def _values(self, values: npt.ArrayLike) -> npt.NDArray[np.int64]:
        arr = np.asarray(values)
        if arr.ndim != 2 or arr.shape[1] != self.d:
            raise DataError(
                f"`values` must be an (n, d) array with d = {self.d} columns (one per "
                f"attribute), got shape {arr.shape}."
            )
        cols = [
            v.reports_array(f"values[:, {j}]", arr[:, j], categories=k).astype(np.int64)
            for j, k in enumerate(self.ks)
        ]
        return np.stack(cols, axis=1) if cols[0].size else np.zeros((0, self.d), np.int64)

    def randomize(self, values: npt.ArrayLike, *, rng: Any = None) -> MultiReports:
        """The reports of the devices whose values are the rows of ``values`` (an ``(n,
        d)`` integer array, column ``j`` in ``0..k_j-1``; CSPRNG unless ``rng`` is
        given)."""
        x = self._values(values)
        n = x.shape[0]
        src = resolve_rng(rng)
        if self.protocol == "spl":
            reps = tuple(o.randomize(x[:, j], rng=src) for j, o in enumerate(self.oracles))
            return MultiReports("spl", n, reps)
        sampled = uniform_below(random_words(src, n), self.d).astype(np.int64)
        if self.protocol == "smp":
            reps = tuple(
                o.randomize(x[sampled == j, j], rng=src) for j, o in enumerate(self.oracles)
            )
            return MultiReports("smp", n, reps, sampled)
        out = []
        for j, (o, k) in enumerate(zip(self.oracles, self.ks, strict=True)):
            mine = sampled == j
            if self.oracle_names[j] == _OUE_Z:
                out.append(self._oue_z(o, x[:, j], mine, src))
                continue
            fake = uniform_below(random_words(src, n), k).astype(np.int64)
            out.append(o.randomize(np.where(mine, x[:, j], fake), rng=src))
        return MultiReports("rs+fd", n, tuple(out))

    @staticmethod
    def _oue_z(oracle: OUE, col: npt.NDArray[np.int64], mine: Any, src: Any) -> Any:
        """OUE-z: the sampled rows randomized by OUE, the others the all-zero vector with
        each bit set with OUE's (implemented) ``q``."""
        real = oracle.randomize(col[mine], rng=src)
        n, k = col.shape[0], oracle.k
        thr = oracle.set_count << (53 - oracle.bits)
        bits = words_below(random_words(src, n * k), thr).reshape(n, k)
        fake = np.packbits(bits, axis=1, bitorder="little")
        fake[mine] = real
        return fake

    # ---- tally and estimate

    def tally(self, reports: MultiReports) -> MultiTally:
        """The support counts of every attribute's values and the number of devices."""
        if not isinstance(reports, MultiReports) or reports.protocol != self.protocol:
            raise DataError(
                f"`reports` must be the MultiReports of protocol {self.protocol!r}, got "
                f"{getattr(reports, 'protocol', type(reports).__name__)!r}."
            )
        if len(reports.reports) != self.d:
            raise DataError(
                f"`reports` must hold d = {self.d} attributes, got {len(reports.reports)}."
            )
        counts, seen = [], 0
        for j, (o, k) in enumerate(zip(self.oracles, self.ks, strict=True)):
            t = o.tally(reports.reports[j])
            rows = int(t.counts[-1]) if t.counts.shape[0] == k + 1 else t.n
            if self.protocol != "smp" and rows != reports.n:
                raise DataError(
                    f"`reports` of attribute {j} must have n = {reports.n} rows, got {rows}."
                )
            seen += rows
            counts.append(np.asarray(t.counts[:k], dtype=np.int64))
        if self.protocol == "smp" and seen != reports.n:
            raise DataError(f"`reports` must cover n = {reports.n} devices, got {seen}.")
        return MultiTally(self.key, tuple(counts), reports.n)

    def estimate(self, data: MultiReports | MultiTally) -> tuple[FrequencyEstimate, ...]:
        """One unbiased :class:`~deniable.designs.FrequencyEstimate` per attribute (its
        variances with the attribute's ``(p', q')``), from reports or a tally."""
        t = data if isinstance(data, MultiTally) else self.tally(data)
        if t.key != self.key:
            raise DataError(f"`data` is a tally of {t.key}, not of {self.key}.")
        if t.n < 1:
            raise DataError("`data` must hold at least one device's reports, got none.")
        out = []
        for j, (o, c) in enumerate(zip(self.oracles, t.counts, strict=True)):
            if c.shape != (o.k,) or int(c.min()) < 0 or int(c.max()) > t.n:
                raise DataError(
                    f"`data` attribute {j} must have {o.k} support counts in 0..n = {t.n}, "
                    f"got {c.tolist() if c.size <= 8 else c.shape}."
                )
            p, q = self.support(j)
            cells = Tally(np.append(c, t.n), mechanism=f"{self.key}[{j}]")
            out.append(FrequencyEstimate.from_counts(o, cells, c, t.n, p, q))
        return tuple(out)
