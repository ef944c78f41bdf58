"""Reading configuration files: the one JSON loader and the one YAML loader every reader
uses (question specs, oracle specs and keys, tallies, survey files).

Both parse strictly and refuse, with one :class:`~deniable.exceptions.DataError` that names
the source, the place and the limit:

* a key given twice in one mapping, at any depth (a later ``cap:`` would otherwise
  silently replace the first);
* nesting deeper than :data:`MAX_DEPTH` levels (Python's parsers recurse, so a deeper file
  would end in a ``RecursionError``);
* an integer of more than :data:`MAX_INT_DIGITS` digits (Python refuses to read integers
  past 4,300 digits with a ``ValueError``, and no field needs more than 2**128);
* a number beyond the doubles (``1e999`` would silently become infinity);
* JSON's non-standard constants ``NaN`` and ``Infinity``, and text that is not UTF-8;
* (YAML) more than :data:`MAX_NODES` values once aliases are expanded (a file of nested
  aliases, "a billion laughs", is a few lines that expand without bound).

JSON places are paths (``questions[2].design``); YAML places are a line and a column.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import numpy as np

from deniable.exceptions import DataError

__all__ = ["MAX_DEPTH", "MAX_INT_DIGITS", "MAX_NODES", "load_json", "load_yaml"]

#: The deepest nesting of lists and mappings a file may have.
MAX_DEPTH = 64
#: The most digits an integer in a file may have (2**128 has 39).
MAX_INT_DIGITS = 40
#: The most values a YAML file may hold once its aliases are expanded.
MAX_NODES = 1_000_000

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)
_CHUNK = 1 << 20
#: An exponent of three digits or more: a number that may be beyond the doubles.
_EXPONENT = re.compile(rb"[eE][+-]?[0-9]{3}")


def _text(data: str | bytes, source: str) -> str:
    if isinstance(data, bytes | bytearray | memoryview):
        try:
            return bytes(data).decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise DataError(f"{source} is not UTF-8 text (byte {exc.start}).") from None
    if not isinstance(data, str):
        raise DataError(f"{source} must be text, got {type(data).__name__}.")
    return data


def _line_column(raw: bytes, pos: int) -> str:
    line = raw.count(b"\n", 0, pos) + 1
    column = pos - (raw.rfind(b"\n", 0, pos) + 1) + 1
    return f"line {line}, column {column}"


def _blank_strings(raw: bytes) -> bytes:
    """``raw`` with the inside of every JSON string blanked (the same length)."""
    return _STRING.sub(lambda m: b'"' + b" " * (len(m.group()) - 2) + b'"', raw)


def _scan(blank: bytes) -> tuple[int | None, bool]:
    """For the JSON text ``blank`` (strings blanked): the byte offset where it first nests
    deeper than MAX_DEPTH (or None), and whether it holds a run of more than MAX_INT_DIGITS
    digits; numpy over 1 MB chunks, so memory is O(1 MB) whatever the size."""
    depth, run, long_run = 0, 0, False
    for start in range(0, len(blank), _CHUNK):
        arr = np.frombuffer(blank, dtype=np.uint8, count=min(_CHUNK, len(blank) - start),
                            offset=start)  # fmt: skip
        step = (arr == ord("[")).astype(np.int64) + (arr == ord("{"))
        step -= (arr == ord("]")).astype(np.int64) + (arr == ord("}"))
        levels = depth + np.cumsum(step)
        over = np.flatnonzero(levels > MAX_DEPTH)
        if over.size:
            return start + int(over[0]), long_run
        if levels.size:
            depth = int(levels[-1])
        if not long_run:  # the longest run of digits, carried across chunks
            other = np.flatnonzero((arr < ord("0")) | (arr > ord("9")))
            if other.size == 0:
                run += arr.size
            else:
                gaps = np.diff(other) - 1
                inner = int(gaps.max()) if gaps.size else 0
                longest = max(run + int(other[0]), inner)
                run = arr.size - 1 - int(other[-1])
                long_run = longest > MAX_INT_DIGITS
            long_run = long_run or run > MAX_INT_DIGITS
    return None, long_run


class _Bad:
    """A value the JSON hooks refused, found with its path by :func:`_find`."""

    def __init__(self, why: str) -> None:
        self.why = why


class _Duplicate(dict[str, Any]):
    """A JSON object that gave ``key`` twice."""

    key: str = ""


def _int(text: str) -> Any:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        return _Bad(f"an integer of {digits} digits (at most {MAX_INT_DIGITS} are read)")
    return int(text)


def _float(text: str) -> Any:
    value = float(text)
    if not math.isfinite(value):
        shown = text if len(text) <= 24 else text[:20] + "..."
        return _Bad(f"the number {shown}, beyond the largest double (1.8e308)")
    return value


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            dup = _Duplicate(out)
            dup.key = key
            return dup
        out[key] = value
    return out


def _shown(path: str) -> str:
    """A path for a message: at most 80 characters."""
    return f"`{path}`" if len(path) <= 80 else f"`{path[:77]}...`"


def _child(path: str, key: Any) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def _find(data: Any, source: str) -> None:
    """Walk ``data`` (without recursion) and raise for the first refused value."""
    stack: list[tuple[Any, str]] = [(data, "")]
    while stack:
        node, path = stack.pop()
        where = _shown(path) if path else "the top level"
        if isinstance(node, _Bad):
            raise DataError(f"{source}: {where} holds {node.why}.")
        if isinstance(node, _Duplicate):
            raise DataError(
                f"{source}: the key `{node.key}` is given twice in {where}; each key may "
                "appear once."
            )
        if isinstance(node, dict):
            stack.extend((v, _child(path, k)) for k, v in reversed(node.items()))
        elif isinstance(node, list):
            stack.extend((v, _child(path, i)) for i, v in reversed(list(enumerate(node))))


def load_json(data: str | bytes, *, source: str) -> Any:
    """Parse strict JSON text (the module docstring says what is refused).

    ``source`` names the text in every error (``"survey file 's.json'"``, ``"the spec"``).

    >>> load_json('{"cap": 1, "q": [1, 2.5]}', source="the file")
    {'cap': 1, 'q': [1, 2.5]}
    >>> load_json('{"cap": 1, "q": {"cap": 2, "cap": 3}}', source="the file")
    Traceback (most recent call last):
    ...
    deniable.exceptions.DataError: the file: the key `cap` is given twice in `q`; each key may appear once.
    """  # noqa: E501
    text = _text(data, source)
    raw = text.encode("utf-8")
    blank = _blank_strings(raw)
    deep, long_run = _scan(blank)
    if deep is not None:
        raise DataError(
            f"{source}: nested deeper than {MAX_DEPTH} levels at {_line_column(raw, deep)} "
            f"(lists and objects may nest at most {MAX_DEPTH} levels)."
        )
    flagged = False

    def bad_int(s: str) -> Any:
        nonlocal flagged
        out = _int(s)
        flagged |= isinstance(out, _Bad)
        return out

    def bad_float(s: str) -> Any:
        nonlocal flagged
        out = _float(s)
        flagged |= isinstance(out, _Bad)
        return out

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal flagged
        out = _pairs(items)
        flagged |= isinstance(out, _Duplicate)
        return out

    def constant(name: str) -> Any:
        raise DataError(f"{source} is not strict JSON: it holds {name} (write it as a string).")

    # numbers are checked one by one (a Python call each) only where a long one may be
    numbers: dict[str, Any] = {}
    if long_run or _EXPONENT.search(blank):
        numbers = {"parse_int": bad_int, "parse_float": bad_float}
    try:
        value = json.loads(text, parse_constant=constant, object_pairs_hook=pairs, **numbers)
    except json.JSONDecodeError as exc:
        raise DataError(
            f"{source} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}."
        ) from None
    except RecursionError:  # pragma: no cover - the depth was checked first
        raise DataError(f"{source}: nested too deeply.") from None
    if flagged:
        _find(value, source)
    return value


def _yaml_loader(source: str) -> Any:
    """A PyYAML safe loader that refuses what :func:`load_yaml` documents."""
    import yaml
    from yaml.constructor import SafeConstructor

    def at(node: Any) -> str:
        mark = node.start_mark
        return f"line {mark.line + 1}, column {mark.column + 1}"

    class Loader(yaml.SafeLoader):  # type: ignore[misc]
        depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            self.depth += 1
            try:
                if self.depth > MAX_DEPTH:
                    mark = self.peek_event().start_mark
                    raise DataError(
                        f"{source}: nested deeper than {MAX_DEPTH} levels at line "
                        f"{mark.line + 1}, column {mark.column + 1} (lists and mappings may "
                        f"nest at most {MAX_DEPTH} levels)."
                    )
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            if isinstance(node, yaml.MappingNode):
                seen: set[Any] = set()
                for key_node, _ in node.value:
                    if key_node.tag == "tag:yaml.org,2002:merge":
                        continue  # `<<: *defaults` merges keys that explicit keys override
                    key = self.construct_object(key_node, deep=True)
                    try:
                        twice = key in seen
                    except TypeError:
                        continue  # an unhashable key: PyYAML says so
                    if twice:
                        raise DataError(
                            f"{source}: the key `{key}` is given twice in one mapping (at "
                            f"{at(key_node)}); each key may appear once."
                        )
                    seen.add(key)
            return super().construct_mapping(node, deep=deep)

    def checked_int(loader: Any, node: Any) -> Any:
        text = str(node.value).replace("_", "").lstrip("+-")
        if len(text) > MAX_INT_DIGITS + 2 or (
            text.isdigit() and len(text.lstrip("0")) > MAX_INT_DIGITS
        ):
            raise DataError(
                f"{source}: the integer at {at(node)} has {len(text)} digits (at most "
                f"{MAX_INT_DIGITS} are read)."
            )
        value = SafeConstructor.construct_yaml_int(loader, node)
        if abs(value) >= 10**MAX_INT_DIGITS:
            raise DataError(
                f"{source}: the integer at {at(node)} is beyond 10**{MAX_INT_DIGITS} (at most "
                f"{MAX_INT_DIGITS} digits are read)."
            )
        return value

    def checked_float(loader: Any, node: Any) -> Any:
        value = SafeConstructor.construct_yaml_float(loader, node)
        spelled = str(node.value).lower().lstrip("+-")
        if math.isinf(value) and spelled != ".inf":
            raise DataError(
                f"{source}: the number at {at(node)} is beyond the largest double (1.8e308)."
            )
        return value

    Loader.add_constructor("tag:yaml.org,2002:int", checked_int)
    Loader.add_constructor("tag:yaml.org,2002:float", checked_float)
    return Loader


def _count(data: Any, source: str) -> None:
    """Refuse more than MAX_NODES values or MAX_DEPTH levels once aliases are expanded (a
    walk that stops at the first limit: O(MAX_NODES) whatever the aliases)."""
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    nodes = 0
    while stack:
        node, path, level = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            raise DataError(
                f"{source} holds more than {MAX_NODES:,} values once its aliases are "
                "expanded (a file of nested aliases?)."
            )
        if level > MAX_DEPTH:
            raise DataError(
                f"{source}: nested deeper than {MAX_DEPTH} levels at {_shown(path)} once its "
                "aliases are expanded (lists and mappings may nest at most {MAX_DEPTH} levels)."
            )
        if isinstance(node, dict):
            stack.extend((v, _child(path, str(k)), level + 1) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((v, _child(path, i), level + 1) for i, v in enumerate(node))


def load_yaml(data: str | bytes, *, source: str) -> Any:
    """Parse YAML text with PyYAML's safe loader (plain data only: no Python objects),
    refusing what the module docstring says.  Needs PyYAML (the ``survey`` extra).

    >>> load_yaml("cap: 1\\nquestions: [a, b]\\n", source="the file")
    {'cap': 1, 'questions': ['a', 'b']}
    >>> load_yaml("cap: 1\\ncap: 2\\n", source="the file")
    Traceback (most recent call last):
    ...
    deniable.exceptions.DataError: the file: the key `cap` is given twice in one mapping (at line 2, column 1); each key may appear once.
    """  # noqa: E501
    text = _text(data, source)
    try:
        import yaml
    except ModuleNotFoundError:  # pragma: no cover - the dev environment has it
        raise ImportError(
            f"reading {source} needs PyYAML: pip install 'deniable[survey]' (or write it as JSON)."
        ) from None
    loader = _yaml_loader(source)(text)
    try:
        value = loader.get_single_data()
    except yaml.YAMLError as exc:
        first = " ".join(str(exc).split())
        raise DataError(f"{source} is not valid YAML: {first}.") from None
    except RecursionError:  # pragma: no cover - the depth was checked while composing
        raise DataError(f"{source}: nested too deeply.") from None
    finally:
        loader.dispose()
    _count(value, source)
    return value
