"""Hypothesis strategies for the fuzz tests: command lines for every CLI command and
expressions calling the main public functions (see tests/_fuzz_harness.py)."""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from hypothesis import strategies as st

from _fuzz_harness import INPUT_PATHS, OUTPUT_OPTIONS, OUTPUT_PATHS, Command, Param

# --------------------------------------------------------------------------- numbers

#: Number literals that have broken number handling somewhere, as text.
NASTY_NUMBERS = [
    "0", "-0", "0.0", "-0.0", "1", "-1", "2", "0.5", "1/2", "3/4", "1/0", "0/0", "-1/3",
    "1e-300", "5e-324", "1e-17", "2.2e-16", "1e-6", "0.999999999999", "0.9999999999999999",
    "1.0000000000000002", "0.49999999999999994", "0.5000000000000001", "1e308", "1.8e308",
    "1e309", "-1e308", "inf", "-inf", "+inf", "Infinity", "nan", "NaN", "-nan", "1e", "e5",
    "--", "-", "", " ", "1,", ",", "0x10", "1_000", " 3 ", "\u0661\u0662",  # Arabic-Indic 12
    "\uff11", "\u00bd", "\u03b5", "1e15", "1e16", "1e100", "1e1000", "4294967296",
    "9223372036854775807", "9223372036854775808", "18446744073709551616", "10" + "0" * 20,
    "1" + "0" * 30, "1" + "0" * 400, "-" + "9" * 25, "100000000000000", "1000000000",
    "710", "709.8", "745", "1e-320", "36", "37", "0.1", "0.01", "100", "1000", "10000",
]  # fmt: skip


def _weighted(*pairs: tuple[int, st.SearchStrategy[str]]) -> st.SearchStrategy[str]:
    table = [s for w, s in pairs for _ in range(w)]
    return st.integers(0, len(table) - 1).flatmap(lambda i: table[i])


_FLOAT = st.floats(allow_nan=True, allow_infinity=True).map(repr)


def nasty_number() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(NASTY_NUMBERS),
        _FLOAT,
        st.integers(-(10**25), 10**25).map(str),
        st.integers(0, 10**7).map(str),
        st.floats(0, 1).map(repr),
        st.tuples(st.integers(-5, 50), st.integers(-2, 50)).map(lambda t: f"{t[0]}/{t[1]}"),
    )


def number_list() -> st.SearchStrategy[str]:
    return st.lists(nasty_number(), min_size=1, max_size=5).map(",".join)


JUNK = [
    "", " ", "--", "-", "--help", "x", "ε", "∞", "\u00e9t\u00e9", "\U0001f600", "a=b=c", "=",
    "a=", "=1", "None", "null", "true", "[1]", "{}", "\t", "\\", "'", '"', "%s", "{0}",
    "a,b", "\u202e", "x" * 300,
]  # fmt: skip


def junk_text() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(JUNK), st.text(max_size=12))


_NUMBER = re.compile(r"(?<![A-Za-z_])-?\d+(\.\d+)?(/\d+)?(e-?\d+)?")


@st.composite
def mutate_numbers(draw: Any, text: str) -> str:
    """``text`` with one of its numbers replaced by a nasty number."""
    spots = list(_NUMBER.finditer(text))
    if not spots:
        return text
    m = draw(st.sampled_from(spots))
    return text[: m.start()] + draw(nasty_number()) + text[m.end() :]


# --------------------------------------------------------------------------- designs


def _design_names() -> dict[str, dict[str, Any]]:
    import inspect

    from deniable.designs import DESIGNS, TWO_GROUP_DESIGNS, design_parameters

    out = {}
    for name in [*DESIGNS, *TWO_GROUP_DESIGNS]:
        out[name] = {
            k: p.default is inspect.Parameter.empty for k, p in design_parameters(name).items()
        }
    return out


