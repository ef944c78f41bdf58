"""The fuzzing harness behind tests/test_fuzz_cli.py and tests/test_fuzz_api.py.

Cases run in a *worker*: a child Python process, started once and reused, that runs one
case at a time in-process (``deniable.cli.main(argv)`` with stdout and stderr captured, or
one Python expression for the API fuzz) and answers with one JSON line.

A case is judged by the work it does, never by how fast it ran (the machine is shared and
its speed varies):

* memory: the worker runs under an address-space limit (``RLIMIT_AS``,
  ``MEMORY_LIMIT``), so a case that would allocate without bound fails with a
  ``MemoryError`` inside the worker instead of pushing the machine into swap;
* output: what a command prints is counted, and more than ``OUTPUT_LIMIT`` bytes is a
  failure (unbounded output);
* files: the worker cannot write a file past ``FILE_LIMIT`` bytes (``RLIMIT_FSIZE``:
  the write fails with ``EFBIG`` and the command must report it in one error line), so a
  case cannot fill the disk.

A hang is caught by a watchdog in the parent: a case that has not answered after
``HANG_LIMIT`` seconds (minutes, hundreds of times what any case needs, so it is not a
speed verdict) is a failure, and the worker is killed (by its own process id) and started
afresh.

Run by hand to explore (every failure collected, grouped by its first line)::

    .venv/bin/python tests/_fuzz_harness.py cli 300      # 300 cases per command
    .venv/bin/python tests/_fuzz_harness.py api 300
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import re
import resource
import select
import shlex
import signal
import stat
import subprocess
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

#: Address-space limit of the worker (numpy, scipy, pandas and matplotlib loaded need
#: about 1.5 GB of address space; a case may use the rest).
MEMORY_LIMIT = 3 * 2**30

#: The most a command may print (stdout and stderr together).  The largest table the CLI
#: prints is 65,536 rows (``--rows`` at most ``MAX_ROWS``), about 6 MiB; past this, output
#: grows with a number in the arguments instead of being bounded.
OUTPUT_LIMIT = 16 * 2**20

#: The largest file the worker may write (``RLIMIT_FSIZE``).
FILE_LIMIT = 256 * 2**20

#: Seconds after which a case that has not answered is a hang (the worker is killed).  Not
#: a speed limit: every case answers in seconds on a loaded machine, so only a case that
#: would never end reaches it.
HANG_LIMIT = 300.0

# --------------------------------------------------------------------------- the worker


def _limit_work() -> None:  # pragma: no cover - runs in the child before exec
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    # Python ignores SIGXFSZ, so a write past the limit fails with EFBIG (an OSError)
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_LIMIT, FILE_LIMIT))


def _capture(encoding: str) -> tuple[io.BytesIO, io.TextIOWrapper]:
    raw = io.BytesIO()
    return raw, io.TextIOWrapper(raw, encoding=encoding, errors="strict", write_through=True)


def _run_cli(argv: list[str], encoding: str) -> dict[str, Any]:
    from deniable.cli import main

    out_raw, out = _capture(encoding)
    err_raw, err = _capture(encoding)
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin, sys.stdout, sys.stderr = io.StringIO(""), out, err
    code: Any = None
    crash = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            main(argv)
        except SystemExit as exc:
            code = exc.code
        except BaseException:
            crash = traceback.format_exc()
        finally:
            with contextlib.suppress(Exception):
                out.flush()
                err.flush()
            sys.stdin, sys.stdout, sys.stderr = saved
    out_bytes, err_bytes = out_raw.getvalue(), err_raw.getvalue()
    return {
        "code": code if isinstance(code, int | None) else str(code),
        "output_bytes": len(out_bytes) + len(err_bytes),
        "stdout": out_bytes[:OUTPUT_LIMIT].decode(encoding, "replace"),
        "stderr": err_bytes[:OUTPUT_LIMIT].decode(encoding, "replace"),
        "crash": crash,
        "warnings": [f"{w.category.__name__}: {w.message}" for w in caught],
    }


#: What an API expression is evaluated with.
def _api_namespace() -> dict[str, Any]:
    import numpy as np

    import deniable
    from deniable import accounting, estimation, exceptions

    return {
        "deniable": deniable,
        "accounting": accounting,
        "estimation": estimation,
        "exceptions": exceptions,
        "np": np,
        "math": math,
        "inf": math.inf,
        "nan": math.nan,
        "check": check_result,
    }


def check_result(value: Any, finite: Sequence[str] = ()) -> list[str]:
    """The non-finite numbers among the expressions ``finite`` of ``x = value`` (e.g.
    ``["x.value", "x.ci(0.95, 'exact')"]``), as ``"expression = number"`` strings."""
    bad = []
    for expr in finite:
        got = eval(expr, {"x": value, "math": math})
        for y in _numbers(got):
            if not math.isfinite(y):
                bad.append(f"{expr} = {y!r}")
    return bad


def _numbers(x: Any) -> list[float]:
    import numpy as np

    if x is None or isinstance(x, str | bool):
        return []
    if isinstance(x, dict):
        return [y for v in x.values() for y in _numbers(v)]
    try:
        return [float(y) for y in np.asarray(x, dtype=float).ravel()]
    except (TypeError, ValueError, OverflowError):
        arr = np.asarray(x, dtype=object).ravel()
        return [float(y) for y in arr if y is not None and not isinstance(y, str | bool)]


def _run_api(expr: str) -> dict[str, Any]:
    from deniable.exceptions import DeniableError

    ns = _api_namespace()
    out: dict[str, Any] = {"crash": None, "error": None, "nonfinite": [], "warnings": []}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = eval(expr, ns)
            if isinstance(result, list):
                out["nonfinite"] = result
        except DeniableError as exc:
            out["error"] = f"{type(exc).__name__}: {exc}"
        except BaseException:
            out["crash"] = traceback.format_exc()
    out["warnings"] = [f"{w.category.__name__}: {w.message}" for w in caught]
    return out


def worker_main() -> None:  # pragma: no cover - runs in the child
    """Answer one JSON request line with one JSON result line until stdin closes."""
    reply = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # stray writes to fd 1 go nowhere
    import deniable.cli._main  # noqa: F401  (import cost paid once)

    for line in sys.stdin:
        request = json.loads(line)
        if request["kind"] == "cli":
            result = _run_cli(request["argv"], request.get("encoding", "utf-8"))
        else:
            result = _run_api(request["expr"])
        reply.write(json.dumps(result) + "\n")
        reply.flush()


# --------------------------------------------------------------------------- the parent


class Worker:
    """A worker process with a watchdog (see the module docstring)."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self.proc: subprocess.Popen[str] | None = None

    def _start(self) -> subprocess.Popen[str]:
        env = dict(os.environ)
        env.update(
            COLUMNS="100", NO_COLOR="1", TERM="dumb", MPLBACKEND="Agg",
            OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
            PYTHONPATH=os.pathsep.join([str(ROOT / "tests"), env.get("PYTHONPATH", "")]),
        )  # fmt: skip
        env.pop("FORCE_COLOR", None)
        return subprocess.Popen(
            [sys.executable, "-c", "import _fuzz_harness; _fuzz_harness.worker_main()"],
            cwd=self.cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True, preexec_fn=_limit_work,
        )  # fmt: skip

    def run(self, request: dict[str, Any], hang_limit: float = HANG_LIMIT) -> dict[str, Any]:
        """The worker's answer, or ``{"hang": seconds}`` when it has not answered after
        ``hang_limit`` seconds (it is then killed), or ``{"died": status}``."""
        if self.proc is None or self.proc.poll() is not None:
            self.proc = self._start()
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], hang_limit)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            status = self.proc.poll()
            self.close()
            return {"hang": hang_limit} if status is None else {"died": status}
        result: dict[str, Any] = json.loads(line)
        return result

    def close(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            for stream in (self.proc.stdin, self.proc.stdout):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()
            self.proc = None


# --------------------------------------------------------------------------- fixtures


def _survey_csv() -> str:
    rows = ["region,drugs,cheat,version,tax,theft,cheated,age,female,sex,direct,score"]
    for i in range(60):
        rows.append(
            f"{'north' if i % 3 else 'south'},{i % 2},{(i // 2) % 2},{1 + i % 2},{(i // 3) % 2},"
            f"{(i // 5) % 2},{(i // 7) % 2},{20 + i},{i % 2},{'mf'[i % 2]},{(i // 4) % 2},"
            f"{(i * 37) % 100 / 10}"
        )
    return "\n".join(rows) + "\n"


#: Input files a case may read (checked unchanged after every case), by name.
INPUT_FILES: dict[str, bytes] = {
    "survey.csv": _survey_csv().encode(),
    "scores.csv": _survey_csv().encode(),
    "reports.csv": ("answer\n" + "".join(f"{i % 2}\n" for i in range(40))).encode(),
    "plain.txt": "".join(f"{(i // 3) % 2}\n" for i in range(30)).encode(),
    "empty.csv": b"",
    "header-only.csv": b"answer,region\n",
    "latin1.csv": "r\u00e9ponse\n1\n0\n1\n".encode("latin-1"),
    "binary.csv": bytes(range(256)) * 4,
    "odd values.csv": b"answer\n1\n0\nnan\ninf\n-1\n2\n1e308\n\n0.5\nyes\n",
    "donn\u00e9es \u03b5.csv": b"answer\n1\n0\n1\n1\n",
    "wide.csv": ("a,b\n" + "1e200,0\n-1e200,1\n1e200,1\n-1e200,0\n" * 5).encode(),
}

#: Paths for options that read a file.
INPUT_PATHS = [
    *INPUT_FILES,
    "missing.csv",
    "no-such-dir/x.csv",
    ".",
    "a-directory",
    "null-device",
    "",
    " ",
    "-",
    "survey.parquet",
    "\u00e9\u00e8 missing.csv",
]

#: Character devices made in the fixture directory (never the system's /dev/null and
#: /dev/full: a broken writer run as root would replace them for the whole machine).
DEVICES = {"null-device": (1, 3), "full-device": (1, 7)}

#: Files that exist before a case, for options that write: a command must leave each as
#: it was unless ``--force`` is given (checked after every case, then restored).
EXISTING_OUTPUTS: dict[str, bytes] = {
    f"existing{suffix}": f"existing {suffix} \x00".encode()
    for suffix in (".png", ".svg", ".html", ".json", ".dnrp", ".csv.gz", ".parquet")
}

#: Links to an input file, named like outputs: a command that reads the input must refuse
#: them as outputs even with ``--force`` (symbolic and hard link, by name -> input).
INPUT_LINKS = {"survey-link.html": "survey.csv", "survey-hardlink.html": "survey.csv"}

#: Paths for options that write a file (never outside the fixture directory): new paths of
#: every output format, existing files, an input file and links to one.
OUTPUT_PATHS = [
    "out.png",
    "out.svg",
    "out.html",
    "out.pdf",
    "out.json",
    "out.dnrp",
    "out.parquet",
    "out.csv",
    "out.csv.gz",
    "out.csv.zst",
    "out.parquet.gz",
    "out",
    "no-such-dir/out.png",
    "a-directory",
    "full-device",
    "null-device",
    "",
    "sortie \u00e9 \u03b5.svg",
    "out.unknown",
    "read-only.png",
    *EXISTING_OUTPUTS,
    *INPUT_LINKS,
    "survey.csv",
]
#: The options that name an output file.
OUTPUT_OPTIONS = {"--plot", "--html", "--out"}


def make_fixture_dir(root: Path) -> Path:
    """Write the input files, the existing outputs and the links to an input (and a
    directory) under ``root``; return ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    for name, data in {**INPUT_FILES, **EXISTING_OUTPUTS}.items():
        (root / name).write_bytes(data)
    for name, target in INPUT_LINKS.items():
        (root / name).unlink(missing_ok=True)
        if "hard" in name:
            os.link(root / target, root / name)
        else:
            (root / name).symlink_to(target)
    (root / "a-directory").mkdir(exist_ok=True)
    ro = root / "read-only.png"
    ro.write_bytes(b"")
    ro.chmod(0o444)
    for name, (major, minor) in DEVICES.items():
        node = root / name
        if node.is_char_device():
            continue
        node.unlink(missing_ok=True)
        # root can make the node; a user cannot, and the name is then an ordinary path
        with contextlib.suppress(PermissionError):
            os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(major, minor))
    return root


def fixture_state(root: Path) -> dict[str, Any]:
    """What a case may not change: every input and existing output (content), and the
    links to an input (their target, and the hard link's inode)."""
    state: dict[str, Any] = {}
    for name in [*INPUT_FILES, *EXISTING_OUTPUTS, *INPUT_LINKS]:
        p = root / name
        try:
            st = os.lstat(p)
            state[name] = (p.read_bytes(), os.readlink(p) if p.is_symlink() else st.st_ino)
        except OSError:
            state[name] = None
    return state


def output_values(argv: Sequence[str]) -> set[str]:
    """The paths given to output options in ``argv`` (``--out X`` and ``--out=X``)."""
    found = set()
    for i, token in enumerate(argv):
        if token in OUTPUT_OPTIONS and i + 1 < len(argv):
            found.add(argv[i + 1])
        name, eq, value = token.partition("=")
        if eq and name in OUTPUT_OPTIONS:
            found.add(value)
    return found


def fixture_problems(root: Path, argv: Sequence[str], before: dict[str, Any]) -> list[str]:
    """What a case did to the fixture files that it must not have (restoring them):

    * an input file changed, unless the case named it only as an output, with ``--force``
      (a file that is not an input of the run may be replaced on request, also through a
      link to it);
    * an existing output replaced without ``--force``;
    * a link to an input replaced without ``--force``.
    """
    after = fixture_state(root)
    if after == before:
        return []
    forced = "--force" in argv
    outputs = output_values(argv)
    inputs = {t for t in argv if t not in outputs}
    problems = []
    for name in INPUT_FILES:
        if after[name] != before[name] and (not forced or name in inputs):
            problems.append(f"an input file changed: {name}")
    for name in [*EXISTING_OUTPUTS, *INPUT_LINKS]:
        if after[name] != before[name] and not forced:
            problems.append(f"an existing file was replaced without --force: {name}")
    make_fixture_dir(root)
    return problems


# --------------------------------------------------------------------------- the commands


@dataclass
class Param:
    """One option or argument of a command, as the fuzzer sees it."""

    opts: list[str]
    kind: str  # "flag", "int", "float", "text", "path", "list"
    argument: bool = False


@dataclass
class Command:
    path: list[str]
    params: list[Param]
    examples: list[list[str]] = field(default_factory=list)  # token lists after the path

    @property
    def name(self) -> str:
        return " ".join(self.path)


def _param_kind(p: Any) -> str:
    if getattr(p, "is_flag", False):
        return "flag"
    annotation = getattr(getattr(p, "type_descriptor", None), "annotation", None)
    text = str(annotation)
    if "Path" in text:
        return "path"
    if getattr(p, "multiple", False):
        return "list"
    if annotation is int or text == "int | None":
        return "int"
    if annotation is float:
        return "float"
    return "text"


def walk_commands() -> list[Command]:
    """Every leaf command of ``deniable.cli.app`` with its parameters and doc examples."""
    import typer

    from deniable.cli import app

    out: list[Command] = []

    def walk(cmd: Any, path: list[str]) -> None:
        # a group lists its commands (the root group loads each command's module on request)
        names = cmd.list_commands(None) if hasattr(cmd, "list_commands") else []
        if names:
            for name in sorted(names):
                walk(cmd.get_command(None, name), [*path, name])
            return
        params = [
            Param(
                opts=list(p.opts) + list(getattr(p, "secondary_opts", [])),
                kind=_param_kind(p),
                argument=type(p).__name__.endswith("Argument"),
            )
            for p in cmd.params
            if "--help" not in p.opts
        ]
        out.append(Command(path, params))

    walk(typer.main.get_command(app), [])
    examples = doc_examples()
    for c in out:
        c.examples = [ex[len(c.path) :] for ex in examples if ex[: len(c.path)] == c.path]
        c.examples = [ex for ex in c.examples if not any(t.isupper() for t in ex if "=" not in t)]
    return out


def doc_examples() -> list[list[str]]:
    """The ``$ deniable ...`` command lines of the docs and README, as token lists."""
    found = []
    for f in [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]:
        lines = f.read_text(encoding="utf-8").splitlines()
        i = 0
        while i < len(lines):
            if lines[i].startswith("$ deniable "):
                text = lines[i][2:]
                while text.endswith("\\") and i + 1 < len(lines):
                    i += 1
                    text = text[:-1] + " " + lines[i].strip()
                with contextlib.suppress(ValueError):
                    found.append(shlex.split(text)[1:])
            i += 1
    return found


# --------------------------------------------------------------------------- checking


class Failure(AssertionError):
    pass


def _no_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


def cli_problems(argv: Sequence[str], result: dict[str, Any]) -> list[str]:
    """What is wrong with one CLI run (empty: nothing)."""
    if "hang" in result:
        return [f"a hang: no answer after {result['hang']} s"]
    if "died" in result:
        return [f"the worker died (status {result['died']})"]
    problems = []
    if result["crash"]:
        lines = result["crash"].strip().splitlines()
        problems.append(f"exception: {lines[-1]}")
    if result["output_bytes"] > OUTPUT_LIMIT:
        problems.append(f"unbounded output: {result['output_bytes']} bytes printed")
    code, out, err = result["code"], result["stdout"], result["stderr"]
    if code not in (0, 1, 2, None):
        problems.append(f"exit status {code!r}")
    if "Traceback" in out + err:
        problems.append("a traceback in the output")
    if result["warnings"]:
        problems.append(f"warning: {result['warnings'][0]}")
    err_lines = err.splitlines()
    if code == 2:
        if len(err_lines) != 1 or not err_lines[0].startswith("error: "):
            problems.append(f"exit 2 without exactly one error line: {err[:300]!r}")
    elif code == 1:
        if len(err_lines) > 1 or (err_lines and not err_lines[0].startswith("error: ")):
            problems.append(f"exit 1 with more than one error line: {err[:300]!r}")
    elif code in (0, None) and not result["crash"]:
        if err.strip():
            problems.append(f"exit 0 with stderr output: {err[:300]!r}")
        if "--json" in argv and "--help" not in argv and "--version" not in argv:
            try:
                json.loads(out, parse_constant=_no_constant)
            except ValueError as exc:
                problems.append(f"--json output is not strict JSON ({exc}): {out[:200]!r}")
    if code == 2 and err_lines:
        line = err_lines[0]
        if re.search(r"\b(nan|NaN)\b", line) and "nan" not in " ".join(argv).lower():
            problems.append(f"error line mentions NaN not given: {line}")
    return problems


def first_line(problems: Sequence[str]) -> str:
    text = problems[0]
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", text)
    return re.sub(r"\d+(\.\d+)?(e[+-]?\d+)?", "N", text)[:160]


# --------------------------------------------------------------------------- exploring


def explore(
    kind: str, examples: int, only: str = ""
) -> None:  # pragma: no cover - a development tool
    import tempfile

    from hypothesis import HealthCheck, Phase, given, settings

    sys.path.insert(0, str(ROOT / "tests"))
    import _fuzz_strategies as fs

    groups: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = make_fixture_dir(Path(tmp))
        worker = Worker(root)
        cases: list[tuple[str, Callable[[], Any]]] = []
        if kind == "cli":
            for cmd in walk_commands():
                if only and cmd.name != only:
                    continue

                @settings(
                    max_examples=examples, phases=[Phase.generate], database=None,
                    suppress_health_check=list(HealthCheck), deadline=None, derandomize=False,
                )  # fmt: skip
                @given(case=fs.cli_case(cmd))
                def run(case: fs.CliCase) -> None:
                    before = fixture_state(root)
                    result = worker.run(case.request())
                    problems = cli_problems(case.argv, result)
                    problems += fixture_problems(root, case.argv, before)
                    if problems:
                        key = first_line(problems)
                        groups.setdefault(key, []).append(case.show() + "  ## " + problems[0])

                cases.append((cmd.name, run))
        else:
            for name, strategy in fs.API_CASES.items():

                @settings(
                    max_examples=examples, phases=[Phase.generate], database=None,
                    suppress_health_check=list(HealthCheck), deadline=None,
                )  # fmt: skip
                @given(expr=strategy)
                def run_api(expr: str) -> None:
                    result = worker.run({"kind": "api", "expr": expr})
                    problems = fs.api_problems(result)
                    if problems:
                        key = first_line(problems)
                        groups.setdefault(key, []).append(expr + "  ## " + problems[0])

                cases.append((name, run_api))
        for name, run_one in cases:
            start = time.monotonic()
            run_one()
            print(f"{name}: {time.monotonic() - start:.1f} s", file=sys.stderr, flush=True)
        worker.close()
    for key, items in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        print(f"\n### {len(items)} x {key}")
        for item in items[:4]:
            print("   ", item[:700])


if __name__ == "__main__":  # pragma: no cover
    explore(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 50, *sys.argv[3:])
