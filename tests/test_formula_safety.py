"""A regression formula is data, not code.

formulaic evaluates the Python parts of a formula with ``eval`` (and evaluates the function
part of calls while parsing), so before the fix ``"y ~ center(__import__('os')...)"`` and
``"y ~ I(np.f2py.os...)"`` ran code through ``logistic_rr``, ``linear_rr`` and
``deniable regress``, and ``"y ~ I(x +)"`` ended in a ``SyntaxError`` traceback.  Here: the
injections are refused (a ``ParameterError`` / one CLI error line, exit 2) and nothing
runs (a sentinel path is never created); each refused category names its part; every
transform on the documented list fits the same model as its column precomputed; random
token soups are either accepted (and then contain only allowed parts, by an independent
check written here) or refused with a ``ParameterError``, never another exception.
"""

from __future__ import annotations

import io
import keyword
import os
import re
import subprocess
import sys
import tokenize
from pathlib import Path
from typing import Any

import formulaic
import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from typer.testing import CliRunner

from _cli import ENV_80 as ENV
from deniable import ForcedResponse, Warner, linear_rr, logistic_rr
from deniable.cli import app
from deniable.estimation._formula import (
    ELEMENTWISE,
    FUNCTIONS,
    check_formula,
    evaluation_context,
)
from deniable.estimation._regression_data import model_data
from deniable.exceptions import DeniableError, ParameterError

DESIGN = ForcedResponse(1 / 6, 1 / 6)
CLI = [sys.executable, "-m", "deniable.cli", "regress", "--design", "warner", "-p", "p=0.8"]


def expit(x: Any) -> Any:
    return 1 / (1 + np.exp(-x))


def frame(n: int = 1500, seed: int = 5) -> Any:
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.5, 3.0, size=n).round(4)
    x2 = rng.normal(size=n).round(4)
    g = rng.choice(["a", "b", "c"], size=n)
    truth = rng.random(n) < expit(-1.0 + 0.6 * x - 0.4 * x2 + 0.5 * (g == "b"))
    y = DESIGN.randomize(truth, rng=rng).astype(int)
    z = (rng.random(n) < 0.4).astype(int)
    score = (1.0 + 0.5 * x + 1.2 * z + rng.normal(size=n)).round(4)
    return pd.DataFrame(
        {"y": y, "x": x, "x2": x2, "g": g, "my col": x2 + 1, "Z": z, "score": score}
    )


DF = frame()


def injections(sentinel: Path) -> list[str]:
    """Formulas that ran code before the fix (each would create ``sentinel``)."""
    s = str(sentinel)
    return [
        f"y ~ x + center(__import__('os').makedirs({s!r}) + x)",  # builtins while parsing
        f"y ~ x + I(np.f2py.os.makedirs({s!r}) + x)",  # numpy's own os, while evaluating
        f"y ~ x + I(__import__('os').makedirs({s!r}))",
        f"y ~ x + __import__('os').makedirs({s!r})(x)",
        f"y ~ x + scale(np.f2py.os.makedirs({s!r}))",
        f"y ~ x + I(exec('import os; os.makedirs({s!r})'))",
        "y ~ x + I([c for c in ().__class__.__base__.__subclasses__()])",
        f"y ~ x + log(pd.io.common.os.makedirs({s!r}))",  # the caller's frame was the context
    ]


# --- the injections: API and CLI ------------------------------------------------------


def test_injections_are_refused_by_the_api_and_run_nothing(tmp_path: Path) -> None:
    sentinel = tmp_path / "pwned"
    for formula in injections(sentinel):
        with pytest.raises(ParameterError, match=r"^`formula` .* cannot be used: ") as info:
            logistic_rr(formula, DF, DESIGN)
        assert "\n" not in str(info.value)
        with pytest.raises(ParameterError, match="cannot be used"):
            linear_rr(formula.replace("y ~", "score ~"), DF, Warner(0.8), predictor="Z")
        with pytest.raises(ParameterError, match="cannot be used"):
            check_formula(formula)
        assert not sentinel.exists(), formula


def test_injections_are_refused_by_the_cli_and_run_nothing(tmp_path: Path) -> None:
    sentinel = tmp_path / "pwned"
    data = tmp_path / "survey.csv"
    DF.to_csv(data, index=False)
    runner = CliRunner(env=ENV)
    args = ["regress", "--design", "warner", "-p", "p=0.8", "--data", str(data)]
    for formula in injections(sentinel):
        for extra in ([], ["--predictor", "Z"]):
            f = formula.replace("y ~", "score ~") if extra else formula
            result = runner.invoke(app, [*args, "--formula", f, *extra], catch_exceptions=False)
            assert result.exit_code == 2, result.output
            lines = result.stderr.splitlines()
            assert len(lines) == 1 and lines[0].startswith("error: `formula` "), result.stderr
            assert result.stdout == ""
            assert not sentinel.exists(), formula


