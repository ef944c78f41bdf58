"""The noise mechanisms and memoized randomized response under the one mechanism protocol.

:class:`NoiseMechanism` and :class:`MemoizedMechanism` wrap the objects of
``_noise_continuous``, ``_noise_discrete`` and ``_memoization`` (without changing them) so
that they answer the calls of :class:`~deniable.designs.Mechanism`: ``name``, ``key``,
``epsilon``, ``channel``, ``randomize(values, rng=...)``, ``tally(reports)`` and
``estimate(tally)``.

What channel and tally mean for them:

* **Noise** (Laplace, Gaussian, discrete Laplace, discrete Gaussian) adds noise to each
  value: the input is any integer, the release ``value + Z``.  The channel is the additive
  kernel ``P[release | value] = f(release - value)`` (:class:`AdditiveNoiseChannel`): it states
  the noise density and variance, has unbounded inputs and no dense matrix.  The tally is the
  sufficient statistic of a mean, four non-negative int64 cells ``(n, S+, S-, Q)``: the
  number of releases, the sums of the positive and of the negative parts, and the sum of
  squares, of each release *rounded to the nearest integer* (post-processing, so privacy is
  unchanged; discrete noise is already integral).  For integer values and noise symmetric
  about 0 the rounded release is still exactly unbiased.  The estimate is the mean release,
  ``(S+ - S-) / n``, with its SE from the empirical variance ``(Q - n mean^2) / n`` (plug-in)
  or ``/ (n - 1)`` (unbiased), which includes the noise variance.
* **Memoized randomized response** replays each respondent's permanent report.  One round's
  channel is ``P_inst @ P_perm`` (a dense matrix), its tally counts the report values, and
  ``epsilon`` is one round's exact epsilon (``permanent_epsilon`` bounds every round
  together).  The estimate inverts the one-round channel: the permanent design's own
  estimator without an instantaneous design, the binary moment estimator of the product
  channel with one.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import fields
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from deniable.designs import (
    MAX_COUNT,
    Channel,
    DenseChannel,
    Design,
    MechanismBase,
    Tally,
    binary_estimate,
)
from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.mechanisms._memoization import MemoizedRandomizer
from deniable.mechanisms._noise_common import _real_values
from deniable.mechanisms._noise_continuous import GaussianMechanism, LaplaceMechanism
from deniable.mechanisms._noise_discrete import DiscreteGaussianMechanism, DiscreteLaplaceMechanism
from deniable.results import SE_PLUG_IN, Estimate

__all__ = ["AdditiveNoiseChannel", "MemoizedMechanism", "NoiseMechanism"]

Noise = LaplaceMechanism | GaussianMechanism | DiscreteLaplaceMechanism | DiscreteGaussianMechanism

#: Registry names of the noise mechanisms.
_NOISE_NAMES: dict[type, str] = {
    LaplaceMechanism: "laplace",
    GaussianMechanism: "gaussian",
    DiscreteLaplaceMechanism: "discrete-laplace",
    DiscreteGaussianMechanism: "discrete-gaussian",
}

#: The largest rounded release a noise tally accepts (its square must stay far below the
#: tally's limit of 10**18 reports in all).
MAX_RELEASE = 2**30

_NOISE_CELLS = ("n", "positive sum", "negative sum", "sum of squares")


# --------------------------------------------------------------------------- noise


class AdditiveNoiseChannel(Channel):
    """``P[release | value] = f(release - value)``: the channel of additive noise.

    Unbounded inputs (``n_truths`` is ``None``), so no dense matrix (:meth:`dense` raises)
    and no finite ``expected``; :meth:`density` is the noise's density (continuous) or pmf
    (discrete) at ``release - value``, :attr:`noise_variance` its variance, and
    :attr:`epsilon` the mechanism's pure-DP epsilon (``inf`` for Gaussian noise, which is
    only approximately DP).  ``n_cells`` is 4: the cells of the noise tally.
    """

    __slots__ = ("_density", "_epsilon", "_kind", "_variance")
    _density: Callable[[npt.NDArray[np.float64]], npt.NDArray[np.float64]]
    _epsilon: float
    _kind: str
    _variance: float

    def __init__(
        self,
        kind: str,
        density: Callable[[npt.NDArray[np.float64]], npt.NDArray[np.float64]],
        variance: float,
        epsilon: float,
    ) -> None:
        for name, x in (("_kind", kind), ("_density", density), ("_variance", variance),
                        ("_epsilon", epsilon)):  # fmt: skip
            object.__setattr__(self, name, x)

    @property
    def n_truths(self) -> None:
        return None

    @property
    def n_cells(self) -> int:
        return len(_NOISE_CELLS)

    @property
    def noise_variance(self) -> float:
        """``Var(Z)`` of the noise."""
        return self._variance

    @property
    def epsilon(self) -> float:
        return self._epsilon

    def density(self, release: npt.ArrayLike, value: npt.ArrayLike = 0) -> npt.NDArray[np.float64]:
        """The noise density (or pmf) at ``release - value``."""
        z = np.asarray(release, dtype=float) - np.asarray(value, dtype=float)
        return self._density(z)

    def expected(self, shares: npt.ArrayLike) -> npt.NDArray[np.float64]:
        raise ParameterError(
            "additive noise has unbounded inputs: there is no distribution over a finite set "
            "of values to map (the expected release is the value itself)."
        )

    def dense(self) -> npt.NDArray[np.float64]:
        raise ParameterError(
            f"the {self._kind} channel has no dense matrix: its inputs (any number) and "
            "releases are unbounded; use `density`."
        )

    def __repr__(self) -> str:
        return f"AdditiveNoiseChannel({self._kind!r}, variance={self._variance!r})"


class _Density:
    """A picklable noise density: ``kind`` and its scale."""

    def __init__(self, kind: str, scale: Any, noise: Any = None) -> None:
        self.kind, self.scale, self.noise = kind, scale, noise

    def __call__(self, z: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        if self.kind == "laplace":  # exp(-|z| / b) / (2 b)
            return np.asarray(np.exp(-np.abs(z) / self.scale) / (2 * self.scale))
        if self.kind == "gaussian":  # exp(-z^2 / (2 s^2)) / (s sqrt(2 pi))
            s = self.scale
            return np.asarray(np.exp(-(z * z) / (2 * s * s)) / (s * math.sqrt(2 * math.pi)))
        out = np.zeros_like(z, dtype=np.float64)  # a pmf on the integers
        whole = z == np.floor(z)
        out[whole] = self.noise.pmf(z[whole])
        return out


def _noise_variance(noise: Noise) -> float:
    if isinstance(noise, LaplaceMechanism):
        return 2 * noise.scale**2  # Var = 2 b^2
    if isinstance(noise, GaussianMechanism):
        return noise.sigma**2
    if isinstance(noise, DiscreteLaplaceMechanism):
        q = math.exp(-1 / float(noise.scale))
        return 2 * q / (1 - q) ** 2  # sum_k k^2 (1 - q)/(1 + q) q^|k|
    s2 = float(noise.sigma2)  # discrete Gaussian: sum_k k^2 p(k), at most sigma^2
    if s2 > 1e10:
        return s2
    k = np.arange(1, math.ceil(40 * math.sqrt(s2)) + 2, dtype=np.float64)
    return float(2 * np.sum(k * k * noise.pmf(k)))


class NoiseMechanism(MechanismBase):
    """A noise mechanism (Laplace, Gaussian, discrete Laplace or discrete Gaussian) under
    the mechanism protocol; see the module docstring for its channel, tally and estimate
    (identity, binding and pickling: :class:`~deniable.designs.MechanismBase`).

    >>> from deniable.mechanisms import DiscreteLaplaceMechanism
    >>> m = NoiseMechanism(DiscreteLaplaceMechanism.from_epsilon(0.5))
    >>> m.key, m.epsilon
    ('discrete-laplace{"scale":"2","sensitivity":1}', 0.5)
    >>> t = m.tally(m.randomize([1, 0, 1, 1] * 2500, rng=1))
    >>> t.counts[0], abs(m.estimate(t).value - 0.75) < 4 * m.estimate(t).se
    (np.int64(10000), True)
    """

    def __init__(self, noise: Noise) -> None:
        if type(noise) not in _NOISE_NAMES:
            raise ParameterTypeError(
                "`noise` must be a LaplaceMechanism, GaussianMechanism, "
                f"DiscreteLaplaceMechanism or DiscreteGaussianMechanism, got "
                f"{type(noise).__name__}."
            )
        self._noise = noise

    def __repr__(self) -> str:
        return f"NoiseMechanism({self._noise!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NoiseMechanism) and other._noise == self._noise

    def __hash__(self) -> int:
        return hash(self._noise)

    @property
    def noise(self) -> Noise:
        """The wrapped noise mechanism."""
        return self._noise

    @property
    def name(self) -> str:  # type: ignore[override]
        return _NOISE_NAMES[type(self._noise)]

    def parameters(self) -> dict[str, Any]:
        """The noise mechanism's parameters by name."""
        return {f.name: getattr(self._noise, f.name) for f in fields(self._noise)}

    @property
    def epsilon(self) -> float:
        """Pure-DP epsilon of one release (``inf`` for Gaussian noise, which is only
        (epsilon, delta)-DP: see the mechanism's ``approx_dp``)."""
        eps = getattr(self._noise, "epsilon", None)
        return math.inf if eps is None else float(eps)

    @property
    def channel(self) -> AdditiveNoiseChannel:
        n = self._noise
        if isinstance(n, LaplaceMechanism):
            density = _Density("laplace", n.scale)
        elif isinstance(n, GaussianMechanism):
            density = _Density("gaussian", n.sigma)
        else:
            density = _Density("pmf", None, n)
        return AdditiveNoiseChannel(self.name, density, _noise_variance(n), self.epsilon)

    def randomize(self, values: npt.ArrayLike, *, rng: Any = None) -> npt.NDArray[Any]:
        """``values`` plus noise (the wrapped mechanism's ``randomize``)."""
        return self._noise.randomize(values, rng=rng)

    def tally(self, reports: npt.ArrayLike) -> Tally:
        """``(n, S+, S-, Q)`` of the releases rounded to the nearest integer."""
        r = _real_values(reports)
        if not np.all(np.isfinite(r)):
            raise DataError("`reports` must be finite numbers.")
        rounded = np.rint(r)
        if r.size and float(np.max(np.abs(rounded))) > MAX_RELEASE:
            raise DataError(
                f"`reports` must be at most 2**30 in absolute value (their squares are summed "
                f"exactly in the tally), got {float(np.max(np.abs(rounded)))!r}."
            )
        if float(np.sum(rounded * rounded)) > MAX_COUNT:
            raise DataError(
                f"the sum of squares of `reports` must be at most {MAX_COUNT:.0e} (a tally "
                "holds at most 10**18), got more."
            )
        k = rounded.astype(np.int64)
        positive = int(k[k > 0].sum())
        negative = int(-k[k < 0].sum())
        squares = int(np.sum(k * k))  # at most 10**18 (checked above): no int64 overflow
        return Tally([k.size, positive, negative, squares], mechanism=self.key)

    @property
    def _tally_cells(self) -> int:
        return len(_NOISE_CELLS)

    def _tally_layout(self) -> str:
        return ", ".join(_NOISE_CELLS)

    def _reports_in(self, tally: Tally) -> int:
        return int(tally.counts[0])

    def estimate(self, data: Any) -> Estimate:
        """The mean release with both SE conventions (see the module docstring)."""
        tally = self._as_tally(data)  # bound, 4 cells, at least one release
        n, positive, negative, squares = tally.counts.tolist()
        mean = (positive - negative) / n
        # sum of squared deviations, exactly in integers: Q - S^2 / n
        total = positive - negative
        ss = max((squares * n - total * total) / n, 0.0)
        return Estimate(
            value=mean,
            bounded=mean,
            se=math.sqrt(ss / n / n),
            se_unbiased=math.sqrt(ss / (n - 1) / n) if n > 1 else math.nan,
            n=n,
            method="mean",
            parameter="mean",
            se_convention=SE_PLUG_IN + " (empirical variance of the releases)",
        )