DESIGN_PARAMS = _design_names()
PARAM_NAMES = sorted({k for ps in DESIGN_PARAMS.values() for k in ps})
#: Valid-looking values of each design parameter, fuzzed by mutation.
PARAM_VALUES = {
    "p": ["0.7", "3/4", "0.25"], "q": ["0.5", "0.25"], "p_truthful": ["0.6", "0.5"],
    "p_yes": ["0.5"], "epsilon": ["1", "0.5"], "calibration": ["exact", "half", "bogus"],
    "forced_yes": ["1/6", "0.2"], "forced_no": ["1/6", "0.1"], "theta1": ["0.8", "0.7"],
    "theta2": ["0.4", "0.3"], "draws": ["1", "3", "1000000000"], "p_yes_given_1": ["0.8"],
    "p_yes_given_0": ["0.3"], "k": ["3", "4", "2", "100000000"], "forced": ["0.2,0.3,0.5"],
    "p1": ["2/12", "0.7"], "p2": ["10/12", "0.3"], "forced_yes1": ["0.2", "0.1"],
    "forced_yes2": ["0.6", "0.3"], "forced_no1": ["0.1"], "forced_no2": ["0.1"],
}  # fmt: skip


def param_value(name: str) -> st.SearchStrategy[str]:
    known = st.sampled_from(PARAM_VALUES.get(name, ["0.5"]))
    return _weighted((6, known), (3, nasty_number()), (1, number_list()))


def param_option() -> st.SearchStrategy[str]:
    name = _weighted((5, st.sampled_from(PARAM_NAMES)), (1, junk_text()))
    return _weighted(
        (5, name.flatmap(lambda k: param_value(k).map(lambda x: f"{k}={x}"))),
        (1, junk_text()),
    )


@st.composite
def design_with_params(draw: Any) -> list[str]:
    """A design name and ``-p`` options for it (mostly its own parameters)."""
    names = st.sampled_from(sorted(DESIGN_PARAMS))
    name = draw(_weighted((9, names), (1, junk_text())))
    tokens = [name]
    for pname, required in DESIGN_PARAMS.get(name, {}).items():
        if draw(st.integers(0, 19)) < (19 if required else 2):
            tokens += ["-p", f"{pname}={draw(param_value(pname))}"]
    if draw(st.integers(0, 19)) == 0:
        tokens += ["-p", draw(param_option())]
    return tokens


# --------------------------------------------------------------------------- command lines


@dataclass
class CliCase:
    argv: list[str]
    encoding: str = "utf-8"

    def request(self) -> dict[str, Any]:
        return {"kind": "cli", "argv": self.argv, "encoding": self.encoding}

    def show(self) -> str:
        prefix = "PYTHONIOENCODING=ascii " if self.encoding != "utf-8" else ""
        return prefix + "deniable " + shlex.join(self.argv)


DESIGN_ARGUMENTS = {"design", "--design", "-d"}


def inside_fixture_dir(path: str) -> bool:
    """Whether ``path`` stays in the worker's directory (its working directory, a
    temporary one): relative, without ``..``.  An output option never aims anywhere else,
    least of all at a system device: a writer that renamed a file over ``/dev/null`` as
    root would break the machine (the fixture directory has its own device nodes)."""
    pure = PurePosixPath(path)
    return not pure.is_absolute() and ".." not in pure.parts and not path.startswith("~")


#: Output paths that name a file of the fixture: an existing output, an input, a link to one.
EXISTING_PATHS = [p for p in OUTPUT_PATHS if p.startswith(("existing", "survey"))]
_OUTSIDE = [p for p in OUTPUT_PATHS if not inside_fixture_dir(p)]
if _OUTSIDE:  # pragma: no cover - a guard on the harness's list
    raise AssertionError(f"output paths outside the fixture directory: {_OUTSIDE}")


def _lookup(cmd: Command, token: str) -> Param | None:
    for p in cmd.params:
        if not p.argument and token in p.opts:
            return p
    return None


def parse_tokens(cmd: Command, tokens: list[str]) -> tuple[list[str], list[list[str]]]:
    """Split an example into positionals and ``[option, value?]`` items."""
    positionals: list[str] = []
    options: list[list[str]] = []
    i = 0
    while i < len(tokens):
        p = _lookup(cmd, tokens[i])
        if p is None:
            positionals.append(tokens[i])
        elif p.kind == "flag":
            options.append([tokens[i]])
        else:
            options.append(tokens[i : i + 2])
            i += 1
        i += 1
    return positionals, options


def _doc_values(cmd: Command) -> dict[str, list[str]]:
    values: dict[str, list[str]] = {}
    for ex in cmd.examples:
        for item in parse_tokens(cmd, ex)[1]:
            if len(item) == 2:
                p = _lookup(cmd, item[0])
                assert p is not None
                values.setdefault(p.opts[0], []).append(item[1])
    return values


