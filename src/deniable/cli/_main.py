"""Assemble the application: importing the command modules registers their commands."""

from __future__ import annotations

from typing import Annotated

import typer

import deniable

# `deniable --help` lists the commands in the order they are registered, i.e. the order in
# which their modules are first imported: keep this line in that order (not sorted).
from deniable.cli import _designs, _decisions, _analyze, _study  # isort: skip
from deniable.cli import _power, _privacy, _regress, _spec, _tour
from deniable.cli._base import app

__all__ = ["app"]

_COMMAND_MODULES = (
    _designs, _decisions, _tour, _analyze, _study, _regress, _power, _privacy, _spec,
)  # fmt: skip


def _version(value: bool) -> None:
    if value:
        typer.echo(f"deniable {deniable.__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Randomized response with exact epsilon (exit status 2 on any bad input)."""
