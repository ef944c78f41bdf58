"""The options every command shares, declared once: the design and its ``--param``,
``--level``, ``--seed``, ``--json`` and ``--force``.

``--force`` lets a command replace an existing output file (never one of its inputs); the
checks and the write are :func:`deniable.cli._files.claim_output`.

``--seed`` is a non-negative integer everywhere; a command that draws random numbers without
one draws a fresh seed and prints it (text and JSON), so that any run can be repeated.
``--level`` is a confidence level in the open interval (0, 1).  Errors in these options are
found by the parser and reported as one ``error:`` line (exit status 2).

Options that several commands take together (the sample's design, the two-group
simulation's) are an :class:`OptionGroup`: declared once, with the value they make.
"""

from __future__ import annotations

import functools
import inspect
import secrets
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer

__all__ = [
    "NO_OPTIONS",
    "DesignArg",
    "DesignOpt",
    "ForceOpt",
    "JsonOpt",
    "LevelOpt",
    "OptionGroup",
    "ParamOpt",
    "SeedOpt",
    "fresh_seed",
    "mechanism_option",
    "passed_on",
    "text_option",
]

F = TypeVar("F", bound=Callable[..., Any])


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


def mechanism_option(flag: str, help: str, **more: Any) -> Any:
    """The ``typer.Option`` of an option that only some telemetry mechanisms take: not given
    (``None``) by default, and the default the mechanism uses said in ``help`` (typer's own
    default column, ``None``, is not shown)."""
    return typer.Option(flag, help=help, show_default=False, **more)


def text_option(flag: str, help: str, **more: Any) -> tuple[Any, None]:
    """An option of an :class:`OptionGroup` that takes text (a column, a number, a list of
    numbers, a name), ``None`` when not given: its annotated type and its default."""
    return Annotated[str | None, typer.Option(flag, help=help, **more)], None


class OptionGroup:
    """Options that several commands take together, declared once, and the value they make.

    ``build`` makes the value from the options given (keyword arguments named as the
    options); ``options`` maps each option's parameter name to its annotated type (a
    ``typer.Option``) and its default, in the order ``--help`` lists them.  A command names
    one parameter for the whole group and is decorated with ``group.expand(name)``: typer
    sees the group's options in that parameter's place, and the command receives
    ``build(**options)`` there (nothing is parsed or checked before the command runs, so
    its errors come in the order it checks them).  ``only``: a part of the group.
    """

    def __init__(self, build: Callable[..., Any], options: dict[str, tuple[Any, Any]]) -> None:
        self.build = build
        self.options = options

    def expand(self, name: str, *, only: tuple[str, ...] = ()) -> Callable[[F], F]:
        """The decorator that puts the group's options (``only`` these, if given) in the
        place of the command's parameter ``name``."""
        chosen = [key for key in self.options if not only or key in only]
        if len(chosen) != (len(only) or len(self.options)):
            raise ValueError(f"not options of this group: {set(only) - set(self.options)}")

        def decorate(func: F) -> F:
            # typer reads the annotations evaluated (not the strings of this package's
            # modules), from the signature and __annotations__ set below
            signature = inspect.signature(func, eval_str=True)
            if name not in signature.parameters:
                raise ValueError(f"{func.__name__} has no parameter {name!r} for the group")
            params: list[inspect.Parameter] = []
            for param in signature.parameters.values():
                if param.name != name:
                    params.append(param)
                    continue
                params += [
                    param.replace(name=key, annotation=self.options[key][0],
                                  default=self.options[key][1])
                    for key in chosen
                ]  # fmt: skip

            @functools.wraps(func)
            def command(**kwargs: Any) -> Any:
                values = {key: kwargs.pop(key) for key in chosen}
                return func(**kwargs, **{name: self.build(**values)})

            command.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
            command.__annotations__ = {p.name: p.annotation for p in params}
            command.__annotations__["return"] = signature.return_annotation
            return command  # type: ignore[return-value]

        return decorate


def _as_given(**values: Any) -> dict[str, Any]:
    return {name.replace("_", "-"): x for name, x in values.items()}


def passed_on(**options: Any) -> OptionGroup:
    """A group of options (each parameter's name to its annotated type; ``None`` when not
    given) that the command passes on as given: its value maps each option's name as typed
    without ``--`` (parameter ``max_bytes``: ``max-bytes``) to the value given."""
    return OptionGroup(_as_given, {name: (kind, None) for name, kind in options.items()})


#: The default of a command's parameter that a :func:`passed_on` group takes the place of
#: (never read: the command receives the options given).
NO_OPTIONS: dict[str, Any] = {}
