"""`deniable spec show | check | vectors`: a spec printed, checked and refused from the command
line with one error line naming the field; the vectors written atomically, equal to the
committed file; design errors speak of parameters, a malformed `--param` of the flag."""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from _cli import one_error, run
from deniable.designs import QuestionSpec, Warner, spec_of

ENV = {"COLUMNS": "80", "LINES": "50", "NO_COLOR": "1", "FORCE_COLOR": None, "TERM": "dumb"}
VECTORS_FILE = Path(__file__).parent / "vectors" / "randomizers.json"


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    return CliRunner(env=ENV)


def test_show_prints_the_spec(runner: CliRunner) -> None:
    res = run(runner, "spec", "show", "warner", "-p", "p=3/4", "--text", "Ever?",
              "--labels", "no, yes")  # fmt: skip
    assert res.exit_code == 0 and res.stderr == ""
    data = json.loads(res.stdout)
    assert data == spec_of(Warner(0.75), text="Ever?", labels=("no", "yes")).to_dict()


def test_show_of_an_infinite_epsilon_is_inf(runner: CliRunner) -> None:
    res = run(runner, "spec", "show", "mangat", "-p", "p=0.7")
    assert json.loads(res.stdout)["epsilon"] == "inf"


def test_show_errors_name_parameters_not_flags(runner: CliRunner) -> None:
    line = one_error(run(runner, "spec", "show", "warner"), "needs parameter p")
    assert "--param" not in line
    one_error(run(runner, "spec", "show", "warner", "-p", "p=1/2"), "`p` must be in (0, 1)")
    # the CLI's own NAME=VALUE syntax still names the flag
    one_error(run(runner, "spec", "show", "warner", "-p", "p"), "`--param` must look like")
    one_error(
        run(runner, "spec", "show", "warner", "-p", "p=0.7", "--labels", "a"),
        "`labels` must have one label per true answer (2)",
    )


def test_check_accepts_a_spec_and_prints_its_epsilon(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "q.json"
    path.write_text(spec_of(Warner(0.75), text="Ever?").to_json())
    res = run(runner, "spec", "check", str(path))
    assert res.exit_code == 0, res.output
    assert "A valid question spec" in res.stdout and "1.0986" in res.stdout
    assert 'warner{"p":"3/4"}' in res.stdout and "Ever?" in res.stdout
    data = json.loads(run(runner, "spec", "check", str(path), "--json").stdout)
    assert data["valid"] is True and data["epsilon"] == math.log(3)
    assert data["key"] == 'warner{"p":"3/4"}'


def test_check_refuses_a_tampered_spec(runner: CliRunner, tmp_path: Path) -> None:
    data = spec_of(Warner(0.75)).to_dict()
    data["thresholds"]["yes"][0] += 1
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    one_error(run(runner, "spec", "check", str(path)), "`thresholds.yes[0]` does not match")
    data = spec_of(Warner(0.75)).to_dict()
    data["schema"] = "deniable.question/9"
    path.write_text(json.dumps(data))
    one_error(run(runner, "spec", "check", str(path)), "is newer", "upgrade deniable")


def test_check_refuses_files_that_are_not_specs(runner: CliRunner, tmp_path: Path) -> None:
    one_error(run(runner, "spec", "check", str(tmp_path / "missing.json")), "cannot read")
    one_error(run(runner, "spec", "check", str(tmp_path)), "is a directory")
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"\x00\xff")
    one_error(run(runner, "spec", "check", str(bad)), "not UTF-8")
    bad.write_text('{"epsilon": Infinity}')
    one_error(run(runner, "spec", "check", str(bad)), "not strict JSON")


def test_vectors_writes_the_committed_file(runner: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "v.json"
    res = run(runner, "spec", "vectors", "--out", str(out))
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("wrote ") and "test vectors of 17 designs" in res.stdout
    assert out.read_text(encoding="utf-8") == VECTORS_FILE.read_text(encoding="utf-8")
    first = json.loads(out.read_text())["cases"][0]
    assert QuestionSpec.from_dict(first["spec"]).mechanism == "warner"


def test_vectors_output_errors(runner: CliRunner, tmp_path: Path) -> None:
    one_error(run(runner, "spec", "vectors", "--out", str(tmp_path)), "it is a directory")
    one_error(run(runner, "spec", "vectors", "--out", str(tmp_path / "no" / "v.json")),
              "cannot write")  # fmt: skip
    assert list(tmp_path.iterdir()) == []  # no partial file left behind


def test_an_output_device_is_written_in_place_never_replaced(
    runner: CliRunner, tmp_path: Path
) -> None:
    # run as root, renaming a temporary file over /dev/null would replace the device node
    # for every program on the machine; so the test makes its own null device when it can
    if os.geteuid() == 0:
        null = tmp_path / "null"
        os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    else:
        null = Path("/dev/null")  # pragma: no cover - a user cannot replace it anyway
    res = run(runner, "spec", "vectors", "--out", str(null))
    assert res.exit_code == 0, res.output
    assert stat.S_ISCHR(os.stat(null).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == (
        ["null"] if null.parent == tmp_path else []
    )
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    one_error(run(runner, "spec", "vectors", "--out", str(fifo)), "a named pipe that nobody reads")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
