"""Telemetry streams: the spec of a stream (:class:`StreamSpec`: its oracle, period and
per-device budget window), read strictly from a file or a request body, and what a batch
of its reports costs a device.

A stream spec (schema ``deniable.stream-spec/1``), as JSON or YAML::

    id: app-version                 # letters, digits, '.', '_', '-' (1 to 128)
    oracle: {...}                   # the oracle's spec, as deniable.oracles.oracle_spec
                                    #   emits it (schema deniable.oracle/1), RAPPOR's
                                    #   (deniable.oracles.rappor_spec: deniable.rappor-spec/1)
                                    #   or k-ary randomized response's question spec
                                    #   (deniable.designs.spec_of: deniable.question/1,
                                    #   mechanism categorical), a count mean sketch's
                                    #   (deniable.oracles.cms_spec: deniable.cms-spec/1)
                                    #   or PEM's / TreeHist's (deniable.oracles.heavy_spec:
                                    #   deniable.heavy-spec/1), a range mechanism's or
                                    #   Square Wave's (oracles.range_spec: _stream_range)
                                    #   or SFP's (oracles.sfp_spec: deniable.sfp-spec/1)
                                    #   or RAPPOR n-grams' (oracles.rappor_ngram_spec:
                                    #   deniable.rappor-ngram-spec/1)
    period: day                     # the partitions: one per UTC day
    window: {kind: day, epsilon: 2.0}   # a BudgetWindow: kind, epsilon, [delta, length, tz]
    candidates: [a, b, ...]         # RAPPOR, CMS and HCMS only, optional: the strings
                                    #   each day's reports are decoded against, or whose
                                    #   frequencies the sketch answers (the stream page)
    answers: {top_k: 8, alpha: 0.01}  # PEM, TreeHist, SFP, RAPPOR n-grams, range
                                    #   mechanisms, Square Wave only, optional: what the
                                    #   page lists (heavy: top_k, alpha; SFP: alpha;
                                    #   n-grams: alpha, edge_threshold; ordered: quantiles,
                                    #   ranges),
                                    #   answer side only (_stream_answers)

A streams file holds ``streams: [spec, ...]``.  Every field but ``candidates`` and
``answers`` is required, none other is allowed, and each is checked by the library
(:func:`~deniable.oracles.mechanism_from_spec` reads the oracle's spec by its schema,
every implied field recomputed, as :data:`~deniable.oracles.DEVICE_SPECS` registers it,
and :func:`~deniable.oracles.device_spec` writes it back; :class:`~deniable.accounting.
BudgetWindow` checks the window).

**What a report costs** is the library's :func:`deniable.oracles.report_epsilon`: a
report of an oracle costs its ``epsilon``; a report of a longitudinal oracle (memoized:
L-GRR, L-OUE/L-SUE/L-OSUE, LOLOHA) costs ``epsilon_irr``, the instantaneous
randomization's epsilon over every kept permanent response; a report of RAPPOR, its IRR's
epsilon over every kept PRR, ``m max(ln(q / p), ln((1 - p) / (1 - q)))``; a report of a
count mean sketch (CMS, HCMS: a fresh row and flips every report, nothing kept), its exact
``epsilon``; a report of PEM or TreeHist (a fresh group and one OLH report of its prefix,
nothing kept), the OLH epsilon ``ln(p' / q')``; of SFP (a fresh position and one report
to each of its two sketches, nothing kept), ``fragment_epsilon + word_epsilon``, the two
sketches' exact epsilons added (``epsilon / 2`` each at the default split); of RAPPOR
n-grams (a fresh cohort, fresh pairs and a fresh PRR for every n-gram and the full string,
nothing kept), ``2 pairs eps_1(ngram) + eps_1(full)``, the protocol's ``epsilon``; of a range
mechanism, its largest level oracle's epsilon; of Square Wave, its epsilon.  The
memoized bound ``min(v * epsilon_inf, r * epsilon_1)`` holds only against value sequences
with the same pattern of changes (``deniable.oracles.LongitudinalOracle.
longitudinal_epsilon``); a window promises a bound against *any* change of a device's
values in it, and between sequences of different patterns only ``r * epsilon_irr`` holds
(each report, given the kept responses, is an ``epsilon_irr`` channel; the joint law is a
mixture over them).  ``r * epsilon_1`` is not a bound there: two reports of L-GRR at
``epsilon_inf = 2, epsilon_1 = 0.5``, k = 3, lose 1.05 > 1.0 between ``(a, a)`` and
``(a, b)`` (tests/service/test_streams.py enumerates it).  The server, which never sees
the values, charges ``epsilon_irr`` a report, the sum over the reports by basic
composition.  A spec whose per-report cost exceeds the window's cap is refused (no
report could ever be admitted).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deniable.accounting import BudgetWindow
from deniable.common import load_json, load_yaml
from deniable.common import validation as v
from deniable.exceptions import DataError, DeniableError, ParameterError
from deniable.oracles import device_spec, mechanism_from_spec, report_epsilon
from deniable.service.analysis import _stream_range as ordered
from deniable.service.analysis._stream_answers import AnswerSettings, answer_settings
from deniable.service.analysis._stream_heavy import heavy_day, is_heavy
from deniable.service.analysis._stream_strings import (
    MAX_CANDIDATES,
    MAX_DECODE_CELLS,
    check_candidates,
    of_strings,
    strings_estimate,
)

__all__ = [
    "DEFAULT_STREAM_DAYS",
    "MAX_CANDIDATES",
    "MAX_DECODE_CELLS",
    "MAX_STREAM_DAYS",
    "STREAM_SPEC_SCHEMA",
    "StreamSpec",
    "load_streams_file",
    "stream_days",
    "stream_estimates",
    "stream_spec_from",
]

#: The schema of a stream spec.
STREAM_SPEC_SCHEMA = "deniable.stream-spec/1"
_FIELDS = ("id", "oracle", "period", "window")
_WINDOW_FIELDS = ("kind", "epsilon", "delta", "length", "tz")
_PERIODS = ("day",)
#: The most UTC days one request for a stream's estimates may read (``start`` .. ``end``).
MAX_STREAM_DAYS = 92
#: The days read when no ``start`` is given: the last 30 UTC days up to ``end``.
DEFAULT_STREAM_DAYS = 30
#: A stream id, as the partitions allow it (``deniable.distributed.append_reports``).
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


@dataclass(frozen=True)
class StreamSpec:
    """A telemetry stream: ``id``, its ``oracle``, its ``period`` (``"day"``), the
    per-device budget ``window``, for a stream of strings (RAPPOR, CMS, HCMS) the
    ``candidates`` its reports are decoded against (or None), and for a heavy-hitter
    (PEM, TreeHist, SFP), range or Square Wave stream its ``answers`` settings (None: the
    defaults)."""

    id: str
    oracle: Any
    period: str
    window: BudgetWindow
    candidates: tuple[str, ...] | None = None
    answers: AnswerSettings | None = None

    @property
    def settings(self) -> AnswerSettings | None:
        """The answer settings the stream's estimates use (``answers``, or the defaults of
        its oracle; None for an oracle without any)."""
        return self.answers or answer_settings(None, self.oracle, "answers", given=False)

    @property
    def report_epsilon(self) -> float:
        """What one report costs a device against any change of its values:
        :func:`deniable.oracles.report_epsilon` of the oracle (module docstring)."""
        return report_epsilon(self.oracle)

    def to_dict(self) -> dict[str, Any]:
        """The spec as served to devices (``GET /streams/{id}``): the fields above, the
        oracle as its full spec, and ``report_epsilon``."""
        w = self.window
        out = {
            "schema": STREAM_SPEC_SCHEMA,
            "id": self.id,
            "oracle": device_spec(self.oracle),
            "period": self.period,
            "window": {
                "kind": w.kind,
                "epsilon": w.epsilon,
                "delta": w.delta,
                "length": w.length,
                "tz": w.tz,
            },
            "report_epsilon": self.report_epsilon,
        }
        if self.candidates is not None:  # absent otherwise: a stored spec's text is kept
            out["candidates"] = list(self.candidates)
        if self.answers is not None and self.answers.declared:  # likewise
            out["answers"] = self.answers.to_dict()
        return out

    def canonical(self) -> str:
        """The spec as canonical JSON text (how the store keeps it; equal specs, equal
        text)."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))


