"""Generate docs/cli.md by running every example (COLUMNS=80, no colour)."""
import os, shlex, subprocess, sys, tempfile, pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXE = ROOT / ".venv/bin/deniable"
env = dict(os.environ, COLUMNS="80", LINES="50", NO_COLOR="1", TERM="dumb")
env.pop("FORCE_COLOR", None)
tmp = pathlib.Path(tempfile.mkdtemp())
(tmp / "reports.csv").write_text("respondent,answer\n" + "".join(
    f"{i},{b}\n" for i, b in enumerate([1,0,0,1,1,0,1,0,0,1,1,1,0,1,0,0,1,0,1,1], 1)))

def run(cmd: str) -> str:
    args = shlex.split(cmd)
    args = [a.replace("reports.csv", str(tmp / "reports.csv")) for a in args]
    done = subprocess.run([str(EXE), *args[1:]], capture_output=True, text=True, env=env, cwd=tmp)
    out = done.stdout + done.stderr
    out = "\n".join(line.rstrip() for line in out.splitlines())
    if done.returncode:
        out += f"\n(exit status {done.returncode})"
    return out

def block(cmd: str) -> str:
    return f"```console\n$ {cmd}\n{run(cmd)}\n```\n"

template = (ROOT / "docs/templates/cli.md.in").read_text()
out = []
for line in template.splitlines(keepends=True):
    if line.startswith("@@ "):
        out.append(block(line[3:].strip()))
    else:
        out.append(line)
(ROOT / "docs").mkdir(exist_ok=True)
(ROOT / "docs/cli.md").write_text("".join(out))
