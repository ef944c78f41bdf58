"""Two-group designs: the sample is split at random into two groups randomized differently.

A second group buys a second parameter: the unknown prevalence of an unrelated question, the
share of cheaters, or the honesty of carriers.  Every two-group design here is linear in two
"free" parameters ``phi``: the probability of a "yes" report in group ``g`` is

    ``lambda_g = c_g + M[g] @ phi``     (``M`` a 2 x 2 matrix, invertible when identifiable),

so the moment estimator solves two equations in two unknowns, ``phi_hat = M^-1 (lambda_hat
- c)``, and is exactly unbiased for ``phi``.  The reported parameters are functions of
``phi`` (for the stochastic lie detector ``phi = (pi, pi t)`` and ``t = phi_2 / phi_1``).
Standard errors come from the delta method,

    ``Cov(phi_hat) = M^-1 diag(lambda_g (1 - lambda_g) / n_g) M^-T``,

with ``n_g`` (plug-in) or ``n_g - 1`` (unbiased), and ``J Cov J^T`` for the reported
parameters (``J`` their Jacobian).  Because ``(lambda_1, lambda_2)`` are the two binomial
means, the same matrix inverts the full Fisher information of both binomials: it is the
efficient asymptotic variance with every nuisance parameter estimated.

The bounded maximum-likelihood estimate maximises the two-binomial log-likelihood over the
parameter space, a polygon in ``phi``.  The log-likelihood is concave in ``phi``; when the
moment estimate lies in the polygon it is the MLE, otherwise the maximum is on an edge and is
found by a bounded one-dimensional search on each edge (``scipy.optimize.minimize_scalar``).

Reports.  A respondent's report carries the group: ``2 (group - 1) + answer`` (values 0..3,
"no" and "yes" of group 1, then of group 2), so a tally has four cells and the design fits
the one mechanism protocol (:class:`~deniable.designs.Mechanism`).  The inputs of
:meth:`TwoGroupDesign.randomize` are respondent types (:attr:`respondent_types`;
:meth:`TwoGroupDesign.types` builds them from the answers and the latent indicator), and
each respondent's group is drawn with probability ``group_share`` (or given); data whose
groups sit in a separate column are combined by :meth:`TwoGroupDesign.encode`.

Privacy.  Each group's randomization is a channel ``P[report | respondent type]``; a type
is the true answer together with whatever else drives the report (the answer to the unrelated
question, being a cheater, a carrier's honesty).  The neighbouring relation is *replace one
respondent by one of another type with a different true answer*: a design's epsilon is the
largest ``ln(P[r | type] / P[r | type'])`` over both groups, reports ``r`` and pairs of
types whose true answers differ (:func:`types_epsilon`).  The group is known to the
collector, so the two groups are not mixed.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.designs._base import Design
from deniable.designs._channel import DenseChannel
from deniable.designs._tally import Tally
from deniable.designs._twogroup_fit import (
    polygon_mle,
    single_group_intervals,
    two_binomial_loglik,
)
from deniable.designs._twogroup_results import TwoGroupEstimate, group_counts, is_pair
from deniable.exceptions import DataError, ParameterError
from deniable.randomness import (
    CHUNK,
    binary_thresholds,
    probability_threshold,
    random_words,
    resolve_rng,
)
from deniable.results import Estimate

#: The two-group algorithm of question specs: version 2 draws the group (one word) and
#: reports ``2 (group - 1) + answer``; version 1 took the group as an input and reported
#: the answer.
TWO_GROUP_ALGORITHM = "two-group/2"

__all__ = ["TWO_GROUP_ALGORITHM", "FloatArray", "RespondentType", "TwoGroupDesign", "types_epsilon"]

FloatArray = npt.NDArray[np.float64]


class RespondentType(NamedTuple):
    """One kind of respondent: a label, the true answer (0/1), and whether it complies."""

    label: str
    truth: int
    compliant: bool


def types_epsilon(
    channels: Sequence[npt.ArrayLike], types: Sequence[RespondentType], *, compliant: bool = False
) -> float:
    """Epsilon of per-group channels ``P[report, type]`` between types with different answers.

    ``max over groups, reports r and types i, j with truth_i != truth_j of
    ln(P[r | i] / P[r | j])``; ``math.inf`` when a report is possible for one such type and
    impossible for the other.  With ``compliant=True`` only compliant types are compared.
    """
    keep = [i for i, t in enumerate(types) if t.compliant or not compliant]
    eps = 0.0
    for channel in channels:
        p = np.asarray(channel, dtype=float)
        for row in p:
            for i in keep:
                for j in keep:
                    if types[i].truth == types[j].truth or row[i] == 0.0:
                        continue
                    if row[j] == 0.0:
                        return math.inf
                    eps = max(eps, math.log(row[i] / row[j]))
    return eps


# --------------------------------------------------------------------------- design


@dataclass(frozen=True, repr=False)
class TwoGroupDesign(Design):
    """Base of the two-group designs: group channels, epsilon, randomizer, tally, estimator.

    Subclasses give the per-group channel over :attr:`respondent_types`, the linear system
    ``lambda = c + M phi``, the map from ``phi`` to the reported parameters, and the
    parameter polygon.  Groups are labelled 1 and 2 (as in RRreg's ``group`` vector).

    ``group_share`` (keyword, default 1/2) is the probability that :meth:`randomize` puts a
    respondent in group 1.  It does not enter the estimator (which conditions on the group
    sizes) nor epsilon (the group is public); it is a parameter of the mechanism, listed by
    :meth:`parameters` when it is not 1/2.
    """

    group_share: float = field(default=0.5, kw_only=True)

    #: Names of the estimated parameters, the prevalence first.
    estimated: ClassVar[tuple[str, ...]]
    #: The kinds of respondent, in the column order of :meth:`group_channel`.
    respondent_types: ClassVar[tuple[RespondentType, ...]]
    #: Truth keyword of the nuisance parameter -> its default (``None``: must be given).
    nuisance: ClassVar[Mapping[str, float | None]]
    #: Corners of the parameter polygon in ``phi``, counter-clockwise.
    vertices: ClassVar[tuple[tuple[float, float], ...]]
    #: The keyword of :meth:`types` for the latent indicator (``unrelated``, ``cheater``,
    #: ``honest``) and its default (``None``: required).
    latent: ClassVar[tuple[str, int | None]]

    def _check_group_share(self) -> None:
        share = v.probability("group_share", self.group_share, low_open=True, high_open=True)
        object.__setattr__(self, "group_share", v.realizable("group_share", share))
        v.realizable("1 - group_share", 1 - share)

    def parameters(self) -> dict[str, Any]:
        """The design's parameters by name (``group_share`` only when it is not 1/2)."""
        out = super().parameters()
        share = out.pop("group_share")
        if share != 0.5:
            out["group_share"] = share  # last, after the design's own parameters
        return out

    def __repr__(self) -> str:
        body = ", ".join(f"{k}={x!r}" for k, x in self.parameters().items())
        return f"{type(self).__name__}({body})"

    # ---- what a design supplies

    def group_channel(self, group: int) -> FloatArray:
        """``P[report, type]`` in group ``group`` (1 or 2); rows "no", "yes"."""
        g = v.integer("group", group, minimum=1, maximum=2)
        yes = np.asarray(self._yes_probabilities(g), dtype=float)
        return np.vstack([1 - yes, yes])

    @abstractmethod
    def _yes_probabilities(self, group: int) -> tuple[float, ...]:
        """P("yes" | type) in ``group``, in the order of :attr:`respondent_types`."""

    @abstractmethod
    def linear_system(self) -> tuple[FloatArray, FloatArray]:
        """``(c, M)`` with ``lambda_g = c_g + M[g] @ phi`` for the free parameters ``phi``."""

    @abstractmethod
    def _outputs(self, phi: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Reported parameters at ``phi`` and their Jacobian ``d output / d phi``."""

    @abstractmethod
    def _affine_outputs(self) -> tuple[tuple[tuple[float, float], float] | None, ...]:
        """Per output ``(row, const)`` with ``output = row @ phi + const``; ``None`` if not
        affine."""

    @abstractmethod
    def _truth(self, truth: Mapping[str, Any]) -> tuple[FloatArray, FloatArray]:
        """``phi`` from the truth keywords (validated), and ``d lambda_g / d prevalence``
        with the nuisance parameter held fixed."""

    # ---- the Design contract

    @property
    def channel(self) -> DenseChannel:
        """``P[report, type]`` with report ``2 (group - 1) + answer``: the group channels
        stacked, weighted by the group probabilities ``group_share`` and
        ``1 - group_share``.  Columns are :attr:`respondent_types`."""
        w1 = self.group_share
        return DenseChannel(
            np.vstack([w1 * self.group_channel(1), (1 - w1) * self.group_channel(2)])
        )

    @property
    def report_labels(self) -> tuple[str, ...]:
        return ("group 1 no", "group 1 yes", "group 2 no", "group 2 yes")

    @property
    def n_groups(self) -> int:
        return 2

    def thresholds(self, group: int) -> tuple[int, ...]:
        """Integer thresholds per type in ``group``: "yes" iff ``word >> 11 < t[type]``.

        0 and 1 are exact; when a group has two probabilities strictly between 0 and 1 the
        larger is rounded down and the smaller up
        (:func:`~deniable.randomness.binary_thresholds`), so the implemented channel is never
        less private than the stated one.
        """
        yes = self._yes_probabilities(v.integer("group", group, minimum=1, maximum=2))
        inner = sorted({p for p in yes if 0 < p < 1})
        exact = {0.0: 0, 1.0: 1 << 53}
        if len(inner) == 2:
            t_lo, t_hi = binary_thresholds(inner[1], inner[0])
            exact.update({inner[0]: t_lo, inner[1]: t_hi})
        return tuple(exact[p] if p in exact else probability_threshold(p) for p in yes)

    def _spec_algorithm(self) -> tuple[str, int, dict[str, Any]]:
        # first the group word (group 1 iff below `group`), then the answer word
        table = [list(self.thresholds(1)), list(self.thresholds(2))]
        return TWO_GROUP_ALGORITHM, 2, {"group": self.group_threshold(), "yes": table}

    def group_threshold(self) -> int:
        """Integer threshold of the group draw: group 1 iff ``word >> 11 < t``."""
        return probability_threshold(self.group_share)

    def implemented_group_channel(self, group: int) -> FloatArray:
        """The channel of ``group`` that the randomizer realises exactly (thresholds / 2**53)."""
        yes = np.array(self.thresholds(group), dtype=float) / 2.0**53
        return np.vstack([1 - yes, yes])

    @property
    def implemented_channel(self) -> DenseChannel:
        """The implemented group channels, weighted by the implemented group probability."""
        w1 = self.group_threshold() / 2.0**53
        return DenseChannel(
            np.vstack(
                [w1 * self.implemented_group_channel(1),
                 (1 - w1) * self.implemented_group_channel(2)]
            )
        )  # fmt: skip

    @property
    def epsilon_compliant(self) -> float:
        """Epsilon between compliant types only (everyone follows the instructions).

        Not the design's epsilon: a respondent who does not comply (a cheater, a lying
        carrier) is a possible neighbour, and :attr:`~deniable.designs.Design.epsilon` counts them.
        """
        return types_epsilon(
            [self.group_channel(1), self.group_channel(2)], self.respondent_types, compliant=True
        )

    def _group_array(self, group: Any, size: int) -> npt.NDArray[np.intp]:
        if group is None:
            raise DataError(
                f"design {self.name!r} needs two groups: give `groups` (1 or 2 per respondent)."
            )
        arr = np.asarray(group)
        if arr.ndim == 0:
            arr = arr.reshape(1)
        ok_kind = arr.dtype.kind in "iu" or (
            arr.dtype.kind == "f" and bool(np.all(arr == np.floor(arr)))
        )
        if arr.ndim != 1 or not ok_kind:
            raise DataError(f"`group` must be a 1-D array of 1 and 2, got {arr.dtype} {arr.shape}.")
        bad = arr[(arr != 1) & (arr != 2)]
        if bad.size:
            # the value as written (3), not numpy's repr (np.int64(3), np.float64(3.0))
            first = bad[0].item()
            shown = int(first) if isinstance(first, float) and first.is_integer() else first
            raise DataError(f"`group` must hold 1 or 2 (first or second group), got {shown}.")
        if arr.size != size:
            raise DataError(f"`group` must have one entry per respondent ({size}), got {arr.size}.")
        return arr.astype(np.intp)

    @abstractmethod
    def _types_of(
        self, x: npt.NDArray[np.intp], latent: npt.NDArray[np.intp]
    ) -> npt.NDArray[np.intp]:
        """Type indices from 0/1 answers and the 0/1 latent indicator."""

    def types(self, truth: npt.ArrayLike, **latent: npt.ArrayLike | None) -> npt.NDArray[np.intp]:
        """Respondent types (indices into :attr:`respondent_types`, the inputs of
        :meth:`randomize`) from 0/1 answers and the design's latent indicator: ``unrelated``
        (each respondent's answer to the unrelated question; required), ``cheater`` (1 =
        always says "no"; default nobody) or ``honest`` (1 = a carrier who answers honestly;
        default everyone)."""
        x = v.reports_array("truth", truth, categories=2).astype(np.intp)
        keyword, default = self.latent
        unknown = [k for k in latent if k != keyword]
        if unknown:
            raise ParameterError(
                f"design {self.name!r} takes the latent indicator `{keyword}`, got "
                f"{', '.join(repr(k) for k in unknown)}."
            )
        values = latent.get(keyword)
        if values is None:
            if default is None:
                raise ParameterError(
                    f"`{keyword}` (each respondent's 0/1 answer to the unrelated question) is "
                    "required."
                )
            ind = np.full(x.size, default, dtype=np.intp)
        else:
            arr = v.reports_array(keyword, values, categories=2)
            if arr.size != x.size:
                raise DataError(
                    f"`{keyword}` must have one entry per respondent ({x.size}), got {arr.size}."
                )
            ind = arr.astype(np.intp)
        return self._types_of(x, ind)

    def randomize(
        self, types: npt.ArrayLike, *, group: npt.ArrayLike | None = None, rng: Any = None
    ) -> npt.NDArray[np.uint8]:
        """Reports ``2 (group - 1) + answer`` (0..3) for respondents of the given ``types``
        (indices into :attr:`respondent_types`; :meth:`types` builds them).

        Each respondent's group is drawn (group 1 with probability ``group_share``: one
        64-bit word each, for the whole sample first) unless ``group`` (1 or 2 per
        respondent) is given; then one word per respondent decides "yes" as
        ``word >> 11 < t[group, type]``, the same work for every type.
        """
        t = v.reports_array("types", types, categories=len(self.respondent_types)).astype(np.intp)
        gen = resolve_rng(rng)
        if group is None:
            g = np.empty(t.size, dtype=np.intp)
            thr = self.group_threshold()
            for start in range(0, t.size, CHUNK):
                stop = min(start + CHUNK, t.size)
                words = random_words(gen, stop - start)
                # group 2 iff the word is not below the threshold
                g[start:stop] = 1 + ((words >> np.uint64(11)) >= thr)
        else:
            g = self._group_array(group, t.size)
        answers = self._randomize_types(t, g, gen)
        out = np.asarray(2 * (g - 1), dtype=np.uint8)
        out += answers
        return out

    def _randomize_types(
        self, types: npt.NDArray[np.intp], group: npt.NDArray[np.intp], rng: Any
    ) -> npt.NDArray[np.uint8]:
        """One 64-bit word per respondent: "yes" iff ``word >> 11 < t[group, type]``, with
        ``t`` the 53-bit threshold of the channel entry: the same work for every type."""
        gen = resolve_rng(rng)
        m = len(self.respondent_types)
        table = np.array([t for g in (1, 2) for t in self.thresholds(g)], dtype=np.uint64)
        out = np.empty(types.size, dtype=np.uint8)
        for start in range(0, types.size, CHUNK):
            stop = min(start + CHUNK, types.size)
            words = random_words(gen, stop - start)
            thresholds = table[(group[start:stop] - 1) * m + types[start:stop]]
            np.less(words >> np.uint64(11), thresholds, out=out[start:stop].view(np.bool_))
        return out

    def encode(
        self, answers: npt.ArrayLike, groups: npt.ArrayLike | None = None
    ) -> npt.NDArray[np.uint8]:
        """Reports ``2 (group - 1) + answer`` from a column of 0/1 randomized answers and a
        column of groups (1 or 2): data collected with the group in its own column."""
        a = v.reports_array("reports", answers, categories=2)
        g = self._group_array(groups, a.size)
        out = np.asarray(2 * (g - 1), dtype=np.uint8)
        out += a.astype(np.uint8, copy=False)
        return out

    def tally_groups(self, yes: Sequence[int], n: Sequence[int]) -> Tally:
        """The tally of ``yes = (y1, y2)`` "yes" reports among ``n = (n1, n2)``."""
        if not (is_pair(yes) and is_pair(n)):
            raise DataError(
                f"design {self.name!r} needs two groups: give `yes` and `n` as pairs "
                f"(y1, y2) and (n1, n2), got yes={yes!r}, n={n!r}."
            )
        counts: list[int] = []
        for g in (1, 2):
            ng = v.integer(f"n{g}", n[g - 1], minimum=0)
            yg = v.integer(f"yes{g}", yes[g - 1], minimum=0)
            if yg > ng:
                raise DataError(f"`yes{g}` must be in [0, n{g}] = [0, {ng}], got {yg}.")
            counts += [ng - yg, yg]
        return self.tally_counts(counts)

    _takes_yes_n: ClassVar[bool] = True

    def _tally_of_yes(self, yes: Any, n: Any) -> Tally:
        return self.tally_groups(yes, n)

    def _as_tally(self, data: Any, yes: Any = None, n: Any = None) -> Tally:
        """Also a pair of per-group binary tallies; a single unbound binary tally (one
        group) is refused, and so is a tally where a group has no reports."""
        if data is None and (yes is None or n is None):
            raise DataError(
                "give reports (2 (group - 1) + answer; design.encode(answers, groups)), a "
                "Tally of 4 counts, or `yes` and `n` as pairs (y1, y2) and (n1, n2)."
            )
        if isinstance(data, Tally) and len(data.counts) == 2 and data.mechanism is None:
            raise DataError(
                f"design {self.name!r} needs two groups: got a Tally of one group (2 counts); "
                "give the 4 counts (no1, yes1, no2, yes2) or a pair of per-group Tallies."
            )
        if (
            isinstance(data, tuple | list)
            and len(data) == 2
            and all(isinstance(t, Tally) for t in data)
        ):
            for g, t in enumerate(data, start=1):
                if len(t.counts) != 2:
                    raise DataError(f"group {g} must be a binary Tally (no, yes), got {t!r}.")
            data = self.tally_counts([*data[0].counts.tolist(), *data[1].counts.tolist()])
        return super()._as_tally(data, yes, n)

    def _refuse_empty(self, tally: Tally) -> None:
        _, ns = group_counts(tally)
        for g, ng in enumerate(ns, start=1):
            if ng == 0:
                raise DataError(
                    f"design {self.name!r} needs two groups: group {g} has no reports (n{g} = 0)."
                )

    # ---- estimation

    def _lambda(self, phi: FloatArray) -> FloatArray:
        c, m = self.linear_system()
        return np.clip(c + m @ phi, 0.0, 1.0)

    def _loglik(self, phi: FloatArray, y: FloatArray, n: FloatArray) -> float:
        return two_binomial_loglik(self._lambda(phi), y, n)

    def estimate(
        self,
        data: Any = None,
        *,
        yes: Sequence[int] | None = None,
        n: Sequence[int] | None = None,
    ) -> TwoGroupEstimate:
        """Estimate every parameter from reports (``2 (group - 1) + answer``), a
        :class:`~deniable.designs.Tally` of the 4 counts ``(no1, yes1, no2, yes2)``, a pair of
        per-group Tallies, or ``yes=(y1, y2)`` and ``n=(n1, n2)``.

        Moment estimates (unbiased for the linear parameters), the bounded MLE, delta-method
        SEs with ``n_g`` and with ``n_g - 1``, Wald intervals, and exact (Clopper-Pearson) and
        Wilson intervals for a parameter that depends on one group's share alone.
        """
        tally = self._as_tally(data, yes, n)
        ys, ns = group_counts(tally)
        y = np.array(ys, dtype=float)
        nn = np.array(ns, dtype=float)
        lam = y / nn
        c, m = self.linear_system()
        m_inv = np.asarray(np.linalg.inv(m), dtype=np.float64)
        phi = m_inv @ (lam - c)
        values, jac = self._outputs(phi)
        spread = lam * (1 - lam)
        with np.errstate(divide="ignore", invalid="ignore"):
            var_unb = np.where(nn > 1, spread / np.maximum(nn - 1, 1), np.nan)
        covs = []
        for var in (spread / nn, var_unb):
            cov_phi = m_inv @ np.diag(var) @ m_inv.T
            covs.append(jac @ cov_phi @ jac.T)
        phi_mle = polygon_mle(lambda p: self._loglik(p, y, nn), phi, self.vertices)
        bounded, _ = self._outputs(phi_mle)
        bounded = np.where(np.isnan(bounded), bounded, np.clip(bounded, 0.0, 1.0))
        affine = self._affine_outputs()
        estimates: dict[str, Estimate] = {}
        for i, pname in enumerate(self.estimated):
            estimates[pname] = Estimate(
                value=float(values[i]),
                bounded=float(bounded[i]),
                se=math.sqrt(covs[0][i, i]) if covs[0][i, i] >= 0 else math.nan,
                se_unbiased=math.sqrt(covs[1][i, i]) if covs[1][i, i] >= 0 else math.nan,
                n=tally.n,
                method="moment",
                parameter=pname,
                intervals=single_group_intervals(affine[i], m_inv, c, ys, ns),
            )
        return TwoGroupEstimate(
            design=self,
            tally=tally,
            estimates=estimates,
            covariance=covs[0],
            covariance_unbiased=covs[1],
            log_likelihood=self._loglik(phi_mle, y, nn),
        )

    # ---- planning

    def _truth_values(self, truth: Mapping[str, Any], allowed: Sequence[str]) -> dict[str, float]:
        """Validate truth keywords: known names, probabilities, ``prevalence`` given."""
        unknown = [k for k in truth if k not in allowed]
        if unknown:
            raise ParameterError(
                f"design {self.name!r} takes truth keywords {', '.join(allowed)}; "
                f"got unknown {', '.join(repr(u) for u in unknown)}."
            )
        if "prevalence" not in truth:
            raise ParameterError(f"design {self.name!r} needs the true `prevalence`.")
        return {k: v.probability(k, x) for k, x in truth.items()}

    def _nuisance_value(self, values: Mapping[str, float], key: str) -> float:
        if key in values:
            return values[key]
        default = self.nuisance.get(key)
        if default is None:
            raise ParameterError(
                f"design {self.name!r} needs the true `{key}` (e.g. {key}=0.3); it has no default."
            )
        return default

    def _planning(
        self, n1: Any, n2: Any, truth: Mapping[str, Any]
    ) -> tuple[FloatArray, FloatArray]:
        """Per-group ``lambda_g (1 - lambda_g) / n_g`` at the truth, and the known slopes."""
        n = np.array([v.positive("n1", n1), v.positive("n2", n2)])
        phi, slopes = self._truth(truth)
        lam = self._lambda(phi)
        return lam * (1 - lam) / n, slopes

    def prevalence_variance(self, n1: float, n2: float, **truth: float) -> float:
        """Asymptotic variance of the prevalence estimate with the nuisance parameter estimated.

        The ``(prevalence, prevalence)`` entry of the inverse of the full Fisher information of
        both binomials, ``I = sum_g n_g grad(lambda_g) grad(lambda_g)^T / (lambda_g (1 -
        lambda_g))``, which is ``[M^-1 diag(lambda_g (1 - lambda_g) / n_g) M^-T]_11`` (the
        delta-method variance of the moment estimator).  ``n1``, ``n2`` may be non-integral
        (for sample-size searches).  Truth keywords: see :attr:`nuisance` and the design.
        """
        var, _ = self._planning(n1, n2, truth)
        _, m = self.linear_system()
        m_inv = np.asarray(np.linalg.inv(m), dtype=np.float64)
        return float((m_inv @ np.diag(var) @ m_inv.T)[0, 0])

    def prevalence_variance_known(self, n1: float, n2: float, **truth: float) -> float:
        """Asymptotic variance of the prevalence estimate if the nuisance were known ("naive").

        ``1 / sum_g n_g (d lambda_g / d pi)^2 / (lambda_g (1 - lambda_g))`` with the nuisance
        parameter (see :attr:`nuisance`) held fixed.  Never larger than
        :meth:`prevalence_variance`; the gap is the price of not knowing the nuisance.
        """
        var, slopes = self._planning(n1, n2, truth)
        info = 0.0
        for d, s in zip(slopes, var, strict=True):
            if d == 0:
                continue
            if s == 0:
                return 0.0  # a group with lambda in {0, 1} pins the prevalence down
            info += float(d * d / s)
        return math.inf if info == 0 else 1.0 / info
