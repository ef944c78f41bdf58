"""Seeded simulation: one synthetic survey (:func:`simulate`) for any design, or a Monte Carlo
study of an estimator's bias, standard error, interval coverage and power
(:func:`~deniable.simulation.simulation_study`, in ``_study``).

A simulated survey can mix in two things real surveys have: **groups** with different
prevalences (to study grouped estimates), and **non-compliance**: a share ``s`` of
respondents who say "no" whatever the randomizer tells them (self-protective no-sayers;
see e.g. Clark & Desharnais 1998, Ostapczuk et al. 2009).  With a binary design whose
compliant respondents say "yes" with probability ``lambda_c = P0 + pi (P1 - P0)``,

    lambda = (1 - s) lambda_c + s * 0

so the moment estimator ``(lambda_hat - P0) / (P1 - P0)`` has expectation
``pi - s lambda_c / (P1 - P0)``: its bias ``-s lambda_c / (P1 - P0)`` is downward when
``P1 > P0`` (upward for a design with ``P1 < P0``, e.g. Warner with ``p < 1/2``).

Two-group designs (RRreg's ``RRgen`` for ``"UQTunknown"``, ``"CDM"``, ``"CDMsym"``,
``"SLD"``) also draw each respondent's group and the design's latent quantity; see
:mod:`deniable.simulation` for the population model and the estimands.
"""

from __future__ import annotations

import numbers
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from deniable.common import (
    epsilon_note,
    format_epsilon,
    format_interval,
    format_number,
    format_parameters,
    to_jsonable,
)
from deniable.common import validation as v
from deniable.designs import (
    Categorical,
    CategoricalEstimate,
    Design,
    DesignEstimate,
    Tally,
    TwoGroupDesign,
    TwoGroupEstimate,
)
from deniable.exceptions import ParameterError, ParameterTypeError
from deniable.randomness import resolve_rng
from deniable.results import Estimate, Result, Table
from deniable.simulation._population import (
    MAX_RESPONDENTS,
    group_sizes,
    realized_parameters,
    two_group_options,
)

__all__ = ["Simulation", "simulate"]

AnyEstimate = Estimate | CategoricalEstimate | TwoGroupEstimate


