"""The service's own page rendered on the server: ``/docs``, every operation of the OpenAPI
schema as plain HTML (no script: the strict CSP holds there too)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deniable.service.pages._env import render

__all__ = ["docs_page"]


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