def test_cli_process_refuses_an_injection_without_traceback(tmp_path: Path) -> None:
    sentinel = tmp_path / "pwned"
    data = tmp_path / "survey.csv"
    DF.to_csv(data, index=False)
    for formula in (injections(sentinel)[0], "y ~ I(x +)"):
        done = subprocess.run(
            [*CLI, "--data", str(data), "--formula", formula],
            capture_output=True,
            text=True,
            env={**os.environ, "NO_COLOR": "1", "COLUMNS": "80"},
            check=False,
        )
        assert done.returncode == 2, done.stderr
        assert done.stdout == ""
        assert len(done.stderr.splitlines()) == 1, done.stderr
        assert done.stderr.startswith("error: `formula` ")
        assert "Traceback" not in done.stderr
    assert not sentinel.exists()


# --- each refused category names its part ---------------------------------------------

REFUSED = [
    ("y ~ I(np.os.getcwd())", "attribute access `np.os.getcwd`"),
    ("y ~ I(x.values)", "attribute access `x.values` is not allowed (a column name with a dot"),
    ("y ~ eval(x)", "call of `eval`"),
    ("y ~ I(x + len(x))", "call of `len`"),
    ("y ~ np.fft(x)", "call of `np.fft`"),
    ("y ~ bs(x)", "call of `bs`"),  # a formulaic transform not on the list
    ("y ~ I(__import__)", "dunder name `__import__`"),
    ("y ~ __class__", "dunder name `__class__`"),
    ("y ~ I(x.__class__)", "dunder name `__class__`"),
    ("y ~ I(`__x y` + 1)", "dunder name `__x y`"),
    ("y ~ I((lambda: 1)())", "lambda `lambda: 1`"),
    ("y ~ I(x + [v for v in x])", "comprehension `[v for v in x]`"),
    ("y ~ I((z := x))", "assignment expression `(z := x)`"),
    ("y ~ x + 'a'", "string literal `'a'`"),
    ("y ~ I(x + 'a')", "string literal `'a'`"),
    ("y ~ x[0]", "subscript `x[0]`"),
    ("y ~ C(g, levels=['a'])", "`C(g, levels=['a'])` is not allowed (C() takes one column"),
    ("y ~ scale(x, ddof=0)", "`scale(x, ddof=0)` is not allowed (scale() takes one argument)"),
    ("y ~ poly(x, degree=99)", "`poly(x, degree=99)` is not allowed (poly(expr, degree)"),
    ("y ~ poly(x, 2, raw='yes')", "`poly(x, 2, raw='yes')` is not allowed"),
    ("y ~ log(x, base=2)", "`log(x, base=2)` is not allowed (log() takes one argument)"),
    ("y ~ I(C(g))", "`C(...)` inside an expression"),
    ("y ~ log(*x)", "star argument `*x`"),
    ("y ~ log(**x)", "keyword unpacking `**x`"),
    ("y ~ {x + 1}", "Python block `{x + 1}`"),
    ("y ~ x | g", "operator `|`"),
    ("y ~ x %in% g", "operator `%in%`"),
    ("y ~ .", "the `.` operator (all columns)"),
    ("y ~ [x]", "bracket `[`"),
    ("y ~ x, x2", "symbol `,`"),
    ("y ~ x ∂ x2", "symbol `∂`"),
    ("y ~ x + \x00", "symbol `\\x00`"),
    ("y ~ I(x in x2)", "comparison `x in x2` is not allowed (use < <= > >= == !=)"),
    ("y ~ I(x is x2)", "comparison `x is x2`"),
    ("y ~ I(x ^ 2)", "operator `^` in `x ^ 2` is not allowed (use ** for powers)"),
    ("y ~ I(x % 2)", "operator `%` in `x % 2`"),
    ("y ~ I(~x)", "operator `~x`"),
    ("y ~ I(x and x2)", "boolean operator `x and x2`"),
    ("y ~ I(x if x2 else 1)", "conditional expression `x if x2 else 1`"),
    ('y ~ I(f"{x}")', "f-string"),
    ("y ~ I(x + True)", "constant `True`"),
    ("y ~ I(x + (1, 2))", "container literal `(1, 2)`"),
    ("y ~ I(x + 10 ** 10 ** 10)", "a power of numbers `10 ** 10 ** 10`"),
    ("y ~ (x + x2) ** 9", "the power `** 9`"),
    ("y ~ (x + x2) ^ 99999999999999999999999", "the power `** 99999999999999999999999`"),
    ("y ~ I(" + "+".join(["x"] * 200) + ")", "an expression nested more than 50 levels"),
]