@dataclass(frozen=True, eq=False)  # numpy array fields: compare by identity
class Simulation(Result):
    """One simulated survey: true answers, randomized reports and the estimate from them.

    ``truth``, ``complied`` and ``latent`` exist only because this is a simulation: a real
    collector never sees them.  ``groups`` holds each respondent's group label (``None``
    without ``groups=``); ``complied[i]`` is ``False`` for a respondent who said "no"
    regardless of the randomizer (``None`` when everyone complied).

    Two-group designs: ``reports`` holds each respondent's randomized 0/1 answer and
    ``group`` the randomization group, 1 or 2 (the two columns a collector stores; ``group``
    is ``None`` for one-group designs; the design's reports are
    ``design.encode(reports, group)``), and ``latent`` maps the design's
    :meth:`~deniable.designs.TwoGroupDesign.types` keyword (``unrelated``, ``cheater`` or
    ``honest``) to the 0/1 latent indicator of every respondent; ``settings`` holds the
    two-group inputs used (``group_share`` and the latent share, defaults filled in);
    ``estimate`` is a :class:`~deniable.designs.TwoGroupEstimate`.

    ``prevalence`` is the prevalence the truths were drawn with (as given to
    :func:`simulate`).  :meth:`table` and :meth:`to_dict` show the truth beside the estimate
    and whether each interval covers it.
    """

    design: Design
    truth: npt.NDArray[np.integer[Any]] = field(repr=False)
    reports: npt.NDArray[np.integer[Any]] = field(repr=False)
    estimate: AnyEstimate
    seed: int | None
    groups: npt.NDArray[Any] | None = field(default=None, repr=False)
    complied: npt.NDArray[np.bool_] | None = field(default=None, repr=False)
    non_compliance: float = 0.0
    group: npt.NDArray[np.intp] | None = field(default=None, repr=False)
    latent: Mapping[str, npt.NDArray[np.uint8]] = field(default_factory=dict, repr=False)
    settings: Mapping[str, float] = field(default_factory=dict)
    prevalence: Any = None

    @property
    def n(self) -> int:
        return int(self.truth.size)

    def tally(self) -> Tally:
        """The design's tally of the simulated reports (both groups for a two-group
        design), as a collector would build it."""
        return self.design.tally(self.design.encode(self.reports, self.group))

    @property
    def true_share(self) -> float | npt.NDArray[np.float64]:
        """The realised share of carriers (of each category for categorical designs)."""
        if self.design.n_groups == 1 and self.design.n_truths > 2:  # a share per category
            return np.bincount(self.truth, minlength=self.design.n_truths) / self.n
        return float(np.count_nonzero(self.truth)) / self.n

    def true_parameters(self) -> dict[str, float]:
        """Two-group designs: every estimated parameter computed on this simulated
        population (e.g. the realised share of carriers who answer honestly); simulation
        only.  For the cheater detection models ``prevalence`` is the share of *honest*
        carriers."""
        if self.design.n_groups != 2:
            raise ParameterError(
                f"`true_parameters` is for two-group designs; design {self.design.name!r} "
                "estimates the prevalence alone (see `true_share`)."
            )
        (latent,) = self.latent.values()
        return realized_parameters(cast(TwoGroupDesign, self.design), self.truth, latent)

    def group_labels(self) -> list[Any]:
        """The distinct group labels, sorted (empty without groups)."""
        if self.groups is None:
            return []
        return [x.item() if isinstance(x, np.generic) else x for x in np.unique(self.groups)]

    def group_estimates(self) -> dict[Any, AnyEstimate]:
        """The estimate from each group's reports alone, by group label."""
        if self.groups is None:
            raise ParameterError("`groups`: this simulation has no groups (simulate(groups=...)).")
        d: Any = self.design
        out: dict[Any, AnyEstimate] = {}
        for g in self.group_labels():
            mask = self.groups == g
            rr_group = None if self.group is None else self.group[mask]
            out[g] = d.estimate(d.encode(self.reports[mask], rr_group))
        return out

    def _covers(self, level: float) -> tuple[str, dict[str, Any] | list[bool]]:
        """Which intervals cover the truth: ``(name, covers)`` of :meth:`to_dict`."""
        est: Any = self.estimate
        if self.design.n_groups == 2:
            truth = self.true_parameters()
            wald = {k: e.ci(level, "wald").covers(truth[k]) for k, e in est.estimates.items()}
            return "covers_wald", wald
        if self.design.n_truths > 2:  # (one group) a share per category
            share = np.asarray(self.true_share, dtype=float)
            ci = est.ci(level, "exact")
            return "covers_exact", [
                bool(lo <= x <= hi) for x, (lo, hi) in zip(share, ci, strict=True)
            ]
        share_1 = float(self.true_share)
        return "covers", {m: est.ci(level, m).covers(share_1) for m in est.interval_methods}

    def to_dict(self, level: float = 0.95) -> dict[str, Any]:
        """Plain-JSON dict: the estimate as ``deniable estimate`` gives it
        (:class:`~deniable.designs.DesignEstimate`), then ``seed``, ``prevalence``,
        ``non_compliance``, the two-group settings, the truth (``true_share``; one-group
        binary designs ``true_carriers``; two-group designs ``true_parameters``) and which
        intervals at ``level`` cover it (``covers``, ``covers_exact`` or ``covers_wald``)."""
        out = DesignEstimate(self.design, self.tally(), self.estimate, level).to_dict()
        out.update(seed=self.seed, prevalence=self.prevalence,
                   non_compliance=self.non_compliance, **self.settings)  # fmt: skip
        out["true_share"] = self.true_share
        if self.design.n_groups == 2:
            out["true_parameters"] = self.true_parameters()
        elif self.design.n_truths == 2:
            out["true_carriers"] = int(np.count_nonzero(self.truth))
        key, covers = self._covers(level)
        out[key] = covers
        result: dict[str, Any] = to_jsonable(out)
        return result

    def table(self, level: float = 0.95) -> Table:
        """The truth (simulation only) beside the estimate and its intervals at ``level``."""
        if self.design.n_groups == 2:
            return self._two_group_table(level)
        if self.design.n_truths > 2:
            return self._category_table(level)
        d, est = self.design, cast(Estimate, self.estimate)
        _, covers = self._covers(level)
        assert isinstance(covers, dict)
        rows = [
            ("design", f"{d.name} ({format_parameters(d.parameters())})"),
            ("ε", epsilon_note(d.epsilon)),
            ("n, seed", f"{self.n}, {self.seed}"),
            ("prevalence drawn from", f"{self.prevalence:g}"),
            ("true share (simulation only)", format_number(float(self.true_share), 6)),
            ("estimate (unbiased moment)" if est.method == "moment" else "estimate",
             format_number(est.value, 6)),
            ("estimate (bounded)", format_number(est.bounded, 6)),
            ("SE (plug-in, n) / (unbiased, n - 1)",
             f"{format_number(est.se, 6)} / {format_number(est.se_unbiased, 6)}"),
        ]  # fmt: skip
        if self.non_compliance > 0:
            rows.insert(4, ("non-compliance (always no)", f"{self.non_compliance:g}"))
        for m in est.interval_methods:
            mark = "covers the truth" if covers[m] else "misses the truth"
            rows.append((f"{level:.0%} CI ({m})", f"{est.ci(level, m).format(6)}  {mark}"))
        return Table.pairs(rows, title="Simulated survey: truth beside the estimate")

    def _category_table(self, level: float) -> Table:
        d, est = self.design, cast(CategoricalEstimate, self.estimate)
        share = np.asarray(self.true_share, dtype=float)
        ci = est.ci(level, "exact")
        rows = [
            (str(j), format_number(float(share[j])), format_number(float(est.values[j])),
             format_number(float(est.se[j])), format_interval(ci[j]),
             "yes" if lo <= share[j] <= hi else "no")
            for j, (lo, hi) in enumerate(ci)
        ]  # fmt: skip
        return Table(
            ("category", "true share (simulation only)", "estimate", "SE",
             f"{level:.0%} CI (exact)", "covers"),
            tuple(rows),
            title=f"Simulated survey: {d.name}, n = {self.n}, seed {self.seed}",
            notes=(f"ε = {format_epsilon(d.epsilon)}",),
            align="rrrrrr",
        )  # fmt: skip

    def _two_group_table(self, level: float) -> Table:
        d, est = self.design, cast(TwoGroupEstimate, self.estimate)
        truth = self.true_parameters()
        n1, n2 = est.n
        drawn = {"prevalence": self.prevalence, **self.settings,
                 "non_compliance": self.non_compliance}  # fmt: skip
        rows = [
            ("design", f"{d.name} ({format_parameters(d.parameters())})"),
            ("ε", epsilon_note(d.epsilon)),
            ("n (group 1 + group 2), seed", f"{n1 + n2} ({n1} + {n2}), {self.seed}"),
            ("drawn with", format_parameters(drawn)),
            ("true share (simulation only)", format_number(float(self.true_share), 6)),
        ]
        for g in (0, 1):
            y, ng = est.yes_counts[g], est.n_counts[g]
            rows.append((f"group {g + 1}: yes / n",
                         f"{y} / {ng}  (share {format_number(est.lambda_hat[g])})"))  # fmt: skip
        params = []
        for k, e in est.estimates.items():
            ci = e.ci(level, "wald")
            params.append((k, format_number(truth[k]), format_number(e.value),
                           format_number(e.bounded), format_number(e.se), ci.format(),
                           "yes" if ci.covers(truth[k]) else "no"))  # fmt: skip
        table = Table(
            ("parameter", "true value", "estimate", "MLE", "SE", f"{level:.0%} CI (Wald)",
             "covers"),
            tuple(params),
            notes=("true value: among these simulated respondents (simulation only); MLE: "
                   "bounded to the parameter space; SE: delta method, plug-in (n_g)",),
            align="lrrrrrr",
        )  # fmt: skip
        return Table.pairs(
            rows, title="Simulated two-group survey: truth beside the estimate", sections=(table,)
        )

    def to_frame(self, *, truth: bool = False) -> Any:
        """The reports (and groups) as a pandas DataFrame, one row per respondent.

        Columns ``group`` (with ``groups=``), ``rr_group`` (two-group designs: the
        randomization group, 1 or 2; pass it as ``analyze(..., group="rr_group")``) and
        ``report``.  ``truth=True`` adds ``truth``, ``complied`` and the latent indicator
        (``unrelated``, ``cheater`` or ``honest``), which exist only in a simulation.
        Needs ``pip install deniable[data]``.
        """
        from deniable.survey import require_pandas

        pd = require_pandas()
        cols: dict[str, Any] = {}
        if self.groups is not None:
            cols["group"] = self.groups
        if self.group is not None:
            cols["rr_group"] = self.group
        cols["report"] = self.reports
        if truth:
            cols["truth"] = self.truth
            cols["complied"] = (
                np.ones(self.n, dtype=bool) if self.complied is None else self.complied
            )
            cols.update(self.latent)
        return pd.DataFrame(cols)


