"""What every frequency oracle shares: the support-count tally and its checks, the estimate,
the channel and validation (identity, binding and pickling: :class:`~deniable.designs.
MechanismBase`).

A frequency oracle randomizes a value ``x`` in ``0..k-1`` into a report that *supports* some
values (Wang, Blocki, Li & Jha 2017, "pure" protocols): the report supports ``x`` with
probability ``p`` and each other value with probability ``q``.  Its tally is the support
count of every value plus the number of reports (``k + 1`` int64 cells, the form
:class:`~deniable.designs.SupportChannel` reads), and the estimate of the share of ``j`` is

    pi_hat_j = (c_j / n - q) / (p - q),

unbiased (a :class:`~deniable.designs.FrequencyEstimate`).  For respondents sampled from a
population each report supports ``j`` independently with probability ``lambda_j = q + (p -
q) pi_j``, so ``Var = lambda_j (1 - lambda_j) / (n (p - q)^2)`` (the estimate's ``se``); for
the fixed population of the ``n`` respondents (each report's support of ``j`` an independent
Bernoulli(``p``) or Bernoulli(``q``) draw) it is the exact variance

    Var(pi_hat_j) = (pi_j p (1 - p) + (1 - pi_j) q (1 - q)) / (n (p - q)^2)
                  = q (1 - q) / (n (p - q)^2) + pi_j (1 - p - q) / (n (p - q))

(Wang et al. 2017, Theorem 2; the estimate's ``se_fixed``).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.designs import (
    MAX_COUNT,
    Channel,
    FrequencyEstimate,
    MechanismBase,
    SupportChannel,
    Tally,
)
from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.oracles._variance import exact_variance, sampling_variance

__all__ = ["FrequencyOracle"]

FloatArray = npt.NDArray[np.float64]


class FrequencyOracle(MechanismBase, ABC):
    """Base of the frequency oracles: a randomizer of values ``0..k-1`` whose reports
    support values, with a support-count tally and the unbiased estimator (module doc).

    Every oracle answers the mechanism protocol (:class:`~deniable.designs.Mechanism`):
    ``name``, ``key``, ``epsilon`` (exact, closed form), ``channel``
    (:class:`~deniable.designs.SupportChannel` ``(k, p, q)``), ``randomize``, ``tally`` (``k``
    support counts and the number of reports) and ``estimate``
    (:class:`~deniable.designs.FrequencyEstimate`, the k-ary design's estimate too).
    Subclasses are frozen dataclasses with a field ``k``; they give the support
    probabilities, epsilon, the randomizer and the support counts of a batch of reports;
    identity, binding and pickling come from :class:`~deniable.designs.MechanismBase`.
    """

    _noun: ClassVar[str] = "oracle"

    #: Registry name (the spec's ``mechanism``).
    name: ClassVar[str]
    #: Largest number of categories the oracle takes.
    max_k: ClassVar[int] = 1 << 24
    k: int

    def _epsilon_per_report(self) -> float:
        """What one report costs a device against any change of its values
        (:func:`~deniable.oracles.report_epsilon`): its ``epsilon``, every report
        drawn afresh from the value."""
        return float(self.epsilon)

    # ---- what a subclass gives

    @abstractmethod
    def _support(self) -> tuple[float, float]:
        """``(p, q)``: P(the report supports the true value), P(it supports one given other
        value)."""

    @property
    @abstractmethod
    def epsilon(self) -> float:
        """The exact epsilon (closed form from the parameters)."""

    # Proof note (threshold rounding toward privacy, docs/architecture.md#proof-notes).
    # Claim: each oracle's implemented_epsilon bounds the epsilon of the channel its integer
    # thresholds realise and is at most `epsilon`.  Argument, oracle by oracle:
    # * unary encoding: q is drawn as t / 2**L exactly (L <= 32 binary digits; a q that needs
    #   more is rounded up, toward 1/2, where ln((1 - q) / q) is smaller); OUE's p = 1/2 is
    #   one bit of a word, SUE's p = 1 - q a flipped lane: the closed form at the drawn q;
    # * Hadamard response: the row is uniform (top bits of a word, K a power of two), so q
    #   = 1/2 exactly; the flip threshold ceil((1 - p) 2**53) rounds the smaller probability
    #   up, so p' = 1 - t / 2**53 <= p and ln(p' / (1 - p')) <= ln(p / (1 - p));
    # * local hashing (multiply-shift and linear): randomized response over the g buckets,
    #   the categorical design's keep threshold (its proof note in designs/_categorical.py);
    #   the hash words do not depend on the value;
    # * subset selection: the inclusion threshold is lowered until _bound, the largest log
    #   ratio over the four cases of x, x' in or out of the subset (with the multiply-shift
    #   draws' spread from uniform), plus a slack above the float error of its sums and
    #   logs, is at most `epsilon`.
    # The closed forms (ln((1 - q) / q), ln(p / (1 - p))) are float logs of a float ratio, as
    # for the binary designs: within ~1e-16 absolute of the exact value, not recomputed
    # because every spec states them.  Checked by tests/test_implemented_epsilon.py::
    # test_unary_encoding_realises_at_most_its_epsilon, ::test_hadamard_response_realises_
    # at_most_its_epsilon, ::test_subset_selection_states_a_bound_on_its_realised_epsilon
    # (the channel enumerated exactly over the word outcomes), ::test_local_hashing_states_
    # its_implemented_epsilon_past_the_dense_limit, and tests/test_oracles.py::test_local_
    # hashing_implemented_epsilon_is_at_most_the_stated_one_exactly (sweeps of epsilon).
    @property
    @abstractmethod
    def implemented_epsilon(self) -> float:
        """An upper bound on the epsilon of the randomizer as implemented, computed from its
        integer thresholds: never above :attr:`epsilon` (thresholds round toward privacy)."""

    @property
    @abstractmethod
    def words_per_report(self) -> int:
        """64-bit words one report consumes, whatever the value."""

    @property
    @abstractmethod
    def n_reports(self) -> int:
        """The size of a report's value space as its question spec states it (the bits of a
        bit-vector report, the buckets of a hashed one, the values of a numbered one)."""

    @abstractmethod
    def randomize(self, values: npt.ArrayLike, *, rng: Any = None) -> npt.NDArray[Any]:
        """Reports for the values ``0..k-1`` (CSPRNG unless ``rng`` is given)."""

    @abstractmethod
    def _support_counts(self, reports: Any) -> tuple[npt.NDArray[np.int64], int]:
        """``(counts of the k values, n)`` of a batch of reports (validated)."""

    @abstractmethod
    def _supports(self, reports: Any, value: int) -> npt.NDArray[np.bool_]:
        """Whether each (validated) report supports ``value``."""

    def check_reports(self, reports: Any) -> None:
        """Refuse reports this oracle cannot have made (wrong shape, dtype or range), as
        :meth:`tally` would, without counting them (O(n) whatever ``k``)."""
        self._check_reports(reports)

    def _check_reports(self, reports: Any) -> None:
        self._support_counts(reports)  # a subclass with costly decoding overrides this

    @abstractmethod
    def _spec(self) -> tuple[str, int, dict[str, Any]]:
        """``(algorithm, words per report, constants)`` of its spec (``oracles._spec``)."""

    def supports(self, reports: Any, value: int) -> npt.NDArray[np.bool_]:
        """Whether each report supports ``value`` (its tally counts these): a boolean array
        with one entry per report.  ``tally(reports).counts[value]`` is its sum."""
        j = v.integer("value", value, minimum=0, maximum=self.k - 1)
        return self._supports(reports, j)

    # ---- channel

    @property
    def n_truths(self) -> int:
        """Number of input values, ``k``."""
        return self.k

    @property
    def channel(self) -> Channel:
        """:class:`~deniable.designs.SupportChannel` ``(k, p, q)``: cell ``j < k`` counts the
        reports that support ``j``, the last cell the reports."""
        p, q = self._support()
        return SupportChannel(self.k, p, q)

    @property
    def report_labels(self) -> tuple[str, ...]:
        """Labels of the tally's cells: ``support 0 .. support k-1``, ``n``."""
        return (*(f"support {j}" for j in range(self.k)), "n")

    def variance(
        self, n: int, frequencies: npt.ArrayLike | None = None, *, population: str = "fixed"
    ) -> FloatArray:
        """Variance of each category's estimate from ``n`` reports at the true
        ``frequencies`` (default uniform): for the ``fixed`` population of the ``n``
        respondents, Wang et al.'s exact variance (:func:`~deniable.oracles.exact_variance`,
        the default, by which oracles are compared); for respondents drawn ``iid`` from a
        population, :func:`~deniable.oracles.sampling_variance`."""
        v.choice("population", population, ("fixed", "iid"))
        if population == "iid":
            return sampling_variance(self, n, frequencies)
        return exact_variance(self, n, frequencies)

    # ---- values

    def _values(self, values: npt.ArrayLike) -> npt.NDArray[np.integer[Any]]:
        return v.reports_array("values", values, categories=self.k)

    # ---- tally

    @property
    def _tally_cells(self) -> int:
        return self.k + 1

    def _tally_layout(self) -> str:
        return f"a support count for each of k = {self.k} values, then n"

    def _check_counts(self, counts: npt.NDArray[np.int64]) -> None:
        n = int(counts[-1])
        if int(counts[:-1].max()) > n:
            j = int(np.argmax(counts[:-1]))
            raise DataError(
                f"a support count must be at most the number of reports n = {n} (the last "
                f"cell), got {int(counts[j])} for value {j}."
            )

    def _reports_in(self, tally: Tally) -> int:
        return int(tally.counts[-1])

    def tally(self, reports: npt.ArrayLike) -> Tally:
        """The support count of every value and the number of reports: a
        :class:`~deniable.designs.Tally` of ``k + 1`` cells bound to ``key`` (adds
        across batches; memory O(k) beyond the reports)."""
        counts, n = self._support_counts(reports)
        if n > MAX_COUNT:  # pragma: no cover - needs 10**18 reports in memory
            raise DataError(f"too many reports for one tally (at most {MAX_COUNT}).")
        out = np.empty(self.k + 1, dtype=np.int64)
        out[: self.k] = counts
        out[self.k] = n
        return Tally(out, mechanism=self.key)

    # ---- estimate

    def _channel_fields(self) -> dict[str, Any]:
        p, q = self._support()
        return {"p": p, "q": q}

    def estimate(self, data: Any) -> FrequencyEstimate:
        """The unbiased frequency of every value, with both variance conventions and
        intervals (:class:`~deniable.designs.FrequencyEstimate`), from reports or a tally."""
        tally = self._as_tally(data)
        p, q = self._support()
        counts = tally.counts
        return FrequencyEstimate.from_counts(self, tally, counts[:-1], int(counts[-1]), p, q)


