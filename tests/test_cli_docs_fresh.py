"""The generated CLI pages say what their templates say.

``docs/cli.md`` and ``docs/privacy-cli.md`` are written by ``scripts/gen_cli_docs.py`` from
``docs/templates/NAME.md.in``: every template line is copied, and every ``@@ deniable ...``
line becomes a console block holding the command and its output.  An edit made only to a
generated page is lost at the next regeneration (it happened once to a CMS sentence), and a
template edited without regenerating leaves the page behind.  Regenerating takes minutes
(it runs every example), so this test checks what is cheap and catches both: each page is
its template with each ``@@`` line replaced by a console block that shows that very command.
The commands' outputs are not compared here (the examples run in the regeneration).
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = sorted((ROOT / "docs/templates").glob("*.md.in"))


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_cli_docs", ROOT / "scripts/gen_cli_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen = _generator()


def page_pattern(template: str) -> re.Pattern[str]:
    """The page ``template`` generates, as a pattern: its lines as they are, each ``@@`` line
    a console block whose first line is the command as ``gen_cli_docs.shown`` displays it and
    whose output is anything up to the block's closing fence."""
    parts = []
    for line in template.splitlines(keepends=True):
        if line.startswith("@@ "):
            shown = re.escape(gen.shown(line[3:].strip()))
            parts.append(rf"```console\n{shown}\n(?:.*?\n)??```\n")
        else:
            parts.append(re.escape(line))
    return re.compile("".join(parts), re.DOTALL)


def test_there_are_templates() -> None:
    assert {t.name for t in TEMPLATES} >= {"cli.md.in", "privacy-cli.md.in"}


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda p: p.name)
def test_page_is_its_template_with_the_examples_run(template: Path) -> None:
    page = ROOT / "docs" / template.name.removesuffix(".in")
    text = page.read_text()
    if page_pattern(template.read_text()).fullmatch(text) is None:
        pytest.fail(
            f"docs/{page.name} is not what docs/templates/{template.name} generates: edit the "
            "template, then run `.venv/bin/python scripts/gen_cli_docs.py`."
        )


def test_a_hand_edit_of_the_page_is_caught() -> None:
    template = "Intro.\n@@ deniable --version\nMiddle text.\n"
    block = f"```console\n{gen.shown('deniable --version')}\ndeniable 0.1.0\n```\n"
    pattern = page_pattern(template)
    assert pattern.fullmatch(f"Intro.\n{block}Middle text.\n")
    assert pattern.fullmatch(f"Intro.\n{block}Middle text, edited by hand.\n") is None
    assert pattern.fullmatch(f"Intro, edited.\n{block}Middle text.\n") is None
    # a command changed in the template but not regenerated
    other = block.replace("--version", "--help")
    assert pattern.fullmatch(f"Intro.\n{other}Middle text.\n") is None


def test_an_empty_output_block_matches() -> None:
    pattern = page_pattern("@@ deniable x\n")
    assert pattern.fullmatch(f"```console\n{gen.shown('deniable x')}\n```\n")
