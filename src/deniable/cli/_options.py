"""The options every command shares, declared once: the design and its ``--param``,
``--level``, ``--seed``, ``--json`` and ``--force``.

``--force`` lets a command replace an existing output file (never one of its inputs); the
checks and the write are :func:`deniable.cli._files.claim_output`.

``--seed`` is a non-negative integer everywhere; a command that draws random numbers without
one draws a fresh seed and prints it (text and JSON), so that any run can be repeated.
``--level`` is a confidence level in the open interval (0, 1).  Errors in these options are
found by the parser and reported as one ``error:`` line (exit status 2).
"""

from __future__ import annotations

import secrets
from typing import Annotated

import typer

__all__ = [
    "DesignArg",
    "DesignOpt",
    "ForceOpt",
    "JsonOpt",
    "LevelOpt",
    "ParamOpt",
    "SeedOpt",
    "fresh_seed",
]


def _level(value: float) -> float:
    if not 0 < value < 1:
        raise typer.BadParameter("must be in (0, 1)")
    return value


DesignArg = Annotated[
    str, typer.Argument(help="Design name (see `deniable designs`).", show_default=False)
]
DesignOpt = Annotated[
    str,
    typer.Option(
        "--design", "-d", help="Design name (see `deniable designs`).", show_default=False
    ),
]
ParamOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--param",
        "-p",
        metavar="NAME=VALUE",
        help="A design parameter, repeatable (e.g. --param p=0.75; 3/4 and a,b,c lists work).",
    ),
]
LevelOpt = Annotated[
    float,
    typer.Option("--level", callback=_level, help="Confidence level of the intervals, in (0, 1)."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON to stdout instead of a table.")]
ForceOpt = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Replace the output file if it exists (never one of the command's inputs).",
    ),
]
SeedOpt = Annotated[
    int | None,
    typer.Option(
        "--seed",
        min=0,
        help="Seed of the random numbers, a whole number >= 0 (default: a fresh one); the "
        "output shows the seed used.",
    ),
]


def fresh_seed() -> int:
    """A new seed for a run without ``--seed`` (printed, so the run can be repeated)."""
    return secrets.randbelow(2**32)
