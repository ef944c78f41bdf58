"""Shared plumbing of every layer: argument validation and safe file writing.

Holds no mathematics.  May import only :mod:`deniable.exceptions` (and numpy).

* ``_validation``: the checks every public entry point runs on its arguments, with
  messages that name the parameter, the allowed values and the value received;
* ``_files``: :func:`atomic_write` (a temporary file renamed into place, so a failure never
  leaves a half-written file) and :func:`same_file` (an output must not be an input).
"""

from __future__ import annotations

from deniable.common._files import atomic_write, atomic_write_text, same_file

__all__ = ["atomic_write", "atomic_write_text", "same_file"]
