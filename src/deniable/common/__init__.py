"""Shared plumbing of every layer: argument validation, safe file writing, and the one
epsilon formatter and JSON encoder.

Holds no mathematics.  May import only :mod:`deniable.exceptions` (and numpy; PyYAML
inside :func:`load_yaml`).

* ``validation`` (a public module, used as a namespace: ``validation.probability("p",
  p)``): the checks every public entry point runs on its arguments, with messages that name
  the parameter, the allowed values and the value received;
* every other name is exported here, whatever private module holds it:

* ``_files``: :func:`atomic_write` (a temporary file renamed into place, so a failure never
  leaves a half-written file; ``replace=False`` never replaces an existing one),
  :func:`same_file` (an output must not be an input) and :func:`existing_file` (whether a
  write would replace a file);
* ``_format``: :func:`format_epsilon`, the one way an epsilon becomes text (``∞`` for an
  infinite one, never a finite stand-in; a tiny one never as ``0``), and the number,
  interval and parameter formats of printed results;
* ``_json``: :func:`to_jsonable` and :func:`dumps`, the one JSON encoder (an infinite value
  is ``"inf"``, NaN ``"nan"``; always valid JSON);
* ``_load``: :func:`load_json` and :func:`load_yaml`, the one strict loader of each format
  that every configuration file goes through (a key given twice, nesting past 64 levels,
  an integer of more than 40 digits refused, naming the place).
"""

from __future__ import annotations

from deniable.common import validation
from deniable.common._files import atomic_write, atomic_write_text, existing_file, same_file
from deniable.common._format import (
    epsilon_note,
    format_delta,
    format_epsilon,
    format_epsilons,
    format_interval,
    format_number,
    format_parameters,
    format_probabilities,
    format_probability,
)
from deniable.common._json import dumps, json_number, to_jsonable
from deniable.common._load import MAX_DEPTH, MAX_INT_DIGITS, MAX_NODES, load_json, load_yaml

__all__ = [
    "MAX_DEPTH",
    "MAX_INT_DIGITS",
    "MAX_NODES",
    "atomic_write",
    "atomic_write_text",
    "dumps",
    "epsilon_note",
    "existing_file",
    "format_delta",
    "format_epsilon",
    "format_epsilons",
    "format_interval",
    "format_number",
    "format_parameters",
    "format_probabilities",
    "format_probability",
    "json_number",
    "load_json",
    "load_yaml",
    "same_file",
    "to_jsonable",
    "validation",
]