@pytest.mark.parametrize(("formula", "part"), REFUSED)
def test_each_refused_category_names_the_part(formula: str, part: str) -> None:
    with pytest.raises(ParameterError) as info:
        logistic_rr(formula, DF, DESIGN)
    msg = str(info.value)
    assert msg.startswith(f"`formula` {formula!r} cannot be used: "), msg
    assert part in msg, msg
    assert "\n" not in msg
    assert "the functions C(column), I(expr), abs, exp, log" in msg  # the allowed list


SYNTAX = [
    ("y ~ I(x +)", "'I(x +)' at character 5 is not valid (invalid syntax)"),
    ("y ~ I(import os)", "'I(import os)' at character 5 is not valid"),
    ("y ~ log(x))", "cannot be used: Could not find matching context marker"),
    ("y ~ (", "cannot be used: Could not find matching context marker"),
    ("y ~ x)", "cannot be used: Could not find matching context marker"),
    ("y ~ x +", "cannot be used: Operator `+` has insuffient arguments"),
    ("y ~ I(", "cannot be used: Formula ended before quote context was closed"),
    ("y ~ `x", "cannot be used: Formula ended before quote context was closed"),
    ("y ~ 1.2.3", "'1.2.3' at character 5 is not valid (not a number)"),
    ("y ~ I(" + "9" * 5000 + ")", "at character 5 is not valid (Exceeds the limit"),
    ("y ~ x ~ x2", "cannot be used: Operator `~` is incorrectly used"),
    ("", "must name an outcome left of '~'"),
    ("~", "must name an outcome left of '~'"),
    ("   ", "must name an outcome left of '~'"),
]


@pytest.mark.parametrize(("formula", "needle"), SYNTAX)
def test_malformed_formulas_give_one_clean_error(formula: str, needle: str) -> None:
    with pytest.raises(ParameterError) as info:
        logistic_rr(formula, DF, DESIGN)
    msg = str(info.value)
    assert needle in msg, msg
    assert "\n" not in msg


def test_malformed_formulas_through_the_cli(tmp_path: Path) -> None:
    data = tmp_path / "survey.csv"
    DF.to_csv(data, index=False)
    runner = CliRunner(env=ENV)
    for formula, needle in SYNTAX[:11]:
        result = runner.invoke(
            app,
            ["regress", "--design", "warner", "-p", "p=0.8", "--data", str(data), "-f", formula],
            catch_exceptions=False,
        )
        assert result.exit_code == 2, result.output
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: `formula` "), result.stderr
        assert needle in lines[0]


def test_a_name_that_is_not_a_column_still_names_it_and_lists_the_columns() -> None:
    for formula, name in (("y ~ x + age", "'age'"), ("y ~ log(income)", "'income'")):
        with pytest.raises(DeniableError, match=f"`formula` names column {name}, which is not"):
            logistic_rr(formula, DF, DESIGN)
    with pytest.raises(DeniableError, match=r"\(columns: 'y', 'x', 'x2', 'g', 'my col'"):
        logistic_rr("y ~ I(np + 1)", DF, DESIGN)  # `np` alone is a name, not numpy


# --- what is allowed works, and means what it says -------------------------------------


def same_fit(formula: str, columns: dict[str, Any], *, data: Any = DF) -> None:
    """``formula`` fits exactly the model of its transformed columns precomputed."""
    fit = logistic_rr(formula, data, DESIGN)
    pre = data.assign(**columns)
    plain = logistic_rr("y ~ " + " + ".join(f"`{c}`" for c in columns), pre, DESIGN)
    assert len(fit.terms) == len(plain.terms), (fit.terms, plain.terms)
    assert fit.llf == pytest.approx(plain.llf, rel=1e-10, abs=1e-8)
    assert np.allclose(fit.params.to_numpy(), plain.params.to_numpy(), rtol=1e-6, atol=1e-8)


