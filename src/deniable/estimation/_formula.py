"""The regression formula language: what a formula may say, checked before formulaic sees it.

formulaic evaluates the Python parts of a formula (``np.log(x)``, ``I(x + 1)``) with
``eval``, and even parsing a formula evaluates the function part of its calls.  A formula is
user input (a command-line option, a form field), so an unchecked formula can run any code:
``"y ~ center(__import__('os').system('...'))"`` did.  :func:`check_formula` reads the
formula with formulaic's own tokenizer (so both see the same parts), parses each Python part
with :mod:`ast`, and accepts only

* column names: identifiers (``age``, ``age.group`` as a plain term) or any name in
  backticks (```my col```);
* numbers; the operators ``~ + - * / : ** ^`` and parentheses (``0 +`` or ``- 1`` drops the
  intercept; a power ``(a + b) ** 2`` of terms is at most :data:`MAX_POWER`);
* calls of :data:`FUNCTIONS`: ``C(column)``, ``I(expr)``, ``log``, ``log2``, ``log10``,
  ``log1p``, ``exp``, ``sqrt``, ``abs`` (also spelt ``np.log`` ...), ``center``, ``scale``
  and ``poly(expr, degree)``, where an ``expr`` is arithmetic (``+ - * / **``, unary minus,
  parentheses) of columns, numbers and nested calls of the element-wise functions, ``I``,
  ``center`` and ``scale``.

Everything else (attribute access, any other call, dunder names, string literals,
subscripts, lambdas, comprehensions, ``:=``, comparisons, ``{...}`` Python blocks, the
``|``, ``%in%`` and ``.`` operators, keyword arguments other than ``poly``'s) is refused with
a :class:`~deniable.exceptions.ParameterError` that names the offending part and the allowed
list; a formula that is not well formed gets one such error too, never a ``SyntaxError``.
As a second line of defence, :func:`evaluation_context` is the only namespace formulaic
evaluates with: the allowed functions, a ``np`` holding only the allowed numpy functions,
and every Python builtin shadowed.
"""

from __future__ import annotations

import ast
import builtins
import re
import types
from dataclasses import dataclass
from typing import Any

import numpy as np

from deniable.exceptions import ParameterError

__all__ = [
    "ELEMENTWISE",
    "FUNCTIONS",
    "MAX_DEGREE",
    "MAX_DEPTH",
    "MAX_POWER",
    "FormulaNames",
    "check_formula",
    "evaluation_context",
]

#: Element-wise numpy functions a formula may call, by name or as ``np.<name>``.
ELEMENTWISE: dict[str, Any] = {
    "abs": np.abs,
    "exp": np.exp,
    "log": np.log,
    "log10": np.log10,
    "log1p": np.log1p,
    "log2": np.log2,
    "sqrt": np.sqrt,
}
#: Every function a formula may call (formulaic's own ``C``, ``I``, ``center``, ``scale``,
#: ``poly`` and the element-wise numpy functions).
FUNCTIONS: tuple[str, ...] = ("C", "I", *sorted(ELEMENTWISE), "center", "scale", "poly")
#: The largest power of terms, ``(a + b + c) ** 3`` (all interactions up to order 3).
MAX_POWER = 3
#: The largest degree of ``poly(x, degree)``.
MAX_DEGREE = 10
#: How deeply a Python part may nest (formulaic itself recurses on deeper expressions).
MAX_DEPTH = 50

_OPERATOR_CHARS = frozenset("~+-*/:^")
_NUMBER = re.compile(r"[0-9]+\.?[0-9]*|\.[0-9]+")
_NESTED = frozenset({*ELEMENTWISE, *(f"np.{f}" for f in ELEMENTWISE), "I", "center", "scale"})
_TOP_ONLY = frozenset({"C", "poly"})
_BINOPS: dict[type[ast.operator], str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.Pow: "**",
}
_OTHER_BINOPS: dict[type[ast.operator], str] = {
    ast.Mod: "%",
    ast.FloorDiv: "//",
    ast.BitXor: "^",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.MatMult: "@",
}
_COMPARISONS: tuple[type[ast.cmpop], ...] = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)
_KINDS: tuple[tuple[type[ast.AST] | tuple[type[ast.AST], ...], str], ...] = (
    (ast.Attribute, "attribute access"),
    ((ast.Subscript, ast.Slice), "subscript"),
    (ast.Lambda, "lambda"),
    ((ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp), "comprehension"),
    (ast.NamedExpr, "assignment expression"),
    (ast.BoolOp, "boolean operator"),
    (ast.IfExp, "conditional expression"),
    ((ast.List, ast.Tuple, ast.Set, ast.Dict), "container literal"),
    ((ast.JoinedStr, ast.FormattedValue), "f-string"),
    (ast.Starred, "star argument"),
)

