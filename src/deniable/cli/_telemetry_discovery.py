"""Strings discovered without a dictionary by fragments on the command line: the Sequence
Fragment Puzzle and RAPPOR's n-grams (``deniable telemetry simulate --mechanism
sfp|rappor-ngram`` and ``aggregate`` of their reports, no ``--candidates``;
``docs/heavy-hitters.md``, ``docs/rappor.md``).

``simulate`` draws each device's string (Zipf's law over the lines of ``--candidates``, or
the lines of ``--values``, one device a line: ``_telemetry_strings``), randomizes it with
the library's :class:`~deniable.oracles.SFP` (a fragment with its puzzle piece to one
sketch, the whole string to another) or :class:`~deniable.oracles.RapporNgram` (n-grams of
position pairs and the whole string through RAPPOR) and writes a report file or a report
table (``oracles._string_files``).  ``aggregate`` reads the reports (SFP's file tallied in
batches, the n-grams' read whole; tables on Dask) and prints the strings found with their
frequencies, intervals and the thresholds that decided each stage.
"""

from __future__ import annotations

import string
from typing import Annotated, Any

from deniable.cli._base import fail, guard_io, refuse_for_reports, refuse_options
from deniable.cli._files import progress_bar
from deniable.cli._options import mechanism_option
from deniable.cli._render import emit_json, print_table
from deniable.cli._telemetry_strings import string_batches
from deniable.cli._telemetry_write import Simulation
from deniable.common import format_epsilon, to_jsonable
from deniable.exceptions import DeniableError
from deniable.results import Table

__all__ = [
    "DISCOVERY",
    "AlphabetOpt",
    "EdgeThresholdOpt",
    "FragmentShareOpt",
    "GramOpt",
    "MaxCandidatesOpt",
    "MaxLengthOpt",
    "PairsOpt",
    "PuzzleBitsOpt",
    "SketchKindOpt",
    "aggregate_discovery",
    "aggregate_discovery_tables",
    "not_discovery",
    "simulate_discovery",
]

#: ``simulate --mechanism sfp|rappor-ngram``: strings found from their fragments.
DISCOVERY = ("sfp", "rappor-ngram")
SFP_NAME, NGRAM_NAME = DISCOVERY
#: The string bound when not given, and the library's largest.
DEFAULT_MAX_LENGTH, _MAX_LENGTH = 8, 64
#: RAPPOR n-grams' alphabet when not given (the library needs one: its n-gram domain).
DEFAULT_NGRAM_ALPHABET = string.ascii_lowercase + string.digits
#: Devices randomized at once.
_BATCH = 1 << 16
#: The largest ``--max-candidates``, the library's (SFP's field, ``RapporNgram.discover``'s).
_MAX_CANDIDATES = {SFP_NAME: 1 << 20, NGRAM_NAME: 10**6}

