"""Regenerate the CLI pages by running every example (COLUMNS=80, no colour).

Each ``docs/templates/NAME.md.in`` becomes ``docs/NAME.md``: a line ``@@ deniable ...`` is
replaced by a console block with the command and its real output (and its exit status when
non-zero).  Run after changing a command: ``.venv/bin/python scripts/gen_cli_docs.py``.
"""

from __future__ import annotations

import json
import os
import pathlib
import shlex
import subprocess
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXE = ROOT / ".venv/bin/deniable"
ENV = dict(os.environ, COLUMNS="80", LINES="50", NO_COLOR="1", TERM="dumb")
ENV.pop("FORCE_COLOR", None)
REPORTS = [1, 0, 0, 1, 1, 0, 1, 0, 0, 1, 1, 1, 0, 1, 0, 0, 1, 0, 1, 1]


def run(cmd: str, cwd: pathlib.Path) -> str:
    args = shlex.split(cmd)
    done = subprocess.run(
        [str(EXE), *args[1:]], capture_output=True, text=True, env=ENV, cwd=cwd, check=False
    )
    out = "\n".join(line.rstrip() for line in (done.stdout + done.stderr).splitlines())
    if done.returncode:
        out += f"\n(exit status {done.returncode})"
    return out


def shown(cmd: str) -> str:
    """The command as displayed, wrapped with backslashes past 88 columns."""
    if len(cmd) <= 88:
        return f"$ {cmd}"
    parts, cur = [], "$ "
    for word in shlex.split(cmd):
        if len(cur) + len(word) + 1 > 86 and cur.strip() != "$":
            parts.append(cur.rstrip() + " \\")
            cur = "    "
        cur += shlex.quote(word) + " "
    parts.append(cur.rstrip())
    return "\n".join(parts)


def main() -> None:
    cwd = pathlib.Path(tempfile.mkdtemp())
    (cwd / "reports.csv").write_text(
        "respondent,answer\n" + "".join(f"{i},{b}\n" for i, b in enumerate(REPORTS, 1))
    )
    (cwd / "answers.txt").write_text("1\n0\n1\n\n1\nNA\n0\n1\n")
    from deniable.designs import Warner, spec_of  # a spec file, and one with a changed threshold

    spec = spec_of(Warner(0.75)).to_dict()
    (cwd / "warner.json").write_text(json.dumps(spec, indent=2))
    spec["thresholds"]["yes"][1] += 1
    (cwd / "tampered.json").write_text(json.dumps(spec, indent=2))
    for template in sorted((ROOT / "docs/templates").glob("*.md.in")):
        out = []
        for line in template.read_text().splitlines(keepends=True):
            if line.startswith("@@ "):
                cmd = line[3:].strip()
                out.append(f"```console\n{shown(cmd)}\n{run(cmd, cwd)}\n```\n")
            else:
                out.append(line)
        (ROOT / "docs" / template.name.removesuffix(".in")).write_text("".join(out))


if __name__ == "__main__":
    main()
