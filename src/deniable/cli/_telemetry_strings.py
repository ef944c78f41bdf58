"""The devices' strings of ``deniable telemetry simulate`` for every mechanism of strings
(RAPPOR, the count mean sketches, the heavy-hitter protocols): read from a file one a line,
bounded, and drawn in batches.

A strings file (``--candidates``, ``--values``) is read whole but bounded: at most
``MAX_LINES_BYTES`` bytes (read with that limit, so a file that grows or a pipe cannot pass
it) and ``max_lines`` strings; it must be UTF-8 and hold at least one string.  The devices'
strings are Zipf's law over the lines of ``--candidates`` (in their order: the ``j``-th line
has frequency proportional to ``1 / j``) or the lines of ``--values``, one device a line.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from deniable.cli._base import fail, guard_io

__all__ = [
    "MAX_LINES",
    "MAX_LINES_BYTES",
    "check_lengths",
    "device_strings",
    "read_lines",
    "string_batches",
]

#: The largest strings file read (``--candidates``, ``--values``).
MAX_LINES_BYTES = 1 << 30
#: The most strings a file may hold (one device a line for ``--values``).
MAX_LINES = 10**8


def read_lines(
    option: str, path: str, *, distinct: bool, max_lines: int | None = None
) -> list[str]:
    """The strings of ``path``, one a line (the line end removed, blank lines skipped):
    one error line naming ``option`` for a file that cannot be read, is larger than
    ``MAX_LINES_BYTES`` or holds more than ``max_lines`` strings (default ``MAX_LINES``), is
    not UTF-8, holds none, or (with ``distinct``) repeats one."""
    most = MAX_LINES if max_lines is None else min(max_lines, MAX_LINES)
    with guard_io(f"read {path!r} (`{option}`)"), open(path, "rb") as fh:
        raw = fh.read(MAX_LINES_BYTES + 1)  # bounded, whatever the file's size claims
    if len(raw) > MAX_LINES_BYTES:
        fail(f"`{option}` {path!r} must be at most {MAX_LINES_BYTES:,} bytes, got more.")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        fail(f"`{option}` {path!r} must be UTF-8 text, got a byte that is not (at {exc.start}).")
    numbered = [(i, line.removesuffix("\r")) for i, line in enumerate(text.split("\n"), 1)]
    lines = [line for _, line in numbered if line != ""]
    if not lines:
        fail(f"`{option}` {path!r} must hold at least one string (one a line), got none.")
    if len(lines) > most:
        fail(f"`{option}` {path!r} must hold at most {most:,} strings, got {len(lines):,}.")
    if distinct:
        seen: dict[str, int] = {}
        for number, line in numbered:
            if line == "":
                continue
            if line in seen:
                fail(
                    f"`{option}` {path!r} must hold distinct strings, got {line!r} on lines "
                    f"{seen[line]} and {number}."
                )
            seen[line] = number
    return lines


def device_strings(
    candidates: str | None,
    values: str | None,
    devices: int | None,
    mechanism: str,
    *,
    max_devices: int | None = None,
) -> tuple[list[str], int]:
    """The strings devices are drawn from (``--candidates``) or hold, one a device
    (``--values``), and the number of devices; one error line for both or neither given,
    ``--devices`` missing with ``--candidates`` or contradicting ``--values``."""
    if (candidates is None) == (values is None):
        fail(
            f"`--mechanism {mechanism}` simulates strings: give --candidates FILE (devices "
            "drawn by Zipf's law over its lines) or --values FILE (one device's string a "
            f"line), one of them, got {'both' if candidates else 'neither'}."
        )
    if values is not None:
        strings = read_lines("--values", values, distinct=False, max_lines=max_devices)
        if devices is not None and devices != len(strings):
            fail(
                f"`--devices` must be the number of strings of --values ({len(strings)}) or "
                f"left out, got {devices}."
            )
        return strings, len(strings)
    assert candidates is not None
    if devices is None:
        fail("`--devices` must be given with --candidates (the number of devices drawn).")
    return read_lines("--candidates", candidates, distinct=True), devices


def check_lengths(option: str, strings: list[str], max_bytes: int) -> None:
    """One error line naming ``option`` for a string longer than ``max_bytes`` bytes of
    UTF-8 (its number, never the string: it is a device's value)."""
    for i, s in enumerate(strings, 1):
        size = len(s.encode("utf-8"))
        if size > max_bytes:
            fail(
                f"`{option}`: string {i} must be at most max_bytes = {max_bytes} bytes in "
                f"UTF-8, got {size} (the string is not shown)."
            )


def string_batches(
    strings: list[str], n: int, *, zipf: bool, rng: Any, batch: int
) -> Iterator[tuple[int, Any]]:
    """``(first device, strings)`` of ``n`` devices, ``batch`` at a time: Zipf's law over
    ``strings`` in their order (``zipf``, drawn with ``rng`` as each batch is asked for, so
    a consumer that randomizes a batch with the same ``rng`` before asking for the next
    keeps one stream), else ``strings`` themselves (one a device)."""
    from deniable.simulation import DevicePopulation

    pool = np.asarray(strings, dtype=object)
    population = DevicePopulation.zipf(len(strings)) if zipf else None
    for start in range(0, n, batch):
        size = min(batch, n - start)
        if population is not None:  # Zipf's law over the candidates, in their order
            yield start, pool[population.draw(size, rng=rng)]
        else:
            yield start, pool[start : start + size]
