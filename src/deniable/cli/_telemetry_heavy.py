"""The heavy-hitter protocols on the command line (``deniable telemetry simulate
--mechanism pem|treehist`` and ``aggregate`` of their reports, no ``--candidates``;
``docs/heavy-hitters.md``).

``simulate`` draws each device's string (Zipf's law over the lines of ``--candidates``, or
the lines of ``--values``, one device a line: ``_telemetry_strings``), randomizes it with the
library's :class:`~deniable.oracles.PEM` or :class:`~deniable.oracles.TreeHist` (a group,
then one report of the prefix of its group's length) and writes a report file or a report
table (``oracles._heavy_files``).  ``aggregate`` reads the reports (a file in this process,
tables round by round on Dask: :func:`~deniable.distributed.aggregate_heavy_hitters`) and
prints the strings found, their frequencies and intervals, and each round's threshold: no
dictionary of strings is needed.
"""

from __future__ import annotations

from typing import Annotated, Any

from deniable.cli._base import fail, guard_io, refuse_for_reports, refuse_options
from deniable.cli._files import progress_bar
from deniable.cli._options import mechanism_option
from deniable.cli._render import emit_json, print_table
from deniable.cli._telemetry_strings import check_lengths, string_batches
from deniable.cli._telemetry_write import Simulation
from deniable.common import format_epsilon, to_jsonable
from deniable.results import Table

__all__ = [
    "HEAVY",
    "MaxBytesOpt",
    "StartBitsOpt",
    "StepBitsOpt",
    "TopKOpt",
    "aggregate_heavy",
    "aggregate_heavy_tables",
    "not_heavy",
    "simulate_heavy",
]

#: ``simulate --mechanism pem|treehist``: heavy hitters without a dictionary.
HEAVY = ("pem", "treehist")
#: The string bound when not given (bytes).
DEFAULT_MAX_BYTES = 8
#: The bounds the library takes (``deniable.oracles.PEM``): a string bound, PEM's first
#: prefix and its step, in bits.
_MAX_BYTES, _MAX_START, _MAX_STEP = 64, 16, 8
#: Devices randomized at once (each batch is split into the groups by the library).
_BATCH = 1 << 16

MaxBytesOpt = Annotated[
    int | None,
    mechanism_option(
        "--max-bytes",
        help=f"PEM/TreeHist only: the longest string in UTF-8 bytes, 1..{_MAX_BYTES} (default "
        f"{DEFAULT_MAX_BYTES}); longer strings are refused.",
    ),
]
StartBitsOpt = Annotated[
    int | None,
    mechanism_option(
        "--start-bits", help=f"PEM only: the first prefix in bits, 1..{_MAX_START} (default 8)."
    ),
]
StepBitsOpt = Annotated[
    int | None,
    mechanism_option(
        "--step-bits",
        help=f"PEM only: the bits a round extends the prefixes by, 1..{_MAX_STEP} (default 4).",
    ),
]
TopKOpt = Annotated[
    int | None,
    mechanism_option(
        "--top-k",
        help="PEM/TreeHist reports only: the most prefixes a round keeps, 1..4096 (default 16).",
    ),
]


def not_heavy(mechanism: str, given: dict[str, Any]) -> None:
    """Refuse the heavy-hitter options (``given``: name to value) for another mechanism."""
    refuse_options(given, "`--mechanism pem` and `treehist`", mechanism)


def _alphabet(value: str | None) -> bytes | None:
    """``--alphabet`` as PEM's and TreeHist's bytes (its UTF-8 bytes), or None: any byte."""
    if value is None:
        return None
    try:
        raw = value.encode("utf-8")
    except UnicodeEncodeError:
        fail(f"`--alphabet` must be text that UTF-8 encodes, got {value!r}.")
    if not value or len(set(value)) != len(value) or 0 in raw:
        fail(
            "`--alphabet` must hold at least one character, each once, and no NUL (PEM and "
            f"TreeHist take its UTF-8 bytes; NUL pads strings), got {value!r}."
        )
    return raw


