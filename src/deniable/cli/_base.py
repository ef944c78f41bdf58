"""The Typer application, its one-line error handling, and helpers shared by the commands.

Exit codes: 0 on success; 2 for every kind of bad input (a usage error found by the parser,
a bad ``--param``, a value ``deniable`` rejects, an unreadable file); anything else is a
bug and shows its traceback.
"""

from __future__ import annotations

import codecs
import math
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from typer.core import TyperGroup

from deniable.common import validation
from deniable.exceptions import DeniableError

if TYPE_CHECKING:  # pragma: no cover
    from deniable.designs import Design

__all__ = [
    "USAGE_EXIT",
    "CliError",
    "CommandGroup",
    "build_design",
    "fail",
    "guard_io",
    "parse_counts",
    "parse_number",
    "parse_numbers",
    "parse_params",
    "refuse_for_reports",
    "refuse_options",
]

#: Exit status for every kind of bad input (the parser's own usage errors use it too).
USAGE_EXIT = 2

# The parser's exception base (click's, vendored by recent Typer): found through the
# public ``typer.BadParameter`` so that no private module path is imported.
_PARSER_ERROR: type[Exception] = next(
    c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException"
)


class CliError(Exception):
    """Bad input found by the CLI itself; printed as one ``error: ...`` line, exit 2."""


def fail(message: str) -> NoReturn:
    """Stop the command with one error line on stderr."""
    raise CliError(message)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _report(message: str) -> None:
    with suppress(OSError):  # stderr itself closed: nothing more can be said
        sys.stderr.write(f"error: {_one_line(message)}\n")
        sys.stderr.flush()


#: ASCII stand-ins for the non-ASCII characters the commands print, used when the terminal
#: cannot encode them (``LC_ALL=C``, ``PYTHONIOENCODING=ascii``); anything else is escaped.
_ASCII = {
    "ε": "eps", "∞": "inf", "−": "-", "–": "-", "—": "--", "λ": "lambda", "δ": "delta",
    "ρ": "rho", "μ": "mu", "α": "alpha", "σ": "sigma", "π": "pi", "θ": "theta", "≤": "<=",
    "≥": ">=", "≠": "!=", "≈": "~", "±": "+-", "×": "x", "·": "*", "√": "sqrt", "…": "...",
    "→": "->", "←": "<-", "†": "+", "‘": "'", "’": "'", "“": '"', "”": '"', "²": "^2",
    "½": "1/2", "é": "e", "ö": "o", "ü": "u",
}  # fmt: skip
_ASCII_ERRORS = "deniable-ascii"