def _where(source: str, field: str) -> str:
    return f"{source}: field `{field}`"


def _window(data: Any, source: str) -> BudgetWindow:
    where = _where(source, "window")
    if not isinstance(data, Mapping):
        raise DataError(
            f"{where} must be a mapping (kind, epsilon, [delta, length, tz]), got "
            f"{type(data).__name__}."
        )
    unknown = sorted(set(map(str, data)) - set(_WINDOW_FIELDS))
    if unknown:
        raise DataError(
            f"{where}: unknown field `{unknown[0]}` (fields: {', '.join(_WINDOW_FIELDS)})."
        )
    for name in ("kind", "epsilon"):
        if name not in data:
            raise DataError(f"{where}: field `{name}` is missing.")
    try:
        return BudgetWindow(
            data["kind"],
            data["epsilon"],
            data.get("delta", 0.0),
            data.get("length"),
            data.get("tz", "UTC"),
        )
    except DeniableError as exc:
        raise DataError(f"{where}: {exc}") from None


def stream_spec_from(data: Any, *, source: str = "the stream spec") -> StreamSpec:
    """The :class:`StreamSpec` of plain data (a mapping as the module docstring shows;
    ``schema`` and ``report_epsilon`` may be there, as :meth:`StreamSpec.to_dict` writes
    them, and must then match); any other shape is a :class:`~deniable.exceptions.DataError`
    naming ``source`` and the field.

    >>> from deniable.oracles import OUE, oracle_spec
    >>> spec = stream_spec_from({"id": "app-version", "period": "day",
    ...     "oracle": oracle_spec(OUE.from_epsilon(1.0, k=8)),
    ...     "window": {"kind": "day", "epsilon": 2.0}})
    >>> spec.window.describe(), spec.report_epsilon == OUE.from_epsilon(1.0, k=8).epsilon
    ('epsilon 2 per day (UTC)', True)
    >>> stream_spec_from({"id": "x", "period": "hour", "oracle": {}, "window": {}})
    Traceback (most recent call last):
    ...
    deniable.exceptions.DataError: the stream spec: field `period` must be one of 'day', got 'hour'.
    """
    if not isinstance(data, Mapping):
        raise DataError(f"{source} must be a mapping, got {type(data).__name__}.")
    extra = {"schema", "report_epsilon", "candidates", "answers"}
    unknown = sorted(set(map(str, data)) - set(_FIELDS) - extra)
    if unknown:
        raise DataError(f"{source}: unknown field `{unknown[0]}` (fields: {', '.join(_FIELDS)}).")
    missing = [f for f in _FIELDS if f not in data]
    if missing:
        raise DataError(f"{_where(source, missing[0])} is missing.")
    if "schema" in data and data["schema"] != STREAM_SPEC_SCHEMA:
        raise DataError(
            f"{_where(source, 'schema')} must be {STREAM_SPEC_SCHEMA!r}, got {data['schema']!r}."
        )
    sid = data["id"]
    if not isinstance(sid, str) or not _ID.fullmatch(sid):
        raise DataError(
            f"{_where(source, 'id')} must be 1 to 128 letters, digits, '.', '_' or '-', "
            f"starting with a letter or digit, got {sid!r}."
        )
    if data["period"] not in _PERIODS:
        raise DataError(
            f"{_where(source, 'period')} must be one of "
            f"{', '.join(map(repr, _PERIODS))}, got {data['period']!r}."
        )
    try:  # by its schema, every implied field checked (deniable.oracles.DEVICE_SPECS)
        oracle = mechanism_from_spec(data["oracle"])
    except DeniableError as exc:
        raise DataError(f"{_where(source, 'oracle')}: {exc}") from None
    candidates = check_candidates(_where(source, "candidates"), data, oracle)
    answers = answer_settings(
        data.get("answers"), oracle, _where(source, "answers"), given="answers" in data
    )
    window = _window(data["window"], source)
    spec = StreamSpec(sid, oracle, str(data["period"]), window, candidates, answers)
    if "report_epsilon" in data and data["report_epsilon"] != spec.report_epsilon:
        raise DataError(
            f"{_where(source, 'report_epsilon')} does not match the oracle: it says "
            f"{data['report_epsilon']!r}, the oracle implies {spec.report_epsilon!r}."
        )
    if spec.report_epsilon > spec.window.epsilon:
        raise DataError(
            f"{_where(source, 'window')}: a report of this oracle costs epsilon "
            f"{spec.report_epsilon:g}, more than the cap {spec.window.describe()}; no report "
            "could ever be admitted."
        )
    return spec