x, x2 = DF.x.to_numpy(), DF.x2.to_numpy()
TRANSFORMS = [
    ("y ~ log(x)", {"t": np.log(x)}),
    ("y ~ np.log(x)", {"t": np.log(x)}),
    ("y ~ log2(x)", {"t": np.log2(x)}),
    ("y ~ log10(x)", {"t": np.log10(x)}),
    ("y ~ log1p(x)", {"t": np.log1p(x)}),
    ("y ~ np.log1p(x)", {"t": np.log1p(x)}),
    ("y ~ exp(x2)", {"t": np.exp(x2)}),
    ("y ~ np.exp(x2)", {"t": np.exp(x2)}),
    ("y ~ sqrt(x)", {"t": np.sqrt(x)}),
    ("y ~ np.sqrt(x)", {"t": np.sqrt(x)}),
    ("y ~ abs(x2)", {"t": np.abs(x2)}),
    ("y ~ np.abs(x2)", {"t": np.abs(x2)}),
    ("y ~ I(x ** 2 + 1)", {"t": x**2 + 1}),
    ("y ~ I(-x / 2 + 3 * x2 - x * x2)", {"t": -x / 2 + 3 * x2 - x * x2}),
    ("y ~ I(2 ** x)", {"t": 2.0**x}),
    ("y ~ log(I(x + 1)) + sqrt(abs(x2))", {"a": np.log(x + 1), "b": np.sqrt(np.abs(x2))}),
    ("y ~ center(x)", {"t": x - x.mean()}),
    ("y ~ scale(x)", {"t": (x - x.mean()) / x.std(ddof=1)}),
    ("y ~ center(log(x))", {"t": np.log(x) - np.log(x).mean()}),
    ("y ~ poly(x, 2, raw=True)", {"a": x, "b": x**2}),
    ("y ~ poly(x, degree=3, raw=True)", {"a": x, "b": x**2, "c": x**3}),
    ("y ~ x:x2", {"t": x * x2}),
    ("y ~ x * x2", {"a": x, "b": x2, "c": x * x2}),
    ("y ~ x / x2", {"a": x, "b": x * x2}),
    ("y ~ (x + x2) ** 2", {"a": x, "b": x2, "c": x * x2}),
    ("y ~ (x + x2) ^ 2", {"a": x, "b": x2, "c": x * x2}),
    ("y ~ C(g)", {"b": (DF.g == "b").astype(float), "c": (DF.g == "c").astype(float)}),
    ("y ~ `my col`", {"t": x2 + 1}),
    ("y ~ I(x > 1.5)", {"t": (x > 1.5).astype(float)}),
    ("y ~ I(x * 2 <= x2 + 3) + x", {"a": (x * 2 <= x2 + 3).astype(float), "b": x}),
    ("y ~ I(`my col` * 2)", {"t": (x2 + 1) * 2}),
]


@pytest.mark.parametrize(("formula", "columns"), TRANSFORMS)
def test_every_listed_transform_fits_as_its_precomputed_column(
    formula: str, columns: dict[str, Any]
) -> None:
    same_fit(formula, columns)


def test_every_listed_function_is_tested_above() -> None:
    used = " ".join(f for f, _ in TRANSFORMS)
    for name in FUNCTIONS:
        assert f"{name}(" in used, name
    for name in ("log", "exp", "sqrt", "abs", "log1p"):
        assert f"np.{name}(" in used, name


def test_orthogonal_poly_spans_the_raw_powers() -> None:
    ortho = logistic_rr("y ~ poly(x, 2)", DF, DESIGN)
    raw = logistic_rr("y ~ poly(x, 2, raw=True)", DF, DESIGN)
    assert ortho.llf == pytest.approx(raw.llf, rel=1e-10)
    assert ortho.terms == ("Intercept", "poly(x, 2)[1]", "poly(x, 2)[2]")


def test_intercept_terms() -> None:
    base = logistic_rr("y ~ x + x2", DF, DESIGN)
    for formula in ("y ~ 0 + x + x2", "y ~ x + x2 - 1", "y ~ -1 + x + x2"):
        fit = logistic_rr(formula, DF, DESIGN)
        assert fit.terms == ("x", "x2"), formula
        assert fit.llf < base.llf
    assert logistic_rr("y ~ 1 + x + x2", DF, DESIGN).llf == pytest.approx(base.llf, rel=1e-10)


