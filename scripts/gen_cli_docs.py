"""Regenerate the CLI pages by running every example (COLUMNS=80, no colour).

Each ``docs/templates/NAME.md.in`` becomes ``docs/NAME.md``: a line ``@@ deniable ...`` is
replaced by a console block with the command and its real output (and its exit status when
non-zero).  Run after changing a command: ``.venv/bin/python scripts/gen_cli_docs.py``.
The examples run the ``deniable`` script of the interpreter that runs this one, on this
checkout's ``src`` (first on ``PYTHONPATH``), so a worktree documents its own code.
"""

from __future__ import annotations

import json
import os
import pathlib
import shlex
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXE = pathlib.Path(sys.executable).parent / "deniable"
ENV = dict(os.environ, COLUMNS="80", LINES="50", NO_COLOR="1", TERM="dumb")
ENV["PYTHONPATH"] = os.pathsep.join(
    p for p in [str(ROOT / "src"), os.environ.get("PYTHONPATH", "")] if p
)
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
    _sample_files(cwd)
    (cwd / "pages.txt").write_text("home\nsearch\nsettings\nhelp\nabout\nnews\nadmin\n")
    for template in sorted((ROOT / "docs/templates").glob("*.md.in")):
        out = []
        for line in template.read_text().splitlines(keepends=True):
            if line.startswith("@@ "):
                cmd = line[3:].strip()
                out.append(f"```console\n{shown(cmd)}\n{run(cmd, cwd)}\n```\n")
            else:
                out.append(line)
        (ROOT / "docs" / template.name.removesuffix(".in")).write_text("".join(out))


def _sample_files(cwd: pathlib.Path) -> None:
    """``sample.csv``: a stratified clustered weighted sample of Warner reports (4 strata of
    3 PSUs of 10 respondents, seeded) and ``margins.csv``: population shares of two of its
    columns, for the sample-design examples of ``deniable analyze`` and ``deniable weight``."""
    import numpy as np

    from deniable.designs import Warner

    rng = np.random.default_rng(2024)
    stratum = np.repeat(np.arange(1, 5), 30)
    psu = np.tile(np.repeat(np.arange(1, 4), 10), 4)
    effect = rng.normal(0, 1, 12)[(stratum - 1) * 3 + psu - 1]
    truth = (rng.random(120) < 1 / (1 + np.exp(1.2 - effect))).astype(int)
    answer = Warner(0.8).randomize(truth, rng=7)
    weight = np.round(rng.uniform(50, 150, 120), 1)
    sex = rng.choice(["f", "m"], 120, p=[0.6, 0.4])
    age = rng.choice(["18-39", "40-64", "65+"], 120, p=[0.5, 0.3, 0.2])
    rows = zip(answer, stratum, psu, weight, sex, age, strict=True)
    (cwd / "sample.csv").write_text(
        "answer,stratum,psu,weight,sex,age\n" + "".join(",".join(map(str, r)) + "\n" for r in rows)
    )
    (cwd / "margins.csv").write_text(
        "variable,level,target\nsex,f,0.51\nsex,m,0.49\n"
        "age,18-39,0.38\nage,40-64,0.40\nage,65+,0.22\n"
    )


if __name__ == "__main__":
    main()