ALLOWED = (
    "a formula may use column names (any name in backticks), numbers, the operators "
    "~ + - * / : ** ^ and parentheses, and the functions C(column), I(expr), "
    f"{', '.join(sorted(ELEMENTWISE))} (also as np.log ...), center(expr), scale(expr) and "
    "poly(expr, degree), where expr is arithmetic (+ - * / **) of columns, numbers and "
    "these functions, or a comparison of such arithmetic (< <= > >= == !=, e.g. "
    "I(age > 40))"
)


@dataclass(frozen=True)
class FormulaNames:
    """The column names a checked formula uses, left and right of ``~``, in order, and
    those it marks categorical with ``C(column)``."""

    outcome: tuple[str, ...]
    covariates: tuple[str, ...]
    categorical: tuple[str, ...] = ()

    @property
    def columns(self) -> tuple[str, ...]:
        """Every column the formula uses, each once."""
        return tuple(dict.fromkeys((*self.outcome, *self.covariates)))


class _Refused(Exception):
    """A part of a Python expression that the formula language does not allow."""

    def __init__(self, what: str, hint: str = "") -> None:
        super().__init__(what)
        self.what = what
        self.hint = hint


def _refuse(formula: str, what: str, hint: str = "") -> ParameterError:
    extra = f" ({_printable(hint)})" if hint else ""
    return ParameterError(
        f"`formula` {formula!r} cannot be used: {_printable(what)} is not allowed{extra}; "
        f"{ALLOWED}."
    )


def _invalid(formula: str, part: str, start: int, why: str) -> ParameterError:
    return ParameterError(
        f"`formula` {formula!r} cannot be used: {part!r} at character {start + 1} is not "
        f"valid ({why})."
    )


def _printable(text: str) -> str:
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _is_dunder(name: str) -> bool:
    return name.startswith("__") or name.endswith("__")


def check_formula(formula: str) -> FormulaNames:
    """Check that ``formula`` uses only the formula language described in the module
    docstring; return the column names it uses.

    Raises a :class:`~deniable.exceptions.ParameterError` naming the first part that is
    not allowed (``attribute access `np.os```, ``call of `eval```, ``dunder name
    `__import__```) or not well formed.  Does not check that the columns exist, nor the
    formula's structure beyond its parts (formulaic does that, safely, once this passed).

    Examples
    --------
    >>> check_formula("y ~ x1 + C(g) + np.log(income)")
    FormulaNames(outcome=('y',), covariates=('x1', 'g', 'income'), categorical=('g',))
    >>> check_formula("y ~ x1 + I(np.os.system('ls'))")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    deniable.exceptions.ParameterError: `formula` "y ~ x1 + I(np.os.system('ls'))" cannot be used: attribute access `np.os.system` is not allowed; ...
    """  # noqa: E501
    from formulaic.errors import FormulaicError
    from formulaic.parser.algos.tokenize import tokenize

    if not isinstance(formula, str):  # pragma: no cover - model_data checks the type first
        raise TypeError("formula must be a string")
    try:
        tokens = list(tokenize(formula))
    except FormulaicError as exc:
        text = str(exc).strip()
        first = text.splitlines()[0] if text else type(exc).__name__
        raise ParameterError(f"`formula` {formula!r} cannot be used: {first}") from None
    sides: tuple[list[str], list[str]] = ([], [])
    marked: list[str] = []  # columns in C(...)
    rhs = False  # past the first `~`
    for i, token in enumerate(tokens):
        start = token.source_start or 0
        end = token.source_end if token.source_end is not None else start
        shown = formula[start : end + 1]
        kind = token.kind.value if token.kind is not None else ""
        names = sides[1] if rhs else sides[0]
        if kind == "context":
            if token.token in "[]":
                raise _refuse(formula, f"bracket `{token.token}`")
        elif kind == "operator":
            if formula[start] == "%":
                raise _refuse(formula, f"operator `%{token.token}%`")
            bad = "".join(dict.fromkeys(c for c in token.token if c not in _OPERATOR_CHARS))
            if bad.strip():
                what = "operator" if bad == "|" else "symbol"
                raise _refuse(formula, f"{what} `{bad.strip()}`")
            if "~" in token.token:
                rhs = True
            if "**" in token.token or "^" in token.token:
                _check_power(formula, tokens[i + 1 :])
        elif kind == "value":
            if token.token[:1] in ("'", '"'):
                raise _refuse(formula, f"string literal `{token.token}`")
            if token.token == ".":
                raise _refuse(formula, "the `.` operator (all columns)", "name the columns")
            if not _NUMBER.fullmatch(token.token):
                raise _invalid(formula, token.token, start, "not a number")
        elif kind == "name":
            if _is_dunder(token.token):
                raise _refuse(formula, f"dunder name `{token.token}`")
            names.append(token.token)
        elif kind == "python":
            if formula[start] == "{":
                block = "{" + token.token + "}"
                raise _refuse(formula, f"Python block `{block}`", "write I(...) instead")
            try:
                used, categorical = _check_python(token.token)
                names.extend(used)
                marked.extend(categorical)
            except _Refused as exc:
                raise _refuse(formula, exc.what, exc.hint) from None
            except (SyntaxError, ValueError, RecursionError) as exc:
                text = (exc.msg if isinstance(exc, SyntaxError) else str(exc)) or ""
                why = text.strip().splitlines()[0] if text.strip() else "invalid syntax"
                raise _invalid(formula, token.token, start, why) from None
        else:  # pragma: no cover - formulaic's tokenizer has no other kind
            raise _refuse(formula, f"token `{shown}`")
    return FormulaNames(
        tuple(dict.fromkeys(sides[0])),
        tuple(dict.fromkeys(sides[1])),
        tuple(dict.fromkeys(marked)),
    )


