"""`deniable spec`: question specs (versioned JSON) and the randomizer test vectors.

``show`` prints a design's spec, ``check`` validates a spec file and prints its epsilon,
``vectors`` writes the test vectors other clients are checked against (``docs/specs.md``).
Importing this module registers the sub-application on the main app.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from deniable.cli._base import build_design, fail, guard_io
from deniable.cli._files import claim_output
from deniable.cli._options import DesignArg, ForceOpt, JsonOpt, ParamOpt
from deniable.cli._render import emit_json, print_table
from deniable.common import epsilon_note, load_json
from deniable.designs import QuestionSpec, dump_vectors, randomizer_vectors, spec_of
from deniable.exceptions import DeniableError
from deniable.results import Table

__all__ = ["MAX_SPEC_BYTES", "spec_app"]

#: The largest spec file ``deniable spec check`` reads.
MAX_SPEC_BYTES = 64 << 20

spec_app = typer.Typer(
    name="spec",
    help=(
        "Question specs (versioned JSON that a server, a browser or a file can hold) and the "
        "randomizer test vectors other clients are checked against."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)


@spec_app.command("show")
def show_command(
    design: DesignArg,
    param: ParamOpt = None,
    text: Annotated[
        str | None, typer.Option("--text", help="The question's wording, stored in the spec.")
    ] = None,
    labels: Annotated[
        str | None,
        typer.Option(
            "--labels",
            metavar="A,B,...",
            help="A label per true answer, comma-separated (e.g. no,yes).",
        ),
    ] = None,
) -> None:
    """Print the question spec of a design (JSON)."""
    d = build_design(design, param)
    names = None if labels is None else [x.strip() for x in labels.split(",")]
    sys.stdout.write(spec_of(d, text=text, labels=names).to_json() + "\n")


@spec_app.command("check")
def check_command(
    file: Annotated[
        str, typer.Argument(metavar="FILE", help="A spec file (JSON).", show_default=False)
    ],
    as_json: JsonOpt = False,
) -> None:
    """Check a spec file against its parameters and print its ε.

    Strict JSON of at most 64 MB: a key given twice, nesting past 64 levels or an integer of
    more than 40 digits is refused."""
    path = Path(file)
    with guard_io(f"read {file!r}"):
        if path.is_dir():
            fail(f"`FILE` {file!r} is a directory, not a spec file.")
        with open(path, "rb") as fh:
            data = fh.read(MAX_SPEC_BYTES + 1)
    if len(data) > MAX_SPEC_BYTES:
        fail(f"`FILE` {file!r} is larger than the {MAX_SPEC_BYTES >> 20} MB a spec may have.")
    parsed = load_json(data, source=f"spec file {file!r}")  # names the file and the place
    try:
        spec = QuestionSpec.from_dict(parsed)
    except DeniableError as exc:  # the spec's own message, naming the file it is in
        fail(f"spec file {file!r}: {exc}")
    if as_json:
        emit_json(
            {
                "file": file,
                "valid": True,
                "schema": spec.schema,
                "mechanism": spec.mechanism,
                "key": spec.key,
                "algorithm": spec.algorithm,
                "words_per_report": spec.words_per_report,
                "epsilon": spec.epsilon,
            }
        )
        return
    params = ", ".join(f"{k}={_show(x)}" for k, x in spec.parameters.items())
    words = spec.words_per_report
    rows = [
        ("file", file),
        ("schema", spec.schema),
        ("mechanism", spec.mechanism),
        ("parameters", params or "(none)"),
        ("key", spec.key),
        ("algorithm", f"{spec.algorithm}, {words} word{'s' if words > 1 else ''} per report"),
        ("ε", epsilon_note(spec.epsilon)),
    ]
    if spec.text is not None:
        rows.insert(3, ("text", spec.text))
    print_table(Table.pairs(rows, title="A valid question spec"))


def _show(value: object) -> str:
    """An exact parameter as written in the spec, without JSON quotes (``3/4``, ``0.2,0.8``)."""
    if isinstance(value, list):
        return ",".join(_show(x) for x in value)
    return json.dumps(value) if value is None or isinstance(value, bool) else str(value)


@spec_app.command("vectors")
def vectors_command(
    out: Annotated[
        str,
        typer.Option(
            "--out",
            metavar="FILE",
            help="Where to write the vectors (JSON, FILE.json).",
            show_default=False,
        ),
    ],
    force: ForceOpt = False,
) -> None:
    """Write the randomizer test vectors (every design; schema deniable.vectors/1)."""
    target = claim_output("--out", out, force=force, formats=["json"])
    vectors = randomizer_vectors()
    target.write_text(dump_vectors(vectors))
    cases = vectors["cases"]
    designs = len({c["spec"]["mechanism"] for c in cases})
    sys.stdout.write(f"wrote {len(cases)} test vectors of {designs} designs to {out}\n")