def _protocol(mechanism: str, epsilon: float | None, params: dict[str, Any]) -> Any:
    """The protocol of the options, each checked naming its option."""
    from deniable.oracles import PEM, TreeHist

    if epsilon is None:
        fail(f"`--epsilon` must be given for `--mechanism {mechanism}`.")
    size = params["max-bytes"] if params["max-bytes"] is not None else DEFAULT_MAX_BYTES
    if not 1 <= size <= _MAX_BYTES:
        fail(f"`--max-bytes` must be in 1..{_MAX_BYTES}, got {size}.")
    alphabet = _alphabet(params.get("alphabet"))
    if mechanism == "treehist":
        named = [f"`--{n}`" for n in ("start-bits", "step-bits") if params[n] is not None]
        if named:
            fail(f"{', '.join(named)} apply to `--mechanism pem` only, got 'treehist'.")
        # a bad epsilon: one error line
        return TreeHist(epsilon=epsilon, max_bytes=size, alphabet=alphabet)
    start = params["start-bits"] if params["start-bits"] is not None else 8
    step = params["step-bits"] if params["step-bits"] is not None else 4
    top = min(_MAX_START, 8 * size)
    if not 1 <= start <= top:
        fail(f"`--start-bits` must be in 1..{top} (--max-bytes {size}), got {start}.")
    if not 1 <= step <= _MAX_STEP:
        fail(f"`--step-bits` must be in 1..{_MAX_STEP}, got {step}.")
    return PEM(epsilon=epsilon, max_bytes=size, start_bits=start, step_bits=step, alphabet=alphabet)


def _check_alphabet(option: str, strings: list[str], alphabet: bytes | None) -> None:
    """One error line naming ``option`` for a string with a byte outside ``--alphabet``
    (its number and the byte's position, never the string: it is a device's value)."""
    if alphabet is None:
        return
    for i, s in enumerate(strings, 1):
        raw = s.encode("utf-8")
        outside = raw.translate(None, alphabet)
        if outside:
            at = next(j for j, b in enumerate(raw) if b not in alphabet)
            fail(
                f"`{option}`: string {i} must use only the UTF-8 bytes of --alphabet, got one "
                f"that is not at byte {at} (the string is not shown)."
            )


def _epsilon_note(protocol: Any) -> str:
    # one report a device at the oracle's epsilon, whatever the rounds (oracles._heavy_hitters)
    return (
        f"epsilon {format_epsilon(protocol.epsilon_per_device)} per device (one report, any "
        f"change of its string; implemented: {format_epsilon(protocol.implemented_epsilon)})"
    )