AlphabetOpt = Annotated[
    str | None,
    mechanism_option(
        "--alphabet",
        help="SFP/rappor-ngram/PEM/TreeHist only: the characters a string may hold, each once "
        "(SFP default: any byte, strings measured in UTF-8 bytes; rappor-ngram default: a-z "
        "0-9; PEM/TreeHist: the alphabet is bytes, this text's UTF-8 bytes, default any "
        "byte).",
    ),
]
MaxLengthOpt = Annotated[
    int | None,
    mechanism_option(
        "--max-length",
        help=f"SFP/rappor-ngram only: the longest string, 1..{_MAX_LENGTH} characters of "
        f"--alphabet (SFP without one: UTF-8 bytes; default {DEFAULT_MAX_LENGTH}).",
    ),
]
PuzzleBitsOpt = Annotated[
    int | None,
    mechanism_option(
        "--puzzle-bits",
        help="SFP only: bits of the puzzle piece (a hash of the whole string) sent with each "
        "fragment, 1..16 (default 8).",
    ),
]
FragmentShareOpt = Annotated[
    float | None,
    mechanism_option(
        "--fragment-share",
        help="SFP only: the share of --epsilon spent on the fragment sketch, in (0, 1) "
        "(default 0.5; the rest goes to the whole-string sketch).",
    ),
]
SketchKindOpt = Annotated[
    str | None,
    mechanism_option(
        "--sketch",
        help="SFP only: the kind of both sketches, cms or hcms (default hcms); their shape is "
        "--sketch-rows, --sketch-columns, --salt.",
    ),
]
GramOpt = Annotated[
    int | None,
    mechanism_option(
        "--gram",
        help="rappor-ngram only: characters per n-gram, 1..8 (default 2); --max-length must "
        "be a multiple of it.",
    ),
]
PairsOpt = Annotated[
    int | None,
    mechanism_option(
        "--pairs", help="rappor-ngram only: position pairs each device reports (default 1)."
    ),
]
EdgeThresholdOpt = Annotated[
    float | None,
    mechanism_option(
        "--edge-threshold",
        help="rappor-ngram reports only: the joint frequency (EM) that links two n-grams, in "
        "(0, 1) (default 0.02).",
    ),
]
MaxCandidatesOpt = Annotated[
    int | None,
    mechanism_option(
        "--max-candidates",
        help="sfp/rappor-ngram reports only: the most candidate strings (SFP: a puzzle value "
        f"assembles, 1..{_MAX_CANDIDATES[SFP_NAME]}, default 1024; rappor-ngram: chains of "
        f"joined n-grams, 1..{_MAX_CANDIDATES[NGRAM_NAME]}, default 10000, more is an error).",
    ),
]

#: The options of each mechanism (its simulate parameters, by option name).
_OWN = {
    SFP_NAME: ("epsilon", "alphabet", "max-length", "puzzle-bits", "fragment-share", "sketch",
               "sketch-rows", "sketch-columns", "salt"),
    NGRAM_NAME: ("alphabet", "max-length", "gram", "pairs", "m", "h", "cohorts", "f", "p", "q"),
}  # fmt: skip


def not_discovery(mechanism: str, given: dict[str, Any]) -> None:
    """Refuse these mechanisms' options (``given``: name to value) for another one."""
    refuse_options(given, f"`--mechanism {SFP_NAME}` and `{NGRAM_NAME}`", mechanism)


def _in_range(option: str, value: Any, low: float, high: float, *, open_: bool = False) -> None:
    ok = low < value < high if open_ else low <= value <= high
    if not ok:
        shown = f"({low:g}, {high:g})" if open_ else f"{low}..{high}"  # closed: integers
        fail(f"`--{option}` must be in {shown}, got {value}.")