NASTY_INTEGERS = [
    "0", "-1", "1", "2", "3", "-0", "1000000000", "4294967296", "2147483648",
    "9223372036854775807", "9223372036854775808", "100000000000000", "1000000000000000",
    "10000000000000000", "10" + "0" * 20, "1" + "0" * 30, "-" + "9" * 25, "1" + "0" * 400,
]  # fmt: skip


def nasty_integer() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(NASTY_INTEGERS),
        st.integers(-(10**30), 10**30).map(str),
        st.integers(0, 10**7).map(str),
    )


#: Options that take one of a few words: those words, near misses and junk.
CHOICES = {
    "--format": ["reports", "parquet", "csv", "json", "png", "CSV", "csv.gz", ""],
    "--se": ["empirical", "model", "mle", "Model", ""],
}


def option_value(cmd: Command, p: Param, doc: dict[str, list[str]]) -> st.SearchStrategy[str]:
    name = p.opts[0]
    if p.kind == "path" or name in OUTPUT_OPTIONS:
        return st.sampled_from(OUTPUT_PATHS if name in OUTPUT_OPTIONS else INPUT_PATHS)
    if name in CHOICES:
        return _weighted((4, st.sampled_from(CHOICES[name])), (1, junk_text()))
    if name in ("--reports", "--data"):
        return st.sampled_from(INPUT_PATHS)
    if name == "--param":
        return param_option()
    if name == "--design":
        return st.sampled_from(sorted(DESIGN_PARAMS))
    number = nasty_integer() if p.kind == "int" else nasty_number()
    known = doc.get(name)
    if not known:
        return _weighted((8, number), (2, number_list()), (1, junk_text()))
    return _weighted(
        (1, st.sampled_from(known)),
        (5, st.sampled_from(known).flatmap(mutate_numbers)),
        (1, st.sampled_from(known).flatmap(mutate_numbers).flatmap(mutate_numbers)),
        (4, number),
        (1, number_list()),
        (1, junk_text()),
    )


@st.composite
def cli_case(draw: Any, cmd: Command) -> CliCase:
    """A command line for ``cmd``: mostly a doc example with one or two values replaced by
    extreme or malformed ones; sometimes another design, an extra option, a junk word."""
    doc = _doc_values(cmd)
    base = draw(st.sampled_from(cmd.examples)) if cmd.examples else []
    positionals, options = parse_tokens(cmd, base)
    arguments = [p for p in cmd.params if p.argument]
    if arguments and (not positionals or draw(st.integers(0, 6)) == 0):
        if arguments[0].opts[0] in DESIGN_ARGUMENTS:
            tokens = draw(design_with_params())
            positionals = tokens[:1]
            options = [o for o in options if o[0] not in ("-p", "--param")]
            options += [tokens[i : i + 2] for i in range(1, len(tokens), 2)]
        else:
            positionals = [draw(st.sampled_from(INPUT_PATHS))]
    named = [p for p in cmd.params if not p.argument]
    mutations = draw(st.sampled_from([0, 1, 1, 1, 1, 2, 2, 2, 3, 4])) if base else 3
    for _ in range(mutations):
        action = draw(st.sampled_from(["set"] * 12 + ["add"] * 5 + ["drop"] * 2 + ["junk"]))
        if action == "set" and options:
            i = draw(st.integers(0, len(options) - 1))
            p = _lookup(cmd, options[i][0])
            if p is not None and p.opts[0] == "--param" and "=" in options[i][1]:
                pname = options[i][1].partition("=")[0]
                options[i] = [options[i][0], f"{pname}={draw(param_value(pname))}"]
            elif p is not None and p.kind != "flag":
                options[i] = [options[i][0], draw(option_value(cmd, p, doc))]
        elif action == "drop" and options:
            options.pop(draw(st.integers(0, len(options) - 1)))
        elif action == "junk":
            positionals.append(draw(junk_text()))
        elif named:
            p = draw(st.sampled_from(named))
            opt = draw(st.sampled_from(p.opts))
            item = [opt] if p.kind == "flag" else [opt, draw(option_value(cmd, p, doc))]
            same = [i for i, o in enumerate(options) if o[0] in p.opts]
            if same and p.kind != "list":
                options[same[0]] = item
            else:
                options.append(item)
    has_force = any("--force" in p.opts for p in named)
    if has_force and not any(o[0] == "--force" for o in options) and draw(st.integers(0, 2)) == 0:
        options.append(["--force"])  # replacing is allowed: never an input, though
    if any(o[0] in OUTPUT_OPTIONS for o in options) and draw(st.integers(0, 3)) == 0:
        # an output that exists already, or is (a link to) an input of the fixture
        i = next(j for j, o in enumerate(options) if o[0] in OUTPUT_OPTIONS)
        if len(options[i]) == 2:
            options[i] = [options[i][0], draw(st.sampled_from(EXISTING_PATHS))]
    for i, item in enumerate(options):  # a doc example's output path too stays inside
        p = _lookup(cmd, item[0])
        output = p is not None and p.opts[0] in OUTPUT_OPTIONS and len(item) == 2
        if output and not inside_fixture_dir(item[1]):
            options[i] = [item[0], "out"]
    argv = list(cmd.path) + positionals
    for item in options:
        if len(item) == 2 and item[0].startswith("--") and draw(st.integers(0, 9)) == 0:
            argv.append(f"{item[0]}={item[1]}")
        else:
            argv += item
    encoding = draw(st.sampled_from(["utf-8"] * 5 + ["ascii"]))
    return CliCase(argv, encoding)