def _group_assignment(
    gen: np.random.Generator, n: int, groups: Any
) -> tuple[npt.NDArray[Any], list[Any], npt.NDArray[np.intp]]:
    """``(labels per respondent, distinct labels, code of each respondent)``."""
    if isinstance(groups, Mapping):
        labels = list(groups)
        if not labels:
            raise ParameterError("`groups` must name at least one group, got an empty mapping.")
        shares = np.array(
            [v.probability(f"groups[{g!r}]", s) for g, s in groups.items()], dtype=float
        )
        if abs(shares.sum() - 1) > 1e-9:
            raise ParameterError(f"`groups` shares must sum to 1, got {shares.sum():.12g}.")
        kinds = {str if isinstance(x, str) else numbers.Real for x in labels}
        if len(kinds) != 1 or not all(isinstance(x, str | numbers.Real) for x in labels):
            raise ParameterTypeError(
                f"`groups` labels must be all numbers or all text, got {labels!r}."
            )
        table = np.asarray(labels)
        codes = gen.choice(len(labels), size=n, p=shares / shares.sum())
        per = table[codes]
        return per, labels, codes
    if isinstance(groups, str | bytes) or not hasattr(groups, "__len__"):
        raise ParameterTypeError(
            "`groups` must be a mapping {label: share} or a sequence of n labels, got "
            f"{type(groups).__name__} {groups!r}."
        )
    per = np.asarray(groups)
    if per.ndim != 1 or per.size != n:
        raise ParameterError(
            f"`groups` must hold one label per respondent (n = {n}), got shape {per.shape}."
        )
    try:
        uniq, codes = np.unique(per, return_inverse=True)
    except TypeError:
        raise ParameterTypeError(
            "`groups` labels must be sortable (all numbers or all text)."
        ) from None
    return per, [x.item() if isinstance(x, np.generic) else x for x in uniq], codes