def _ascii_fallback(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    bad = exc.object[exc.start : exc.end]
    return "".join(_ASCII.get(c) or c.encode("ascii", "backslashreplace").decode() for c in bad), (
        exc.end
    )


codecs.register_error(_ASCII_ERRORS, _ascii_fallback)


def _encodable_streams() -> None:
    """Let stdout and stderr print ε, ∞, ... on any terminal: where their encoding cannot
    encode them, write ASCII stand-ins instead of failing."""
    for stream in (sys.stdout, sys.stderr):
        try:
            "ε∞−λ…".encode(getattr(stream, "encoding", None) or "utf-8")
        except (UnicodeEncodeError, LookupError):
            reconfigure = getattr(stream, "reconfigure", None)
            if reconfigure is not None:
                with suppress(Exception):
                    reconfigure(errors=_ASCII_ERRORS)


class _OutputError(Exception):
    """Writing to standard output failed (a full disk, a closed pipe)."""

    def __init__(self, cause: OSError) -> None:
        super().__init__(cause.strerror or str(cause))
        self.cause = cause


class _Output:
    """Standard output during a command: a failing write raises :class:`_OutputError`, so
    it cannot be mistaken for a failure to read an input file."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return int(self._stream.write(text))
        except OSError as exc:
            raise _OutputError(exc) from exc

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            raise _OutputError(exc) from exc

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _silence_stdout() -> None:
    """After a failed write: point stdout's file descriptor at /dev/null so that Python's
    own flush at exit does not fail again with a traceback-like message."""
    with suppress(Exception):
        fd = sys.stdout.fileno()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)


def _given_value(args: Sequence[str] | None, param: Any) -> str | None:
    """The text given for option ``param`` on the command line (the last one), if any."""
    opts = [o for o in getattr(param, "opts", ()) if o.startswith("-")]
    if not opts or args is None:
        return None
    args = list(args)
    found = None
    for i, token in enumerate(args):
        if token == "--":
            break
        if token in opts and i + 1 < len(args):
            found = args[i + 1]
        for o in opts:
            if o.startswith("--") and token.startswith(o + "="):
                found = token[len(o) + 1 :]
    return found


class CommandGroup(TyperGroup):
    """Typer's command group, but every anticipated error is ONE ``error: ...`` stderr line.

    Typer prints parser errors as a multi-line panel; here they, ``deniable``'s own
    exceptions (:class:`~deniable.exceptions.DeniableError`) and :class:`CliError` become a
    single line and exit status 2.  Output that cannot be written ends the command with
    exit status 1 and one error line: for a closed pipe (``deniable designs | head -1``) and
    for a full disk (``> /dev/full``).  A terminal that cannot show ε or ∞ gets ASCII
    stand-ins (``eps``, ``inf``).  Other exceptions are bugs and propagate with their
    traceback.
    """

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        _encodable_streams()
        stdout = sys.stdout
        sys.stdout = _Output(stdout)
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
            sys.stdout.flush()
        except (CliError, DeniableError) as exc:
            _report(str(exc))
            sys.exit(USAGE_EXIT)
        except _PARSER_ERROR as exc:
            message = exc.format_message()  # type: ignore[attr-defined]
            ctx = getattr(exc, "ctx", None)
            where = f"`{ctx.command_path} --help`" if ctx is not None else "`deniable --help`"
            if type(exc).__name__ == "NoArgsIsHelpError":  # no arguments: the help is shown
                if message.strip():  # plain (non-rich) help comes back as the message
                    sys.stdout.write(message.rstrip("\n") + "\n")
                _report(f"a command is missing (see {where}).")
                sys.exit(USAGE_EXIT)
            given = _given_value(args, getattr(exc, "param", None))
            if given is not None and repr(given) not in message:
                message = f"{message.rstrip('.')}, got {given!r}"
            if ctx is not None:
                message = f"{message.rstrip('.')}. (see {where})"
            _report(message)
            sys.exit(USAGE_EXIT)
        except typer.Abort:
            _report("aborted.")
            sys.exit(1)
        except _OutputError as exc:
            sys.stdout = stdout
            _silence_stdout()
            if isinstance(exc.cause, BrokenPipeError):
                _report("the output was cut short: the program reading it closed the pipe.")
            else:
                _report(f"cannot write the output: {exc}.")
            sys.exit(1)
        finally:
            if sys.stdout is not stdout:
                with suppress(_OutputError):
                    sys.stdout.flush()
                sys.stdout = stdout
        sys.exit(rv if isinstance(rv, int) else 0)


@contextmanager
def guard_io(what: str) -> Iterator[None]:
    """Turn an ``OSError`` while doing ``what`` into one error line."""
    try:
        yield
    except OSError as exc:
        reason = exc.strerror or str(exc)
        fail(f"cannot {what}: {reason}.")


# --------------------------------------------------------------------------- parsing


def refuse_options(given: Mapping[str, Any], only: str, mechanism: str) -> None:
    """Refuse the options of ``given`` (name without ``--`` to value, ``None`` when not
    given) that were given for ``mechanism``: they apply to ``only`` (e.g.
    ``"`--mechanism cms` and `hcms`"``) only."""
    named = [f"`--{name}`" for name, x in given.items() if x is not None]
    if named:
        fail(f"{', '.join(named)} apply to {only} only, got {mechanism!r}.")


def refuse_for_reports(label: str, refused: Mapping[str, bool], holds: str) -> None:
    """Refuse the options of ``refused`` (each named as the user typed it, to whether it was
    given) for the reports of ``label``, which hold ``holds`` (what they are, and which
    options they take)."""
    named = [name for name, given in refused.items() if given]
    if named:
        fail(f"{', '.join(named)} do not apply to {label!r}: it holds {holds}")


def parse_params(items: Sequence[str] | None) -> dict[str, str]:
    """``["p=0.7", "q=1/4"]`` -> ``{"p": "0.7", "q": "1/4"}``; values stay strings."""
    out: dict[str, str] = {}
    for item in items or ():
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name or not value:
            fail(f"`--param` must look like NAME=VALUE (e.g. --param p=0.75), got {item!r}.")
        if name in out:
            fail(f"`--param` {name!r} given twice ({out[name]!r} and {value!r}).")
        out[name] = value
    return out


def build_design(name: str, params: Sequence[str] | None) -> Design:
    """The design ``name`` from ``--param NAME=VALUE`` strings (see ``make_design``)."""
    from deniable.designs import make_design

    return make_design(name, parse_params(params))


def parse_number(option: str, text: str) -> float:
    """A real number from ``text``; ``3/4`` is allowed."""
    try:
        exact = validation.exact_number(text)
    except (ValueError, ZeroDivisionError):
        fail(f"`{option}` must be a number (e.g. 0.3 or 3/10), got {text!r}.")
    try:
        return float(exact)
    except OverflowError:  # beyond every double (10**400): as float("1e400") reads it
        return math.inf if exact > 0 else -math.inf


def parse_numbers(option: str, text: str) -> list[float]:
    """A comma-separated list of numbers."""
    return [parse_number(option, part) for part in text.split(",")]


def parse_counts(text: str) -> tuple[int, ...]:
    """``"c0,c1,...,ck"`` -> non-negative integer counts."""
    out = []
    for part in text.split(","):
        try:
            c = int(part.strip())
        except ValueError:
            fail(f"`--counts` must be comma-separated whole numbers, got {part.strip()!r}.")
        if c < 0:
            fail(f"`--counts` must be >= 0, got {c}.")
        out.append(c)
    return tuple(out)
