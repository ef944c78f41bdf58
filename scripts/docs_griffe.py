"""A griffe extension that lets mkdocstrings read deniable's docstrings (used by mkdocs.yml).

The docstrings follow numpydoc with two habits of the house that griffe does not read as such:

* Sphinx roles, ``:class:`Estimate``` or ``:func:`~deniable.survey.analyze```: each becomes
  a cross-reference (``[`Estimate`][Estimate]``) that mkdocstrings resolves in the scope of
  the object documented, so a role naming nothing is a warning and fails the strict build;
* doctests in the prose (outside an ``Examples`` section): each block of ``>>>`` lines and
  their output, up to the next blank line, becomes a fenced ``pycon`` block (markdown would
  read ``>>>`` as quotes);
* RST simple tables (``=====  =====`` borders) become markdown tables;
* compact items in the ``Parameters``, ``Attributes`` and ``Other Parameters`` sections,
  ``name : what it is`` on one line: the text after the colon is a description, not a
  type, so each item becomes ``name`` followed by its description indented (the types then
  come from the signature and the annotations).  An item whose text after the colon is a
  bare type (``cap : float``, ``se : str | None``) is numpydoc already and stays.

The source is never changed: the extension rewrites the docstrings griffe has just read.
"""

from __future__ import annotations

import importlib.util
import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:class|func|meth|attr|mod|data|exc|obj):`(~?)([^`<>]+?)(?:\(\))?`")
ITEM = re.compile(r"^([A-Za-z_*][\w*]*(?:, *[A-Za-z_*][\w*]*)*) : (.+)$")
COMPACT_SECTIONS = {"parameters", "attributes", "other parameters"}
_NAME = r"[A-Za-z_][\w.]*(?:\[[^\]]*\])?"
TYPE = re.compile(rf"^(?:{_NAME}(?: \| {_NAME})*|\{{[^}}]*\}})(?:, optional)?$")
BORDER = re.compile(r"^( *)=+(?: +=+)+ *$")


def _role(match: re.Match[str]) -> str:
    tilde, target = match.groups()
    shown = target.rsplit(".", 1)[-1] if tilde else target
    first = target.split(".", 1)[0]
    if "." in target and first != "deniable" and importlib.util.find_spec(first) is not None:
        return f"`{shown}`"  # another library's object: no inventory to link to offline
    return f"[`{shown}`][{target}]"


def _tables(text: str) -> str:
    """Each RST simple table as a markdown table (cells split at runs of 2+ spaces)."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        top = BORDER.match(lines[i])
        ends = [j for j in range(i + 1, len(lines)) if BORDER.match(lines[j])] if top else []
        if not top or not ends:
            out.append(lines[i])
            i += 1
            continue
        indent, ncols = top.group(1), len(lines[i].split())
        end = ends[1] if len(ends) > 1 and ends[0] - i <= 2 else ends[0]
        rows: list[list[str]] = []
        for line in lines[i + 1 : end]:
            if not line.strip() or BORDER.match(line):
                continue
            if line[len(indent) :].startswith(" ") and rows:  # the last cell goes on
                rows[-1][-1] += " " + line.strip()
            else:
                rows.append(re.split(r" {2,}", line.strip(), maxsplit=ncols - 1))
        head = rows.pop(0) if end != ends[0] else [""] * ncols
        for row in [head, ["---"] * ncols, *rows]:
            out.append(indent + "| " + " | ".join(row + [""] * (ncols - len(row))) + " |")
        i = end + 1
    return "\n".join(out)


def _rewrite(text: str) -> str:
    lines = text.split("\n")
    out: list[str] = []
    section = ""
    fence: str | None = None  # the indentation of the open pycon fence, if any
    for i, line in enumerate(lines):
        underline = lines[i + 1] if i + 1 < len(lines) else ""
        if line.strip() and set(underline.strip()) == {"-"}:
            section = line.strip().lower()
        stripped = line.lstrip()
        if fence is not None and not stripped:
            out += [fence + "```", line]
            fence = None
            continue
        if fence is None and stripped.startswith(">>>") and section != "examples":
            fence = line[: len(line) - len(stripped)]
            out.append(fence + "```pycon")
        match = ITEM.match(line) if section in COMPACT_SECTIONS and fence is None else None
        if match and not TYPE.match(match.group(2)):
            out += [match.group(1), "    " + match.group(2)]
        else:
            out.append(line)
    if fence is not None:
        out.append(fence + "```")
    return "\n".join(out)


class HouseStyle(griffe.Extension):
    """Rewrite roles, prose doctests and compact items (see the module docstring)."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _rewrite(_tables(ROLE.sub(_role, obj.docstring.value)))