def _per_group(prevalence: Mapping[Any, Any], labels: list[Any]) -> list[Any]:
    missing = [g for g in labels if g not in prevalence]
    if missing:
        raise ParameterError(
            f"`prevalence` must give a prevalence for every group {labels!r}; "
            f"missing {', '.join(repr(g) for g in missing)}."
        )
    return [prevalence[g] for g in labels]


def _prevalence_per_respondent(
    prevalence: Any, labels: list[Any], codes: npt.NDArray[np.intp]
) -> npt.NDArray[np.float64] | float:
    if not isinstance(prevalence, Mapping):
        return v.probability("prevalence", prevalence)
    values = _per_group(prevalence, labels)
    pairs = zip(labels, values, strict=True)
    table = np.array([v.probability(f"prevalence[{g!r}]", x) for g, x in pairs])
    return table[codes]


def _category_vector(name: str, value: Any, k: int) -> npt.NDArray[np.float64]:
    try:
        probs = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        probs = np.array([np.nan])
    if probs.shape != (k,) or not np.all(probs >= 0) or abs(probs.sum() - 1) > 1e-9:
        raise ParameterError(
            f"`{name}` must be a probability vector of length k = {k}, got {value!r}."
        )
    return probs


def _categorical_truth(
    gen: np.random.Generator, design: Categorical, n: int, prevalence: Any, groups: Any
) -> tuple[npt.NDArray[np.integer[Any]], npt.NDArray[Any] | None]:
    """Categories drawn iid from ``prevalence`` (per group with ``groups``)."""
    if groups is None and isinstance(prevalence, Mapping):
        groups = {g: 1 / len(prevalence) for g in prevalence}
    if groups is None:
        probs = _category_vector("prevalence", prevalence, design.k)
        return gen.choice(design.k, size=n, p=probs), None
    per, labels, codes = _group_assignment(gen, n, groups)
    if isinstance(prevalence, Mapping):
        values = _per_group(prevalence, labels)
        table = [_category_vector(f"prevalence[{g!r}]", x, design.k)
                 for g, x in zip(labels, values, strict=True)]  # fmt: skip
    else:
        table = [_category_vector("prevalence", prevalence, design.k)] * len(labels)
    u = gen.random(n)
    truth = np.empty(n, dtype=np.int64)
    for j, probs in enumerate(table):  # inverse CDF within each group
        cum = np.cumsum(probs)
        cum[-1] = 1.0
        mask = codes == j
        truth[mask] = np.searchsorted(cum, u[mask], side="right")
    return truth, per