def test_linear_rr_takes_the_same_language() -> None:
    fit = linear_rr("score ~ log(x) + C(g)", DF, Warner(0.8), predictor="Z")
    pre = DF.assign(lx=np.log(x))
    plain = linear_rr("score ~ lx + C(g)", pre, Warner(0.8), predictor="Z")
    assert fit.llf == pytest.approx(plain.llf, rel=1e-10)
    assert fit.terms[1] == "log(x)"
    with pytest.raises(ParameterError, match="call of `open`"):
        linear_rr("open(score) ~ x", DF, Warner(0.8), predictor="Z")


def test_predict_on_new_data_evaluates_the_checked_formula_in_the_restricted_context() -> None:
    fit = logistic_rr("y ~ np.log(x) + center(x2)", DF, DESIGN)
    new = pd.DataFrame({"x": [0.7, 1.0, 2.5], "x2": [0.0, -1.0, 3.0]})
    b = fit.params.to_numpy()
    eta = b[0] + b[1] * np.log(new.x) + b[2] * (new.x2 - DF.x2.mean())  # the fitted mean
    assert np.allclose(fit.predict(new)["prevalence"], expit(eta))
    with pytest.raises(DeniableError, match="`data` for prediction lacks the column 'x2'"):
        fit.predict(new[["x"]])


def test_the_evaluation_context_holds_no_module_and_no_builtin() -> None:
    ctx = evaluation_context()
    assert sorted(vars(ctx["np"])) == sorted(ELEMENTWISE)
    assert ctx["__import__"] is None and ctx["open"] is None and ctx["eval"] is None
    assert all(not isinstance(v, type(np)) for v in ctx.values())
    assert ctx is not evaluation_context()  # formulaic may write into it
    # defence in depth, whatever the checker lets through: formulaic's default context (the
    # caller's frame, numpy and builtins) evaluates a builtin; the restricted one does not
    df = DF[["y", "x"]]
    assert "I(len(x) + x)" in formulaic.model_matrix("y ~ I(len(x) + x)", df).rhs.columns
    with pytest.raises(formulaic.errors.FormulaicError, match="not callable"):
        formulaic.model_matrix("y ~ I(len(x) + x)", df, context=evaluation_context())
    with pytest.raises(formulaic.errors.FormulaicError, match="has no attribute 'f2py'"):
        formulaic.model_matrix("y ~ I(np.f2py)", df, context=evaluation_context())


# --- random formulas: accepted only if made of allowed parts ---------------------------

VOCABULARY = [
    *["y", "x", "x2", "g", "`my col`", "`__x`", "Z", "np", "os", "age.group", "x.values"],
    *["C", "I", "log", "np.log", "sqrt", "center", "scale", "poly", "eval", "open", "bs"],
    *["__import__", "__class__", "np.f2py", ".", "lambda", "import", "for", "in", ":="],
    *["~", "+", "-", "*", "/", ":", "**", "^", "|", "%in%", "%", "(", ")", "[", "]", "{", "}"],
    *[",", "=", "'os'", '"', "`", "0", "1", "-1", "2", "2.5", "1.2.3", "True", "degree"],
    *["raw", "\\", "#", "@", "!", "∂", "é", "\x00", "\n", ">", "<"],
]
tokens = st.lists(st.sampled_from(VOCABULARY), max_size=14)
seps = st.sampled_from(["", " "])


@st.composite
def formulas(draw: Any) -> str:
    parts = draw(tokens)
    sep = draw(seps)
    lhs = draw(st.sampled_from(["y ~ ", "y~", "", "log(y) ~ "]))
    return lhs + sep.join(parts)