def simulate_heavy(
    run: Simulation,
    *,
    mechanism: str,
    epsilon: float | None,
    others: dict[str, Any],
    params: dict[str, Any],
) -> None:
    """Simulate devices of PEM or TreeHist into the report file or table of ``run`` and
    print it; ``others``: options of other mechanisms (refused when given); ``params``:
    ``max-bytes``, ``start-bits``, ``step-bits``, ``alphabet`` (``None``: the default)."""
    import numpy as np

    given = [f"`--{name}`" for name, x in others.items() if x is not None]
    if given:
        fail(
            f"{', '.join(given)} do not apply to `--mechanism {mechanism}`: its parameters "
            "are --epsilon, --max-bytes, --alphabet"
            + (", --start-bits, --step-bits." if mechanism == "pem" else ".")
        )  # fmt: skip
    run.require_pyarrow()
    protocol = _protocol(mechanism, epsilon, params)
    strings, n = run.strings(mechanism)
    option = "--values" if run.values is not None else "--candidates"
    check_lengths(option, strings, protocol.max_bytes)
    for i, s in enumerate(strings, 1):
        if "\0" in s:
            fail(f"`{option}`: string {i} must hold no NUL byte (it pads strings), got one.")
    _check_alphabet(option, strings, protocol.symbols)
    groups = len(protocol.levels)
    run.check_devices(n)
    if n < groups:
        fail(
            f"`--devices` must be at least {groups} (one a group: prefixes of "
            f"{protocol.levels[0]}..{protocol.levels[-1]} bits), got {n}."
        )
    record = 8 * (1 + protocol.oracle(protocol.levels[0]).report_width)
    run.check_file_size(n, record, f"{mechanism}, --max-bytes {protocol.max_bytes}")
    gen = np.random.default_rng(run.seed)
    # equal batches of at most about _BATCH: each holds n / b - 1 >= groups devices or more
    count = -(-n // _BATCH)
    size = -(-n // count)

    def batches() -> Any:
        for _, batch_values in string_batches(strings, n, zipf=run.values is None, rng=gen,
                                              batch=size):  # fmt: skip
            yield protocol.randomize(batch_values.tolist(), rng=gen)

    # a table: the group column, then the report's words (deniable.distributed._tables)
    data = run.write_strings(
        protocol, n, batches(), mechanism=protocol.key,
        epsilon_per_device=float(protocol.epsilon_per_device),
        implemented_epsilon=float(protocol.implemented_epsilon), levels=list(protocol.levels),
    )  # fmt: skip
    if run.as_json:
        emit_json(to_jsonable(data))
        return
    shown = {**data, "mechanism": mechanism, "levels": f"{len(protocol.levels)} groups",
             "epsilon_per_device": format_epsilon(protocol.epsilon_per_device),
             "implemented_epsilon": format_epsilon(protocol.implemented_epsilon)}  # fmt: skip
    if protocol.symbols is not None:  # public configuration, in the key
        shown["alphabet"] = protocol.symbols.decode("utf-8", "backslashreplace")
    notes = (
        f"prefixes of {', '.join(map(str, protocol.levels))} bits, one group each; "
        f"g = {protocol.base.g} buckets",
        _epsilon_note(protocol),
    )
    print_table(Table.pairs(shown.items(), title=f"simulated {protocol.method} reports",
                            notes=notes))  # fmt: skip


def _refuse(label: str, refused: dict[str, bool]) -> None:
    refuse_for_reports(label, refused, "heavy-hitter reports (PEM/TreeHist), found without a "
                       "dictionary; their options are --top-k, --alpha and --level.")  # fmt: skip


def aggregate_heavy(
    file: str, key: str, *, refused: dict[str, bool], top_k: int | None, alpha: float,
    level: float, batch: int, as_json: bool,
) -> None:  # fmt: skip
    """Read the report file of PEM or TreeHist and print the heavy hitters found;
    ``refused``: options given that do not apply (``--candidates``, ...)."""
    from deniable.oracles import heavy_from_key, read_heavy_file

    _refuse(file, refused)
    protocol = _with_choices(heavy_from_key(key), top_k, alpha)
    with guard_io(f"read {file!r}"), progress_bar(not as_json, f"reading {file}") as progress:
        reports = read_heavy_file(protocol, file, batch=batch, progress=progress)
    _show(protocol, protocol.estimate(reports, level=level), file, as_json)


def aggregate_heavy_tables(
    tables: Any, *, refused: dict[str, bool], top_k: int | None, alpha: float, level: float,
    scheduler: Any, batch: int, local_workers: int, as_json: bool,
) -> None:  # fmt: skip
    """The heavy hitters of report tables (``_telemetry_tables.TableSource``), each round
    counted on the Dask cluster ``scheduler`` names."""
    from deniable.distributed import aggregate_heavy_hitters, aggregate_heavy_stream

    _refuse(tables.label, refused)
    protocol = _with_choices(tables.oracle, top_k, alpha)
    options = {"scheduler": scheduler, "batch": batch, "local_workers": local_workers,
               "level": level, "top_k": protocol.top_k, "alpha": protocol.alpha}  # fmt: skip
    with guard_io(f"read {tables.label!r}"):
        if tables.stream is not None:  # every round reads its group among the days' reports
            root, sid, start, end = tables.stream
            found = aggregate_heavy_stream(root, sid, start=start, end=end, **options)
        else:
            found = aggregate_heavy_hitters(tables.file, protocol, **options)
    _show(protocol, found, tables.label, as_json)


def _with_choices(protocol: Any, top_k: int | None, alpha: float) -> Any:
    from deniable.oracles import heavy_from_key

    if top_k is not None and not 1 <= top_k <= 4096:
        fail(f"`--top-k` must be in 1..4096, got {top_k}.")
    if not 0 < alpha < 1:
        fail(f"`--alpha` must be in (0, 1), got {alpha}.")
    return heavy_from_key(protocol.key, top_k=16 if top_k is None else top_k, alpha=alpha)


def _show(protocol: Any, found: Any, label: str, as_json: bool) -> None:
    if as_json:
        data = {"file": label, "mechanism": protocol.key,
                "implemented_epsilon": protocol.implemented_epsilon, **found.to_dict()}  # fmt: skip
        emit_json(to_jsonable(data))
        return
    table = found.table()
    implemented = f"implemented epsilon: {format_epsilon(protocol.implemented_epsilon)}"
    print_table(Table(table.columns, table.rows, title=table.title,
                      notes=(*table.notes, implemented), sections=table.sections))  # fmt: skip