def _check_power(formula: str, rest: list[Any]) -> None:
    """The exponent of a formula-level power, when a number, is at most ``MAX_POWER``
    (formulaic expands ``(a + b + ...) ** k`` into ``len ** k`` products)."""
    for token in rest:
        if token.token == "(":
            continue
        kind = token.kind.value if token.kind is not None else ""
        if kind == "value" and re.fullmatch("[0-9]+", token.token):
            digits = token.token.lstrip("0")
            if len(digits) > 1 or int(digits or "0") > MAX_POWER:  # no int() of a long text
                raise _refuse(
                    formula, f"the power `** {token.token}`", f"at most ** {MAX_POWER} of terms"
                )
        return


def _check_python(code: str) -> tuple[list[str], list[str]]:
    """The column names of one Python part (``I(x + 1)``) and those of them in ``C(...)``;
    ``_Refused`` or ``SyntaxError``."""
    from formulaic.utils.code import sanitize_variable_names

    aliases: dict[str, str] = {}
    # a quoted name gets an identifier that no other word of the part uses, so the aliases
    # map back to the quoted column names only
    taken: dict[str, Any] = dict.fromkeys(re.findall(r"\w+", code))
    sanitized = sanitize_variable_names(code, taken, aliases)
    tree = ast.parse(sanitized, mode="eval")
    _check_depth(tree)
    for node in ast.walk(tree):  # a dunder anywhere is named first, whatever holds it
        spelling = node.id if isinstance(node, ast.Name) else getattr(node, "attr", "")
        if isinstance(node, (ast.Name, ast.Attribute)) and _is_dunder(spelling):
            raise _Refused(f"dunder name `{aliases.get(spelling, spelling)}`")
    checker = _Checker(aliases)
    body = tree.body
    if isinstance(body, ast.Call):
        checker.call(body, top=True)
    else:
        checker.expr(body)  # names the kind of the part (a subscript, `x[0]`)
        raise _Refused(f"expression `{ast.unparse(body)}`")  # pragma: no cover
    return checker.names, checker.categorical


def _check_depth(tree: ast.AST) -> None:
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    while stack:
        node, level = stack.pop()
        if level > MAX_DEPTH:
            raise _Refused(
                f"an expression nested more than {MAX_DEPTH} levels deep",
                "split it or precompute the column",
            )
        stack.extend((child, level + 1) for child in ast.iter_child_nodes(node))