# --------------------------------------------------------------------------- the API


def api_problems(result: dict[str, Any]) -> list[str]:
    """What is wrong with one API call (empty: nothing)."""
    if "hang" in result:
        return [f"a hang: no answer after {result['hang']} s"]
    if "died" in result:
        return [f"the worker died (status {result['died']})"]
    problems = []
    if result["crash"]:
        problems.append(f"exception: {result['crash'].strip().splitlines()[-1]}")
    if result["nonfinite"]:
        problems.append(f"non-finite result: {result['nonfinite'][0]}")
    if result["warnings"]:
        problems.append(f"warning: {result['warnings'][0]}")
    return problems


def _lit(x: Any) -> str:
    if isinstance(x, float):
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
    return repr(x)


def real() -> st.SearchStrategy[Any]:
    """Numbers as the API sees them: floats of every size, huge ints, fractions, bools."""
    return st.one_of(
        st.sampled_from(
            [
                0,
                1,
                -1,
                0.5,
                0.0,
                -0.0,
                1e-300,
                5e-324,
                1e308,
                10**30,
                2**63,
                math.inf,
                -math.inf,
                math.nan,
                0.9999999999999999,
                1.0000000000000002,
                710.0,
                True,
            ]
        ),
        st.floats(allow_nan=True, allow_infinity=True),
        st.floats(0, 1),
        st.integers(-(10**22), 10**22),
        st.integers(0, 10**6),
    )


def prob() -> st.SearchStrategy[Any]:
    return st.one_of(st.floats(0, 1), real())


def count() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.integers(0, 10**6),
        st.sampled_from([0, 1, 2, 10**9, 10**15, 10**16, 2**63, 10**21, 10**30, -1]),
        real(),
    )


def _args(*strategies: st.SearchStrategy[Any]) -> st.SearchStrategy[str]:
    return st.tuples(*strategies).map(lambda xs: ", ".join(_lit(x) for x in xs))


def _design_expr() -> st.SearchStrategy[str]:
    """A constructor call of a design (most of them valid)."""
    good = st.sampled_from(
        [
            "deniable.TwoCoin()", "deniable.Warner(0.75)", "deniable.Warner(0.5000001)",
            "deniable.ForcedResponse(1/6, 1/6)", "deniable.ForcedResponse(0.2, 0.0)",
            "deniable.Binary(1e-9)", "deniable.Binary(700.0)", "deniable.Kuk(0.8, 0.4, 3)",
            "deniable.Mangat(0.7)", "deniable.Crosswise(0.25)", "deniable.Custom(0.8, 0.3)",
            "deniable.UnrelatedQuestion(0.7, 0.5)", "deniable.Categorical(k=3, p_truthful=0.6)",
            "deniable.Binary(30.0)", "deniable.Warner(0.9999999999)",
        ]
    )  # fmt: skip
    made = st.one_of(
        _args(prob()).map(lambda a: f"deniable.Warner({a})"),
        _args(real()).map(lambda a: f"deniable.Binary({a})"),
        _args(prob(), prob()).map(lambda a: f"deniable.ForcedResponse({a})"),
        _args(prob(), prob()).map(lambda a: f"deniable.Custom({a})"),
        _args(prob(), prob(), count()).map(lambda a: f"deniable.Kuk({a})"),
        _args(count(), prob()).map(lambda a: f"deniable.Categorical({a})"),
        _args(real()).map(lambda a: f"deniable.Warner.from_epsilon({a})"),
        _args(real()).map(lambda a: f"deniable.ForcedResponse.from_epsilon({a})"),
    )
    return _weighted((2, good), (3, made))