def load_streams_file(path: str | Path) -> list[StreamSpec]:
    """The stream specs of a streams file (``.json``, ``.yaml`` or ``.yml``: ``streams:
    [spec, ...]``), each checked (:func:`stream_spec_from`); two specs with one id are
    refused."""
    p = Path(path)
    source = f"streams file {str(p)!r}"
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise DataError(f"cannot read {source}: {exc.strerror or exc}.") from None
    doc = (
        load_json(raw, source=source)
        if p.suffix.lower() == ".json"
        else load_yaml(raw, source=source)
    )
    if (
        not isinstance(doc, Mapping)
        or set(doc) != {"streams"}
        or not isinstance(doc["streams"], list)
    ):
        raise DataError(f"{source} must be a mapping with one field `streams`: a list of specs.")
    specs: list[StreamSpec] = []
    for i, item in enumerate(doc["streams"]):
        spec = stream_spec_from(item, source=f"{source}, `streams[{i}]`")
        if any(s.id == spec.id for s in specs):
            raise DataError(f"{source}: the stream id {spec.id!r} is given twice.")
        specs.append(spec)
    return specs


def stream_days(start: str | None, end: str | None, today: dt.date) -> tuple[dt.date, dt.date]:
    """The UTC days ``start .. end`` (both included) a request for a stream's estimates
    reads: ``end`` is ``today`` by default, ``start`` :data:`DEFAULT_STREAM_DAYS` days up
    to ``end``.  A malformed day, ``start`` after ``end`` or a range of more than
    :data:`MAX_STREAM_DAYS` days is a :class:`~deniable.exceptions.ParameterError` naming
    the parameter.

    >>> import datetime as dt
    >>> stream_days(None, None, dt.date(2026, 11, 28))
    (datetime.date(2026, 10, 30), datetime.date(2026, 11, 28))
    >>> stream_days("2026-11-01", None, dt.date(2026, 11, 28))
    (datetime.date(2026, 11, 1), datetime.date(2026, 11, 28))
    """
    last = today if end is None else v.day("end", end, what="a UTC day")
    if start is None:
        first = last - dt.timedelta(days=DEFAULT_STREAM_DAYS - 1)
    else:
        first = v.day("start", start, what="a UTC day")
    if first > last:
        raise ParameterError(f"`start` must not be after `end`, got {first} > {last}.")
    days = (last - first).days + 1
    if days > MAX_STREAM_DAYS:
        raise ParameterError(
            f"`start` .. `end` may span at most {MAX_STREAM_DAYS} days, got {days} "
            f"({first} .. {last})."
        )
    return first, last