# --------------------------------------------------------------------------- memoization


class MemoizedMechanism(MechanismBase):
    """Memoized randomized response (:class:`~deniable.mechanisms.MemoizedRandomizer`) under
    the mechanism protocol, for one question; see the module docstring (identity, binding
    and pickling: :class:`~deniable.designs.MechanismBase`).

    ``randomize(values, rng=..., respondents=None)`` runs one round for respondents
    ``0..n-1`` (or the given ids): stored permanent reports are replayed.

    >>> from deniable import Warner
    >>> m = MemoizedMechanism(Warner(0.75))
    >>> first = m.randomize([1, 0, 1], rng=1)
    >>> bool((m.randomize([1, 0, 1], rng=2) == first).all())       # replayed
    True
    >>> m.key
    'memoized{"design":"warner{\\\\"p\\\\":\\\\"3/4\\\\"}","instantaneous":null}'
    """

    def __init__(
        self, design: Design, *, instantaneous: Design | None = None, question: str = "q"
    ) -> None:
        self._memo = MemoizedRandomizer(design, instantaneous=instantaneous)
        if not isinstance(question, str) or not question:
            raise ParameterTypeError(
                f"`question` must be a non-empty string naming the question, got {question!r}."
            )
        self._question = question

    def __repr__(self) -> str:
        return f"MemoizedMechanism({self._memo!r}, question={self._question!r})"

    @property
    def memo(self) -> MemoizedRandomizer:
        """The wrapped memo (it holds the permanent reports)."""
        return self._memo

    name: ClassVar[str] = "memoized"

    def parameters(self) -> dict[str, Any]:
        """The keys of the permanent and the instantaneous design (``None``: none)."""
        inst = self._memo.instantaneous
        return {
            "design": self._memo.design.key,
            "instantaneous": None if inst is None else inst.key,
        }

    @property
    def epsilon(self) -> float:
        """Exact epsilon of one round's report (``permanent_epsilon`` bounds all rounds)."""
        return self._memo.report_epsilon

    @property
    def permanent_epsilon(self) -> float:
        """Epsilon over unlimited rounds."""
        return self._memo.permanent_epsilon

    @property
    def channel(self) -> Channel:
        """One round's channel ``P_inst @ P_perm``."""
        if self._memo.instantaneous is None:
            return self._memo.design.channel
        return DenseChannel(self._memo.channel)

    @property
    def _tally_cells(self) -> int:
        inst = self._memo.instantaneous
        return (self._memo.design if inst is None else inst).n_reports

    def randomize(
        self, values: npt.ArrayLike, *, rng: Any = None, respondents: Any = None
    ) -> npt.NDArray[np.int64]:
        """One round for respondents ``0..n-1`` (or ``respondents``) with true ``values``."""
        n = np.asarray(values).size
        ids = np.arange(n) if respondents is None else respondents
        return self._memo.randomize(ids, values, question=self._question, rng=rng)

    def estimate(self, data: Any) -> Any:
        """Invert one round's channel (see the module docstring)."""
        tally = self._as_tally(data)  # bound, of one round's report values, not empty
        design, inst = self._memo.design, self._memo.instantaneous
        if inst is None:
            return design.estimate(Tally(tally.counts))
        ch = self._memo.channel
        if ch.shape != (2, 2):
            raise ParameterError(
                "memoized estimates with an instantaneous design need a binary one-round "
                f"channel, got one of shape {ch.shape}."
            )
        p1, p0 = float(ch[1, 1]), float(ch[1, 0])
        if p1 == p0:  # pragma: no cover - both designs informative keeps them apart
            raise ParameterError("the one-round channel carries no information.")
        return binary_estimate(p1, p0, int(tally.counts[1]), tally.n)