def _binary_design() -> st.SearchStrategy[str]:
    return st.sampled_from(
        [
            "deniable.TwoCoin()", "deniable.Warner(0.75)", "deniable.Binary(1e-9)",
            "deniable.ForcedResponse(0.2, 0.0)", "deniable.Binary(30.0)",
            "deniable.Warner(0.5000001)", "deniable.Mangat(0.7)", "deniable.Warner(0.25)",
        ]
    )  # fmt: skip


def _call(template: str, finite: Sequence[str], *parts: st.SearchStrategy[Any]) -> Any:
    """Expressions ``check(<template filled with the drawn values>, finite)``."""

    def fill(values: tuple[Any, ...]) -> str:
        shown = [v if isinstance(v, str) else _lit(v) for v in values]
        return f"check({template.format(*shown)}, {list(finite)!r})"

    return st.tuples(*parts).map(fill)


_MAJORITY = ["x.p_decide_majority", "x.error_probability", "x.false_positive_rate",
             "x.false_negative_rate", "x.report_probability"]  # fmt: skip
_EST = ["x.value", "x.bounded", "x.se", "x.ci(0.95, 'exact')", "x.ci(0.95, 'wilson')"]

#: Name -> strategy of a Python expression calling one public function.  The worker
#: evaluates it: a ``deniable`` error is a fine answer; any other exception, a hang, a
#: warning or a non-finite number where the mathematics is finite (``check``) is not.
API_CASES: dict[str, st.SearchStrategy[str]] = {
    "design": _call("{0}", ["x.channel"], _design_expr()),
    "from_epsilon": _call(
        "deniable.Binary.from_epsilon({0})", ["x.p_yes_given_1", "x.p_yes_given_0"], real()
    ),
    "estimate": _call(
        "{0}.estimate(deniable.Tally.binary({1}, {2}))", _EST, _binary_design(), count(), count()
    ),
    "majority": _call(
        "deniable.majority_decision({0}, {1}, prevalence={2}, offset={3})",
        _MAJORITY,
        _binary_design(),
        count(),
        prob(),
        real(),
    ),
    "majority_fixed": _call(
        "deniable.majority_decision({0}, {1}, true_yes={2})",
        _MAJORITY,
        _binary_design(),
        count(),
        count(),
    ),
    "simulate_majority": _call(
        "deniable.estimation.simulate_majority({0}, {1}, prevalence={2}, trials={3}, seed=1)",
        ["x"],
        _binary_design(),
        count(),
        prob(),
        count(),
    ),
    "power": _call(
        "deniable.power({0}, {1}, {2}, {3}, alpha={4})",
        ["x.power"],
        _binary_design(),
        count(),
        prob(),
        prob(),
        prob(),
    ),
    "sample_size": _call(
        "deniable.sample_size({0}, {1}, {2}, {3})",
        ["x.n"],
        _binary_design(),
        prob(),
        prob(),
        prob(),
    ),
    "simulate": _call(
        "deniable.simulate({0}, {1}, {2}, seed=1)", [], _design_expr(), count(), prob()
    ),
    "simulation_study": _call(
        "deniable.simulation.simulation_study({0}, {1}, {2}, replications={3}, seed=1)",
        [],
        _binary_design(),
        count(),
        prob(),
        count(),
    ),
    "compose": _call(
        "deniable.accounting.compare_composition([{0}] * 3, {1}, counts=[{2}] * 3)",
        [],
        real(),
        prob(),
        count(),
    ),
    "advanced": _call(
        "accounting.advanced_composition({0}, {1}, counts={2})", [], real(), prob(), count()
    ),
    "optimal": _call(
        "accounting.optimal_rr_epsilon({0}, {2}, count={1})", [], real(), count(), prob()
    ),
    "zcdp": _call("accounting.zcdp_epsilon({0}, {1})", [], real(), prob()),
    "pure_to_zcdp": _call("accounting.pure_to_zcdp({0})", [], real()),
    "shuffle": _call(
        "accounting.shuffle_epsilon_numerical({0}, {2}, n={1})", ["x"], real(), count(), prob()
    ),
    "coins": _call("deniable.mechanisms.design_protocol(epsilon={0})", [], real()),
}