def _protocol(mechanism: str, options: dict[str, Any], gen: Any) -> Any:
    """The protocol of the options, each checked naming its option (SFP's salt, when not
    given, drawn with ``gen``: its estimate is unbiased over a salt drawn at random)."""
    from deniable.oracles import SFP, Rappor, RapporNgram

    mine = {n: x for n, x in options.items() if x is not None}
    other = [f"`--{n}`" for n in mine if n not in _OWN[mechanism]]
    if other:
        fail(
            f"{', '.join(other)} do not apply to `--mechanism {mechanism}`: its parameters "
            f"are {', '.join('--' + n for n in _OWN[mechanism])}."
        )
    length = mine.get("max-length", DEFAULT_MAX_LENGTH)
    _in_range("max-length", length, 1, _MAX_LENGTH)
    alphabet = mine.get("alphabet")
    if alphabet is not None and (not alphabet or len(set(alphabet)) != len(alphabet)):
        fail(f"`--alphabet` must hold at least one character, each once, got {alphabet!r}.")
    try:
        if mechanism == SFP_NAME:
            if "epsilon" not in mine:
                fail(f"`--epsilon` must be given for `--mechanism {mechanism}`.")
            _in_range("puzzle-bits", mine.get("puzzle-bits", 8), 1, 16)
            _in_range("fragment-share", mine.get("fragment-share", 0.5), 0, 1, open_=True)
            if mine.get("sketch", "hcms") not in ("cms", "hcms"):
                fail(f"`--sketch` must be cms or hcms, got {mine['sketch']!r}.")
            return SFP(
                epsilon=mine["epsilon"], max_length=length, alphabet=alphabet,
                puzzle_bits=mine.get("puzzle-bits", 8), k=mine.get("sketch-rows", 64),
                m=mine.get("sketch-columns", 1024), sketch=mine.get("sketch", "hcms"),
                fragment_share=mine.get("fragment-share", 0.5),
                salt=mine["salt"] if "salt" in mine else int(gen.integers(1 << 32)),
            )  # fmt: skip
        from deniable.cli._telemetry_rappor import RAPPOR_DEFAULTS

        gram = mine.get("gram", 2)
        _in_range("gram", gram, 1, 8)
        if length % gram or length < 2 * gram:
            fail(
                f"`--max-length` must be a multiple of --gram ({gram}) of at least two n-grams, "
                f"got {length}."
            )
        params = {n: mine.get(n, RAPPOR_DEFAULTS[n]) for n in ("m", "h", "cohorts", "f", "p", "q")}
        rappor = Rappor(**params)  # the n-grams' and the full string's reports
        positions = length // gram
        _in_range("pairs", mine.get("pairs", 1), 1, positions * (positions - 1) // 2)
        return RapporNgram(rappor, rappor, alphabet=alphabet or DEFAULT_NGRAM_ALPHABET,
                           gram=gram, length=length, pairs=mine.get("pairs", 1))  # fmt: skip
    except DeniableError as exc:  # a parameter the library refuses: one line naming it
        fail(f"`--mechanism {mechanism}`: {exc}")


def _check_strings(option: str, strings: list[str], protocol: Any) -> None:
    """One error line naming ``option`` for a string the protocol refuses (its number and
    what is wrong, never the string: it is a device's value)."""
    alphabet = getattr(protocol, "alphabet", None)
    allowed = None if alphabet is None else set(alphabet)
    bound = protocol.max_length if hasattr(protocol, "max_length") else protocol.length
    unit = "bytes in UTF-8" if allowed is None else "characters"
    for i, s in enumerate(strings, 1):
        size = len(s.encode("utf-8")) if allowed is None else len(s)
        if size > bound:
            fail(
                f"`{option}`: string {i} must be at most --max-length = {bound} {unit}, got "
                f"{size} (the string is not shown)."
            )
        if allowed is not None and not set(s) <= allowed:
            at = next(j for j, c in enumerate(s) if c not in allowed)
            fail(
                f"`{option}`: string {i} must use only the characters of --alphabet, got one "
                f"that is not at character {at} (the string is not shown)."
            )


def _epsilons(protocol: Any) -> dict[str, float]:
    if protocol.name == SFP_NAME:  # eps_f + eps_w: the two sketches' reports of a device
        return {"epsilon_per_device": float(protocol.epsilon_per_device),
                "implemented_epsilon": float(protocol.implemented_epsilon)}  # fmt: skip
    # one collection: 2 pairs + 1 RAPPOR reports; any number, PRRs memoized: the PRR bounds
    return {"epsilon_per_device": float(protocol.epsilon),
            "permanent_epsilon": float(protocol.permanent_epsilon)}  # fmt: skip


def _epsilon_note(protocol: Any) -> str:
    eps = _epsilons(protocol)
    if protocol.name == SFP_NAME:
        return (
            f"epsilon {format_epsilon(eps['epsilon_per_device'])} per device (fragment "
            f"sketch {format_epsilon(protocol.fragment_epsilon)} + whole-string sketch "
            f"{format_epsilon(protocol.word_epsilon)}; implemented: "
            f"{format_epsilon(eps['implemented_epsilon'])})"
        )
    return (
        f"epsilon {format_epsilon(eps['epsilon_per_device'])} per device and collection "
        f"({2 * protocol.pairs} n-gram reports and one of the whole string); over any number "
        f"of collections with memoized PRRs: {format_epsilon(eps['permanent_epsilon'])}"
    )


def simulate_discovery(run: Simulation, *, mechanism: str, options: dict[str, Any]) -> None:
    """Simulate devices of SFP or RAPPOR n-grams into the report file or table of ``run``
    and print it; ``options``: every simulate option of these and of the other mechanisms,
    by name (``None``: not given; another mechanism's given is refused)."""
    import numpy as np

    from deniable.oracles import SFP, ngram_records, sfp_records

    run.require_pyarrow()
    gen = np.random.default_rng(run.seed)
    protocol = _protocol(mechanism, options, gen)
    strings, n = run.strings(mechanism)
    _check_strings("--values" if run.values is not None else "--candidates", strings, protocol)
    run.check_devices(n)
    records = sfp_records if isinstance(protocol, SFP) else ngram_records
    record = records(protocol, protocol.randomize(strings[:1], rng=0))  # one device's
    run.check_file_size(n, record.nbytes, f"{mechanism}, its parameters")

    def batches() -> Any:
        for _, batch_values in string_batches(strings, n, zipf=run.values is None, rng=gen,
                                              batch=_BATCH):  # fmt: skip
            yield protocol.randomize(batch_values.tolist(), rng=gen)

    data = run.write_strings(protocol, n, batches(), mechanism=protocol.key, **_epsilons(protocol))
    if run.as_json:
        emit_json(to_jsonable(data))
        return
    shown = {**data, "mechanism": mechanism,
             **{k: format_epsilon(x) for k, x in _epsilons(protocol).items()}}  # fmt: skip
    if isinstance(protocol, SFP):
        shape = (f"{protocol.positions} fragment positions, {protocol.puzzle_bits}-bit "
                 f"puzzle pieces; two {protocol.sketch.upper()} of {protocol.k} x "
                 f"{protocol.m}")  # fmt: skip
    else:
        shape = (f"{protocol.positions} n-grams of {protocol.gram} characters, "
                 f"{protocol.pairs} position pair(s) a device")  # fmt: skip
    title = f"simulated {mechanism} reports"
    print_table(Table.pairs(shown.items(), title=title, notes=(shape, _epsilon_note(protocol))))


def _refuse(label: str, refused: dict[str, bool], mechanism: str) -> None:
    more = ", --edge-threshold" if mechanism == NGRAM_NAME else ""
    refuse_for_reports(label, refused, f"{mechanism} reports, strings found without a "
                       f"dictionary; their options are --alpha, --level{more} and "
                       "--max-candidates.")  # fmt: skip


def aggregate_discovery(
    file: str, key: str, *, refused: dict[str, bool], alpha: float,
    edge_threshold: float | None, level: float, batch: int, as_json: bool,
    max_candidates: int | None = None,
) -> None:  # fmt: skip
    """Read the report file of SFP or RAPPOR n-grams and print the strings found;
    ``refused``: options given that do not apply (``--candidates``, ...); ``max_candidates``
    None: the protocol's default."""
    from deniable.oracles import (
        rappor_ngram_from_key,
        read_ngram_file,
        sfp_from_key,
        tally_file,
    )

    mechanism = key.partition("{")[0]
    _check_choices(file, mechanism, refused, alpha, edge_threshold, max_candidates)
    if mechanism == SFP_NAME:
        protocol: Any = sfp_from_key(key, alpha=alpha, max_candidates=max_candidates or 1024)
        with guard_io(f"read {file!r}"), progress_bar(not as_json, f"reading {file}") as bar:
            tally = tally_file(protocol, file, batch=batch, progress=bar)
        return show_discovery(protocol, protocol.estimate(tally, level=level), file, level,
                              as_json)  # fmt: skip
    protocol = rappor_ngram_from_key(key)
    with guard_io(f"read {file!r}"), progress_bar(not as_json, f"reading {file}") as bar:
        reports = read_ngram_file(protocol, file, batch=batch, progress=bar)
    found = protocol.discover(reports, alpha=alpha, edge_threshold=edge_threshold or 0.02,
                              max_candidates=max_candidates or 10_000)  # fmt: skip
    show_discovery(protocol, found, file, level, as_json)


def _check_choices(
    label: str, mechanism: str, refused: dict[str, bool], alpha: float,
    edge_threshold: float | None, max_candidates: int | None,
) -> None:  # fmt: skip
    """The server's options checked, each naming itself; options that do not apply refused."""
    _refuse(label, {**refused, "`--edge-threshold`": (
        edge_threshold is not None and mechanism != NGRAM_NAME)}, mechanism)  # fmt: skip
    _in_range("alpha", alpha, 0, 1, open_=True)
    if edge_threshold is not None:
        _in_range("edge-threshold", edge_threshold, 0, 1, open_=True)
    if max_candidates is not None:
        _in_range("max-candidates", max_candidates, 1, _MAX_CANDIDATES[mechanism])


def aggregate_discovery_tables(
    tables: Any, *, refused: dict[str, bool], alpha: float, edge_threshold: float | None,
    level: float, scheduler: Any, batch: int, local_workers: int, as_json: bool,
    max_candidates: int | None = None,
) -> None:  # fmt: skip
    """The strings SFP or RAPPOR's n-grams find in report tables
    (``_telemetry_tables.TableSource``), their tallies and likelihoods computed on the Dask
    cluster ``scheduler`` names (:func:`~deniable.distributed.aggregate_strings`)."""
    from deniable.distributed import aggregate_sfp_stream, aggregate_strings

    protocol = tables.oracle
    _check_choices(tables.label, protocol.name, refused, alpha, edge_threshold, max_candidates)
    with guard_io(f"read {tables.label!r}"):
        if tables.stream is not None:  # an SFP or n-gram stream: the days' partitions
            root, sid, start, end = tables.stream
            grams = (
                {}
                if protocol.name == SFP_NAME
                else {"edge_threshold": 0.02 if edge_threshold is None else edge_threshold}
            )
            found = aggregate_sfp_stream(
                root, sid, start=start, end=end, scheduler=scheduler, batch=batch,
                local_workers=local_workers, alpha=alpha, level=level,
                max_candidates=max_candidates, **grams,
            )  # fmt: skip
        else:
            found = aggregate_strings(
                tables.file, protocol, scheduler=scheduler, batch=batch,
                local_workers=local_workers, alpha=alpha,
                edge_threshold=0.02 if edge_threshold is None else edge_threshold, level=level,
                max_candidates=max_candidates,
            )  # fmt: skip
    if protocol.name == SFP_NAME:  # the alpha it estimated with
        from deniable.oracles import sfp_from_key

        protocol = sfp_from_key(protocol.key, alpha=alpha, max_candidates=max_candidates or 1024)
    show_discovery(protocol, found, tables.label, level, as_json)


def show_discovery(protocol: Any, found: Any, label: str, level: float, as_json: bool) -> None:
    """Print what SFP or RAPPOR's n-grams found (``--json``: the result's own JSON with the
    file, the key and the epsilons)."""
    from deniable.oracles import SFP

    if as_json:
        body = found.to_dict() if isinstance(protocol, SFP) else found.to_dict(level)
        data = {"file": label, **body, "mechanism": protocol.key, **_epsilons(protocol)}
        emit_json(to_jsonable(data))
        return
    if isinstance(protocol, SFP):
        table = found.table()
    else:  # the n-grams' table at --level
        low, high = found.ci(level)
        rows = tuple((s, float(found.values[i]), float(found.se[i]), float(low[i]),
                      float(high[i])) for i, s in enumerate(found.strings))  # fmt: skip
        base = found.table()
        table = Table(("string", "frequency", "SE", f"{level:.0%} low", f"{level:.0%} high"),
                      rows, title=base.title, notes=base.notes)  # fmt: skip
    note = _epsilon_note(protocol)
    if isinstance(protocol, SFP):  # its table states the epsilons; not the implemented one
        note = f"implemented epsilon: {format_epsilon(protocol.implemented_epsilon)}"
    print_table(Table(table.columns, table.rows, title=table.title,
                      notes=(*table.notes, note), sections=table.sections))  # fmt: skip