def only_allowed_parts(formula: str) -> None:
    """An independent check (Python's own tokenizer) that an accepted formula has no code:
    no strings, no dunders; every call is of a listed function; inside a call, no
    attribute access other than ``np.<element-wise>``, no keyword other than ``degree``
    and ``raw``, and only arithmetic operators."""
    text = formula
    while text.count("`") >= 2:  # a backticked name is a column: replace it by one name
        a = text.index("`")
        b = text.index("`", a + 1)
        assert not text[a + 1 : b].startswith("__") and not text[a + 1 : b].endswith("__")
        text = text[:a] + " quoted " + text[b + 1 :]
    assert "`" not in text and "'" not in text and '"' not in text, formula
    toks = []
    skip = (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER, tokenize.INDENT, tokenize.DEDENT)
    try:  # unbalanced parentheses end in a TokenError (formulaic refuses them later)
        for t in tokenize.generate_tokens(io.StringIO(re.sub(r"\s", " ", text)).readline):
            if t.type not in skip:
                toks.append(t)
    except tokenize.TokenError:
        pass
    calls: list[bool] = []  # open parentheses: is each one a call's?
    prev: Any = None
    prev_calls = False
    for i, t in enumerate(toks):
        after = toks[i + 1].string if i + 1 < len(toks) else ""
        in_call = any(calls)
        # Outside a call, formulaic reads `name (` (with a space) as a name and a group, never
        # as a call (`y ~ A (x)` is refused later: "Missing operator"); inside one, Python does.
        calls_next = after == "(" and (in_call or toks[i + 1].start == t.end)
        if t.type == tokenize.NAME:
            assert not (t.string.startswith("__") or t.string.endswith("__")), formula
            if calls_next:
                qualified = prev is not None and prev.string == "."
                allowed = set(ELEMENTWISE) if qualified else set(FUNCTIONS)
                assert t.string in allowed, formula
            if in_call:
                assert not keyword.iskeyword(t.string) or t.string in ("True", "False"), formula
                if after == "=":
                    assert t.string in ("degree", "raw"), formula
        elif re.fullmatch(r"\w+", t.string) and not in_call:
            pass  # a word character Python does not take in names (`x²`): a column name
        elif t.type == tokenize.OP:
            if t.string == "(":
                calls.append(prev is not None and prev.type == tokenize.NAME and prev_calls)
            elif t.string == ")":
                if calls:
                    calls.pop()
            elif t.string == "." and in_call:
                assert prev.string == "np" and toks[i + 2].string == "(", formula
            elif in_call:
                assert t.string in {"+", "-", "*", "/", "**", ",", "="}, formula
            else:
                assert t.string in {"~", "+", "-", "*", "/", ":", "**", "^", "."}, formula
        elif t.type == tokenize.NUMBER:
            pass
        else:
            raise AssertionError(f"{formula!r}: token {t.string!r}")
        prev, prev_calls = t, calls_next


SMALL = DF.head(60).assign(**{"__x": 1.0, "age.group": 1.0, "x.values": 2.0, "np": 3.0})


@given(formulas())
def test_random_formulas_are_accepted_only_when_safe(formula: str) -> None:
    try:
        check_formula(formula)
    except ParameterError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("`formula` ")
        return
    only_allowed_parts(formula)
    try:  # and then fitting it raises only deniable's own errors, if any
        with np.errstate(all="ignore"):
            model_data(formula, SMALL, outcome="real")
    except DeniableError as exc:
        assert "\n" not in str(exc)


LEAVES = st.sampled_from(
    ["x", "x2", "`my col`", "2", "0.5", "np", "__import__", "os", "'os'", "True", "np.f2py"]
)
CALLEES = st.sampled_from([*FUNCTIONS, "np.log", "np.sqrt", "eval", "np.os.system", "getattr"])


def grow(children: Any) -> Any:
    return st.one_of(
        st.builds("{}({})".format, CALLEES, children),
        st.builds("poly({}, {})".format, children, st.sampled_from(["2", "degree=3", "raw=1"])),
        st.builds(
            "{} {} {}".format,
            children,
            st.sampled_from(["+", "-", "*", "/", "**", "^", "%"]),
            children,
        ),
        st.builds("({})".format, children),
        st.builds("-{}".format, children),
        st.builds("{}.{}".format, children, st.sampled_from(["values", "__class__", "log"])),
        st.builds("{}[{}]".format, children, children),
        st.builds("(lambda: {})".format, children),
    )


EXPRESSIONS = st.recursive(LEAVES, grow, max_leaves=6)


@given(EXPRESSIONS, EXPRESSIONS, st.sampled_from([" + ", ":", " * ", " - "]))
def test_random_expressions_are_accepted_only_when_safe(a: str, b: str, op: str) -> None:
    formula = f"y ~ {a}{op}{b}"
    try:
        check_formula(formula)
    except ParameterError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("`formula` ")
        return
    only_allowed_parts(formula)
    try:
        with np.errstate(all="ignore"):
            model_data(formula, SMALL, outcome="real")
    except DeniableError as exc:
        assert "\n" not in str(exc)


@given(st.text(max_size=30))
@example("A (")  # a name and an open group, not a call (found by Python 3.13's run)
def test_random_text_is_accepted_or_refused_with_a_parameter_error(text: str) -> None:
    for formula in (text, "y ~ " + text, "y ~ I(" + text + ")"):
        try:
            check_formula(formula)
        except ParameterError:
            continue
        only_allowed_parts(formula)