_MEMORY_WHY = "every simulated respondent is held in memory"


def simulate(
    design: Design,
    n: int,
    prevalence: float | npt.ArrayLike | Mapping[Hashable, Any],
    *,
    seed: int | None = None,
    groups: Mapping[Hashable, float] | npt.ArrayLike | None = None,
    non_compliance: float = 0.0,
    group_share: float | None = None,
    unrelated_prevalence: float | None = None,
    cheating: float | None = None,
    honesty: float | None = None,
) -> Simulation:
    """Draw ``n`` true answers (iid with ``prevalence``), randomize them, and estimate.

    ``prevalence`` is a probability (the share of carriers), or for
    :class:`~deniable.Categorical` a probability vector of length ``k``.  One seed drives
    the population and the randomization (``seed=None`` draws fresh entropy; the result is
    then not reproducible).  Works for every design.

    * ``groups``: a mapping ``{label: share}`` (each respondent falls in a group at random
      with these probabilities) or a sequence of ``n`` labels.  ``prevalence`` may then be a
      mapping ``{label: prevalence}`` (a vector per label for categorical designs); a
      mapping ``prevalence`` without ``groups`` puts the respondents in its groups with
      equal shares.
    * ``non_compliance``: each respondent independently, with this probability, ignores the
      randomizer and reports "no": 0 (Kuk with several draws: 0 red cards; categorical:
      category 0, so number the categories with 0 the innocuous answer).  For a binary
      design the expected estimate is then ``pi - s lambda_c / (P1 - P0)`` (see the module
      docstring).  For the cheater detection models these respondents *are* the cheaters
      (give ``non_compliance`` or ``cheating``, not both).

    Two-group designs only (:data:`~deniable.designs.TWO_GROUP_DESIGNS`):

    * ``group_share`` (default: the design's ``group_share``, 1/2 unless set):
      ``n1 = floor(n * group_share + 1/2)`` respondents,
      chosen at random, are in group 1, the rest in group 2 (both must be non-empty).
    * the latent quantity, drawn iid and independently of the truth: ``unrelated_prevalence``
      (``unrelated-unknown``; required) the share who would say "yes" to the unrelated
      question; ``cheating`` (``cdm``, ``cdm-symmetric``; default 0) the share of respondents
      who cheat and always say "no"; ``honesty`` (``sld``; default 1) each carrier's
      probability of answering honestly.

    A keyword a design does not take raises :class:`~deniable.exceptions.ParameterError`.
    Draws happen in a fixed order (groups, truths, two-group split, latent quantity,
    randomization, compliance), so adding neither groups nor non-compliance reproduces
    earlier results for the same seed.

    >>> from deniable import TwoCoin
    >>> sim = simulate(TwoCoin(), 10_000, 0.3, seed=1)
    >>> abs(sim.estimate.value - sim.true_share) < 4 * sim.estimate.se
    True
    >>> sim = simulate(TwoCoin(), 10_000, {"a": 0.1, "b": 0.5}, seed=1)
    >>> sim.group_labels(), sorted(round(e.value, 1) for e in sim.group_estimates().values())
    (['a', 'b'], [0.1, 0.5])
    >>> from deniable.designs import StochasticLieDetector
    >>> sim = simulate(StochasticLieDetector(2 / 12, 10 / 12), 20_000, 0.3, honesty=0.8, seed=1)
    >>> [round(sim.estimate[k].value, 1) for k in ("prevalence", "honesty")]
    [0.3, 0.8]
    """
    if not isinstance(design, Design):
        raise ParameterTypeError(
            f"`design` must be a deniable Design, got {type(design).__name__}."
        )
    n = v.integer("n", n, minimum=1, maximum=MAX_RESPONDENTS, why=_MEMORY_WHY)
    s = v.probability("non_compliance", non_compliance)
    options = {"group_share": group_share, "unrelated_prevalence": unrelated_prevalence,
               "cheating": cheating, "honesty": honesty}  # fmt: skip
    setting = two_group_options(design, options, s)
    sizes = None if setting is None else group_sizes(n, setting.group_share)
    gen = resolve_rng(np.random.SeedSequence().entropy if seed is None else seed)
    assert isinstance(gen, np.random.Generator)
    labels_per: npt.NDArray[Any] | None = None
    truth: npt.NDArray[np.integer[Any]]
    if design.n_groups == 1 and design.n_truths > 2:  # a category per respondent
        truth, labels_per = _categorical_truth(gen, cast(Categorical, design), n, prevalence,
                                               groups)  # fmt: skip
    else:
        if groups is None and isinstance(prevalence, Mapping):
            groups = {g: 1 / len(prevalence) for g in prevalence}
        if groups is None:
            pi: npt.NDArray[np.float64] | float = v.probability("prevalence", prevalence)
        else:
            labels_per, labels, codes = _group_assignment(gen, n, groups)
            pi = _prevalence_per_respondent(prevalence, labels, codes)
        truth = (gen.random(n) < pi).view(np.uint8)
    complied: npt.NDArray[np.bool_] | None = None
    group: npt.NDArray[np.intp] | None = None
    latent: dict[str, npt.NDArray[np.uint8]] = {}
    settings: dict[str, float] = {}
    zeroed = s
    reports: npt.NDArray[np.integer[Any]]
    if design.n_groups == 2:
        assert setting is not None and sizes is not None
        design = cast(TwoGroupDesign, design)
        group = np.full(n, 2, dtype=np.intp)
        group[gen.permutation(n)[: sizes[0]]] = 1
        ind = (gen.random(n) < setting.value).view(np.uint8)
        latent[setting.latent.keyword] = ind
        types = design.types(truth, **{setting.latent.keyword: ind})
        reports = design.randomize(types, group=group, rng=gen) % 2  # the 0/1 answers
        zeroed = setting.zeroed
        settings = {"group_share": setting.group_share, setting.latent.option: setting.value}
        if setting.latent.option == "cheating" and setting.value > 0:
            complied = ind == 0  # a cheater says "no" whatever the randomizer says
    else:
        reports = design.randomize(truth, rng=gen)
    if zeroed > 0:
        complied = gen.random(n) >= zeroed
        reports = np.where(complied, reports, 0).astype(reports.dtype)
    est: AnyEstimate = design.estimate(design.encode(reports, group))
    return Simulation(
        design,
        truth,
        reports,
        est,
        seed,
        labels_per,
        complied,
        s,
        group,
        latent,
        settings,
        prevalence,
    )
