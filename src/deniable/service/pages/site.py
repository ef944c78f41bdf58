"""The service's own pages rendered on the server: ``/docs``, every operation of the OpenAPI
schema as plain HTML (no script: the strict CSP holds there too), and the head that the
static pages (the landing, respondent and interviewer pages) share."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from deniable.service.pages._env import render

__all__ = ["docs_page", "with_shared_head"]


def docs_page(schema: Mapping[str, Any], title: str, version: str) -> str:
    """``/docs``: every operation of ``schema``, its summary, description and statuses."""
    operations = [
        {"method": method.upper(), "path": path, "summary": op.get("summary", ""),
         "description": op.get("description", ""),
         "codes": ", ".join(sorted(op.get("responses", {})))}
        for path, ops in schema.get("paths", {}).items()
        for method, op in ops.items()
    ]  # fmt: skip
    return render("docs.html", title=title, version=version, operations=operations)


def with_shared_head(page: str, preloads: Sequence[str] = ()) -> str:
    """The static page ``page`` (an HTML document whose ``<head>`` holds only what is its
    own: its title, its module script) with the head every such page shares inserted at the
    top of its ``<head>``: the charset, viewport and referrer policy, the icon and the style
    sheet, and a ``modulepreload`` link for each module of ``preloads`` (names under
    ``/static/``), so that the browser fetches a module graph at once, not import by import.

    >>> print(with_shared_head("<html>\\n<head>\\n  <title>T</title>\\n</head>", ["a.js"]))
    ... # doctest: +ELLIPSIS
    <html>
    <head>
      <meta charset="utf-8">
    ...
      <link rel="stylesheet" href="/static/style.css">
      <link rel="modulepreload" href="/static/a.js">
      <title>T</title>
    </head>
    """
    head = "<head>\n"
    at = page.find(head)
    if at < 0:
        raise ValueError("the page has no <head> line")
    at += len(head)
    return page[:at] + render("_static_head.html", preloads=list(preloads)) + page[at:]