def check_k(value: Any, maximum: int) -> int:
    """``k``: an integer in ``[2, maximum]``."""
    return v.integer("k", value, minimum=2, maximum=maximum)


def check_epsilon(value: Any) -> float:
    """A requested epsilon: a finite real > 0 (NaN, infinity and 0 refused by name)."""
    return v.positive("epsilon", value)


def open_probability(name: str, value: Any, low: float, high: float) -> float:
    """A probability strictly inside ``(low, high)``."""
    x = v.real(name, value)
    if not low < x < high:
        raise ParameterError(f"`{name}` must be in ({low:g}, {high:g}), got {value!r}.")
    return x


def as_uint_array(name: str, reports: Any, *, ndim: int) -> npt.NDArray[Any]:
    """``reports`` as an unsigned/signed integer numpy array of ``ndim`` dimensions."""
    if isinstance(reports, str | bytes):
        raise ParameterTypeError(
            f"`{name}` must be an array of reports, got {type(reports).__name__}."
        )
    arr = np.asarray(reports)
    if arr.ndim != ndim:
        raise DataError(
            f"`{name}` must be a {ndim}-D array of reports, got an array of shape {arr.shape}."
        )
    if arr.dtype.kind not in "iu" and not (arr.size == 0 and arr.dtype.kind == "f"):
        raise DataError(f"`{name}` must hold integers, got dtype {arr.dtype}.")
    return arr


def outside(arr: npt.NDArray[Any], n: int) -> int | None:
    """The value of the integer array ``arr`` that is not in ``0..n-1`` (its least if that
    is negative, else its greatest), or ``None`` when every value is."""
    if not arr.size:
        return None
    low, high = int(arr.min()), int(arr.max())
    return low if low < 0 else high if high >= n else None


def check_indices(name: str, arr: npt.NDArray[Any], n: int) -> None:
    """Refuse (:class:`~deniable.exceptions.DataError`) an integer array ``arr`` with a
    value outside ``0..n-1``, naming it as :func:`outside` finds it."""
    bad = outside(arr, n)
    if bad is not None:
        raise DataError(f"`{name}` must be in 0..{n - 1}, got {bad}.")


def log_ratio(a: float, b: float) -> float:
    """``ln(a / b)`` for positive ``a``, ``b`` (``inf`` when ``b`` is 0)."""
    return math.inf if b == 0 else math.log(a / b)