def stream_estimates(
    root: str | Path, spec: StreamSpec, first: dt.date, last: dt.date, level: float = 0.95
) -> dict[str, Any]:
    """Each UTC day's estimate of ``spec``'s stream over the days ``first .. last`` that
    hold reports: the tally of exactly that day's partition
    (:func:`deniable.distributed.aggregate_stream`, counted in this process), estimated by
    the stream's oracle, as its ``to_dict(level)`` (for a frequency oracle a
    :class:`~deniable.designs.FrequencyEstimate`: each value's estimate, standard errors,
    exact and Wald intervals at ``level``; for RAPPOR a
    :class:`~deniable.oracles.RapporEstimate` of the spec's ``candidates``: each one's
    frequency, standard error, p-value, whether it is reported, and its Wald interval at
    ``level``; for a count mean sketch its :class:`~deniable.oracles.SketchEstimate` of
    them: each one's unbiased frequency, both standard errors and its interval at
    ``level``; a spec of strings without candidates is a
    :class:`~deniable.exceptions.DataError`; for PEM or TreeHist the
    :class:`~deniable.oracles.HeavyHitters` the day's records decode to, each string with
    its frequency, standard error, interval and the rounds' thresholds, for SFP the
    :class:`~deniable.oracles.SFPResult` of the day's reports, for RAPPOR n-grams the
    :class:`~deniable.oracles.NgramDiscovery` of them: :mod:`._stream_heavy`; for a
    range mechanism or Square Wave the answers of
    :mod:`._stream_range`).  A day without reports is left out.

    A heavy-hitter (PEM, TreeHist, SFP, RAPPOR n-grams), range or Square Wave stream's
    estimates are at its answer settings
    (``answers``: :attr:`StreamSpec.settings`, as the result's ``answers``) and also
    ``pooled``: ``{"start", "end", "days", "estimate"}``, the estimate of the records of
    all the days held, decoded as one sample (sound when the devices' values are
    stationary over the days; :mod:`._stream_heavy`), or None when no day holds reports."""
    from deniable.distributed import aggregate_stream, stream_files

    lvl = v.level(level)
    if of_strings(spec.oracle) and spec.candidates is None:
        raise DataError(
            f"stream {spec.id!r} is a {spec.oracle.name} stream whose spec carries no "
            "`candidates`: its reports are decoded against candidate strings (give them in "
            "the spec, or run "
            "`deniable telemetry aggregate --stream-root ROOT --stream ID --candidates FILE`)."
        )
    held = sorted({f.parent.name.removeprefix("day=") for f in stream_files(
        root, spec.id, start=first, end=last)})  # fmt: skip
    settings = spec.settings

    def estimate_of(day: str, end: str | None = None) -> Any:
        if is_heavy(spec.oracle):  # the records, round by round
            return heavy_day(root, spec.id, spec.oracle, day, lvl, settings, end=end)
        tally = aggregate_stream(root, spec.id, start=day, end=end or day,
                                 scheduler="synchronous")  # fmt: skip
        if of_strings(spec.oracle):  # the spec's candidates: decoded, or the sketch's
            return strings_estimate(spec.oracle, tally, spec.candidates or (), lvl)
        if ordered.is_range(spec.oracle):  # the settings' quantiles and ranges, means
            return ordered.range_day(spec.oracle, tally, lvl, settings)
        return spec.oracle.estimate(tally).to_dict(lvl)

    out: dict[str, Any] = {
        "stream": spec.id,
        "oracle": spec.oracle.key,
        "start": first.isoformat(),
        "end": last.isoformat(),
        "level": lvl,
        "max_days": MAX_STREAM_DAYS,
        "days": [{"day": day, "estimate": estimate_of(day)} for day in held],
    }
    if settings is not None:  # heavy hitters, ranges: the settings and the pooled days
        out["answers"] = settings.effective()
        days = out["days"]
        out["pooled"] = None if not held else {
            "start": held[0], "end": held[-1], "days": len(held),
            "estimate": days[0]["estimate"] if len(held) == 1 else estimate_of(held[0], held[-1]),
        }  # fmt: skip
    return out
