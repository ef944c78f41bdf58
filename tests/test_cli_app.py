"""The command-line application: `deniable --help` lists every command without importing the
library, the shared options are declared once, and the commands print the library's result
objects (their ``table()`` and ``to_dict()``), nothing computed on the side."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from typing import Annotated, Any

import pytest
import typer
from typer.testing import CliRunner

from _cli import ENV_80
from deniable.cli import app
from deniable.cli._main import COMMANDS, load_command
from deniable.cli._options import NO_OPTIONS, passed_on

#: What `deniable --help` must not import: the library below the command line, and the
#: heavy dependencies.
HEAVY = (
    "deniable.designs",
    "deniable.estimation",
    "deniable.accounting",
    "deniable.mechanisms",
    "deniable.audit",
    "deniable.survey",
    "deniable.simulation",
    "deniable.plotting",
    "scipy",
    "pandas",
    "matplotlib",
)


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    return CliRunner(env=ENV_80)


def _help_in_subprocess(*args: str) -> tuple[str, list[str]]:
    code = (
        "import sys\n"
        "from deniable.cli import main\n"
        "try:\n"
        f"    main({list(args)!r})\n"
        "except SystemExit as exc:\n"
        "    assert exc.code in (0, None), exc.code\n"
        "print('\\x00MODULES', *sorted(sys.modules))\n"
    )
    env = {"COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    text, _, modules = done.stdout.partition("\x00MODULES")
    return text, modules.split()


def test_help_lists_every_command_without_importing_the_library() -> None:
    text, modules = _help_in_subprocess("--help")
    flat = " ".join(text.split())
    for name, entry in COMMANDS.items():
        assert f" {name} " in flat, name
        assert " ".join(entry.help.split()) in flat, name
    loaded = [m for m in modules if m.split(".")[0] in ("scipy", "pandas", "matplotlib")
              or any(m == h or m.startswith(h + ".") for h in HEAVY)]  # fmt: skip
    assert loaded == [], loaded
    assert "deniable.cli._designs" not in modules and "deniable.cli._privacy" not in modules


def test_a_command_help_loads_only_that_command() -> None:
    text, modules = _help_in_subprocess("coins", "--help")
    assert "--truth-probability" in text
    assert "deniable.cli._decisions" in modules
    assert "deniable.cli._privacy" not in modules and "deniable.survey" not in modules


@pytest.mark.parametrize("name", list(COMMANDS))
def test_the_listed_help_is_the_commands_own(name: str) -> None:
    command = load_command(name)
    own = command.help or ""
    assert " ".join(own.split("\n\n")[0].split()) == " ".join(COMMANDS[name].help.split())


def _options(name: str) -> list[tuple[str, Any]]:
    """Every (command path, parameter) of command ``name``, subcommands included."""
    out = []

    def walk(cmd: Any, path: str) -> None:
        subs = getattr(cmd, "commands", None)
        if subs:
            for sub_name, sub in subs.items():
                walk(sub, f"{path} {sub_name}")
            return
        out.extend((path, p) for p in cmd.params)

    walk(load_command(name), name)
    return out


def test_seed_level_and_json_are_declared_once() -> None:
    found: dict[str, list[tuple[str, Any]]] = {"--seed": [], "--level": [], "--json": []}
    for name in COMMANDS:
        for path, p in _options(name):
            for opt in found:
                if opt in p.opts:
                    found[opt].append((path, p))
    assert {path for path, _ in found["--seed"]} >= {
        "majority", "simulate", "simulation-study", "tour", "privacy audit",
    }  # fmt: skip
    for opt, params in found.items():
        assert params, opt
        # one declaration: the same help and the same type everywhere
        assert len({p.help for _, p in params}) == 1, (opt, {p.help for _, p in params})
        kinds = {(str(p.type_descriptor.annotation), p.min, p.max, p.callback is None)
                 for _, p in params}  # fmt: skip
        assert len(kinds) == 1, (opt, kinds)
    seed = found["--seed"][0][1]
    assert seed.type_descriptor.annotation is int and seed.min == 0


def test_a_seedless_run_prints_the_seed_and_repeats(runner: CliRunner) -> None:
    args = ["simulate", "warner", "-p", "p=0.7", "--n", "200", "--prevalence", "0.3", "--json"]
    first = json.loads(runner.invoke(app, args, catch_exceptions=False).stdout)
    seed = first["seed"]
    assert isinstance(seed, int) and seed >= 0
    again = json.loads(runner.invoke(app, [*args, "--seed", str(seed)]).stdout)
    assert again == first
    text = runner.invoke(app, args[:-1]).stdout
    assert "n, seed" in text


def test_bad_seed_is_one_error_line(runner: CliRunner) -> None:
    for args in (["tour", "--seed", "-1"], ["privacy", "audit", "warner", "-p", "p=0.75",
                                            "--seed", "x"]):  # fmt: skip
        result = runner.invoke(app, args)
        assert result.exit_code == 2 and result.stdout == ""
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and "--seed" in lines[0]


# ------------------------------------------------------------------ the CLI prints results


def test_estimate_json_is_the_results_to_dict(runner: CliRunner) -> None:
    from deniable.designs import DesignEstimate, Tally, make_design

    d = make_design("forced", {"forced_yes": "1/6", "forced_no": "1/6"})
    out = runner.invoke(app, ["estimate", "forced", "-p", "forced_yes=1/6", "-p",
                              "forced_no=1/6", "--yes", "345", "--n", "1000", "--level",
                              "0.9", "--json"])  # fmt: skip
    tally = Tally.binary(345, 1000)
    expected = DesignEstimate(d, tally, d.estimate(tally), 0.9).to_dict()
    assert json.loads(out.stdout) == expected


def test_commands_print_the_results_table(runner: CliRunner) -> None:
    from deniable.designs import TwoCoin
    from deniable.estimation import majority_decision

    wide = CliRunner(env={**ENV_80, "COLUMNS": "250"})
    out = wide.invoke(app, ["majority", "two-coin", "--n", "101", "--prevalence", "0.6"])
    table = majority_decision(TwoCoin(), 101, prevalence=0.6).table()
    flat = " ".join(out.stdout.replace("│", " ").split())
    assert table.title in flat
    for label, value in table.rows:
        assert " ".join(label.split()) in flat and value.split()[0] in flat


def test_a_tiny_epsilon_is_never_printed_as_zero(runner: CliRunner) -> None:
    out = runner.invoke(app, ["privacy", "compose", "--epsilon", "1e-7", "--method", "basic"])
    assert out.exit_code == 0, out.output
    row = next(line for line in out.stdout.splitlines() if line.strip().startswith("basic"))
    assert "1e-07" in row and "0.0000" not in row
    data = json.loads(runner.invoke(app, ["privacy", "compose", "--epsilon", "inf",
                                          "--method", "basic", "--json"]).stdout)  # fmt: skip
    assert data["epsilon"]["basic"] == "inf" and data["epsilons"] == ["inf"]
    assert not math.isnan(data["delta"])


def test_option_groups_stack_in_place_and_pass_their_options_on_as_typed() -> None:
    # two groups of deniable.cli._options.passed_on on one command: each group's options
    # stand where its parameter stands (in --help's order), and the command receives each
    # group as {flag without --: value}, None for an option not given
    first = passed_on(max_bytes=Annotated[int | None, typer.Option("--max-bytes")],
                      m=Annotated[int | None, typer.Option("--m")])  # fmt: skip
    second = passed_on(level_oracle=Annotated[str | None, typer.Option("--level-oracle")])
    got: list[Any] = []
    toy = typer.Typer(add_completion=False)

    @toy.command()
    @first.expand("a")
    @second.expand("b")
    def run(
        before: Annotated[int, typer.Option("--before")] = 0,
        a: dict[str, Any] = NO_OPTIONS,
        between: Annotated[int, typer.Option("--between")] = 0,
        b: dict[str, Any] = NO_OPTIONS,
    ) -> None:
        got.append((before, a, between, b))

    command = typer.main.get_command(toy)
    assert [p.opts[0] for p in command.params] == [
        "--before", "--max-bytes", "--m", "--between", "--level-oracle",
    ]  # fmt: skip
    res = CliRunner().invoke(toy, ["--m", "8", "--between", "2", "--level-oracle", "olh"])
    assert res.exit_code == 0, res.output
    assert got == [(0, {"max-bytes": None, "m": 8}, 2, {"level-oracle": "olh"})]