class _Checker:
    """Walks one parsed Python part; collects column names; raises ``_Refused``."""

    def __init__(self, aliases: dict[str, str]) -> None:
        self.aliases = aliases
        self.names: list[str] = []
        self.categorical: list[str] = []

    def name(self, node: ast.Name) -> None:
        original = self.aliases.get(node.id, node.id)
        for spelling in (node.id, original):
            if _is_dunder(spelling):
                raise _Refused(f"dunder name `{spelling}`")
        self.names.append(original)

    def call(self, node: ast.Call, *, top: bool) -> None:
        func = node.func
        callee = None
        if isinstance(func, ast.Name):
            callee = func.id
        elif (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "np"
        ):
            callee = f"np.{func.attr}"
        allowed = _NESTED | (_TOP_ONLY if top else frozenset())
        if callee is None or callee not in allowed:
            shown = ast.unparse(func)
            if isinstance(func, ast.Name) and _is_dunder(func.id):
                raise _Refused(f"dunder name `{func.id}`")
            if callee in _TOP_ONLY:
                raise _Refused(f"`{callee}(...)` inside an expression", "use it as a term")
            if isinstance(func, ast.Attribute) and callee is None:
                raise _Refused(f"attribute access `{shown}`")
            if not isinstance(func, (ast.Name, ast.Attribute)):
                self.expr(func)  # names what is called: a lambda, a subscript, a call
            raise _Refused(f"call of `{shown}`")
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                raise _Refused(f"star argument `{ast.unparse(arg)}`")
        for kw in node.keywords:
            if kw.arg is None:
                raise _Refused(f"keyword unpacking `**{ast.unparse(kw.value)}`")
        shown_call = ast.unparse(node)
        if callee == "C":
            if len(node.args) != 1 or node.keywords or not isinstance(node.args[0], ast.Name):
                raise _Refused(f"`{shown_call}`", "C() takes one column name: C(group)")
            self.name(node.args[0])
            self.categorical.append(self.names[-1])
        elif callee == "poly":
            self.poly(node, shown_call)
        else:
            if len(node.args) != 1 or node.keywords:
                raise _Refused(f"`{shown_call}`", f"{callee}() takes one argument")
            self.expr(node.args[0])

    def poly(self, node: ast.Call, shown: str) -> None:
        usage = f"poly(expr, degree) with degree 1 to {MAX_DEGREE}, optionally raw=True"
        keywords = {kw.arg: kw.value for kw in node.keywords}
        if (
            not 1 <= len(node.args) <= 2
            or not set(keywords) <= {"degree", "raw"}
            or (len(node.args) == 2 and "degree" in keywords)
        ):
            raise _Refused(f"`{shown}`", usage)
        degree = node.args[1] if len(node.args) == 2 else keywords.get("degree")
        if degree is not None and not (
            isinstance(degree, ast.Constant)
            and type(degree.value) is int
            and 1 <= degree.value <= MAX_DEGREE
        ):
            raise _Refused(f"`{shown}`", usage)
        raw = keywords.get("raw")
        if raw is not None and not (isinstance(raw, ast.Constant) and type(raw.value) is bool):
            raise _Refused(f"`{shown}`", usage)
        self.expr(node.args[0])

    def expr(self, node: ast.expr) -> None:
        """Arithmetic of columns, numbers and nested element-wise calls."""
        if isinstance(node, ast.Name):
            self.name(node)
        elif isinstance(node, ast.Constant):
            value = node.value
            if isinstance(value, (str, bytes)):
                raise _Refused(f"string literal `{ast.unparse(node)}`")
            if type(value) not in (int, float):
                raise _Refused(f"constant `{ast.unparse(node)}`")
        elif isinstance(node, ast.BinOp):
            op = type(node.op)
            if op not in _BINOPS:
                symbol = _OTHER_BINOPS.get(op, op.__name__)
                hint = "use ** for powers" if op is ast.BitXor else ""
                raise _Refused(f"operator `{symbol}` in `{ast.unparse(node)}`", hint)
            if op is ast.Pow and not (_has_name(node.left) or _has_name(node.right)):
                # 10 ** 10 ** 10 would make Python build a huge integer
                raise _Refused(f"a power of numbers `{ast.unparse(node)}`", "write the number")
            self.expr(node.left)
            self.expr(node.right)
        elif isinstance(node, ast.Compare):
            # an indicator such as I(age > 40): comparisons of arithmetic, nothing else
            for cmp in node.ops:
                if not isinstance(cmp, _COMPARISONS):
                    raise _Refused(f"comparison `{ast.unparse(node)}`", "use < <= > >= == !=")
            self.expr(node.left)
            for operand in node.comparators:
                self.expr(operand)
        elif isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, (ast.USub, ast.UAdd)):
                raise _Refused(f"operator `{ast.unparse(node)}`")
            self.expr(node.operand)
        elif isinstance(node, ast.Call):
            self.call(node, top=False)
        else:
            shown = ast.unparse(node)
            for kinds, label in _KINDS:
                if isinstance(node, kinds):
                    hint = ""
                    if isinstance(node, ast.Attribute) and re.fullmatch(r"[\w.]+", shown):
                        hint = f"a column name with a dot goes in backticks: `{shown}`"
                    raise _Refused(f"{label} `{shown}`", hint)
            raise _Refused(f"expression `{shown}`")


def _has_name(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Name) for n in ast.walk(node))


def evaluation_context() -> dict[str, Any]:
    """The namespace formulaic evaluates checked formulas in (a fresh dict each call).

    The element-wise functions by name, ``np`` as a namespace holding only them, and every
    other Python builtin shadowed by ``None``; data columns still come first.  formulaic
    adds its own transforms (``C``, ``I``, ``center``, ``scale``, ``poly``) below this layer.
    """
    context: dict[str, Any] = dict.fromkeys(vars(builtins))
    context.update(ELEMENTWISE)
    context["np"] = types.SimpleNamespace(**ELEMENTWISE)
    return context
