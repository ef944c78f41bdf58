"""The pages rendered on the server escape by default (``deniable.service.pages``): a
survey's title, description, question texts and labels holding HTML come out as text
wherever they appear (the list of surveys, a survey's dashboard with every panel filled),
never as markup; and nothing in the templates or the page code can turn escaping off."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

import deniable.service.pages as pages_pkg
from deniable.service.app import create_app
from deniable.service.core.settings import Settings
from deniable.service.storage import ServiceStore
from deniable.survey import Survey, demo_survey

TOKEN = "admin-token-for-the-page-tests-0123456789abcdef"
SID = "workplace"


def _payload(marker: str) -> str:
    """HTML that would make an element (and run script) if it were not escaped."""
    return f"<i data-inj=\"{marker}\" onclick='x()'>{marker}</i><script>alert(1)</script>&amp;"


class Parsed(HTMLParser):
    """Every element's attributes and all the text of a page (entities decoded)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.attrs: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.attrs.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _survey() -> tuple[Survey, dict[str, str]]:
    """The demo survey with HTML in every text a person wrote, and the payloads a
    survey's dashboard shows: every one but the "no" label of a yes/no question (its
    estimate is the share of the other answer)."""
    d = demo_survey().to_dict()
    wanted: dict[str, str] = {}
    d["title"] = wanted["title"] = _payload("title")
    d["description"] = wanted["description"] = _payload("description")
    for q in d["questions"]:
        q["text"] = wanted[f"text-{q['id']}"] = _payload(f"text-{q['id']}")
        q["labels"] = [_payload(f"label-{q['id']}-{j}") for j in range(len(q["labels"]))]
        binary = len(q["labels"]) == 2
        wanted.update(
            (f"label-{q['id']}-{j}", x) for j, x in enumerate(q["labels"]) if j or not binary
        )
    return Survey.from_dict(d), wanted


@pytest.fixture
def client(tmp_path: Path) -> Any:
    store = ServiceStore(f"sqlite:///{tmp_path / 'pages.db'}")
    store.migrate()
    survey, _ = _survey()
    store.load_survey(survey)
    items = []
    for i in range(12):  # every question answered: every table and panel has rows
        _, rid = store.open_session(SID, None)
        items += [(rid, "happy", i % 2), (rid, "harassment", (i // 2) % 2), (rid, "hours", i % 4)]
    assert all(r.stored for r in store.submit_batch(SID, items))
    app = create_app(Settings(database_url=str(store.engine.url), admin_token=TOKEN), store)
    with TestClient(app, headers={"Authorization": f"Bearer {TOKEN}"}) as c:
        yield c
    store.close()


def _parsed(client: TestClient, path: str) -> Parsed:
    r = client.get(path)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/html")
    page = Parsed()
    page.feed(r.text)
    page.close()
    return page


def test_survey_text_is_escaped_everywhere_it_appears(client: TestClient) -> None:
    _, wanted = _survey()
    paths = ["/dashboard", f"/dashboard/{SID}", f"/dashboard/{SID}?level=0.9&bucket=hour&rate=hour"]
    text: dict[str, str] = {}
    for path in paths:
        page = _parsed(client, path)
        for tag, attrs in page.attrs:  # no element, attribute or script of the payloads
            assert "data-inj" not in attrs and "onclick" not in attrs, (path, tag, attrs)
        scripts = [a for t, a in page.attrs if t == "script"]
        assert all(a.get("src") == "/static/dashboard.js" for a in scripts), (path, scripts)
        text[path] = "".join(page.text)
    # each payload is shown, as the text it is
    assert wanted["title"] in text["/dashboard"]
    for path in paths[1:]:
        for name, payload in wanted.items():
            assert payload in text[path], (path, name)


def test_nothing_turns_escaping_off() -> None:
    """Autoescaping is on for every template, and no template or page module marks a
    string as safe HTML (``|safe``, ``autoescape false``, ``Markup``)."""
    from deniable.service.pages._env import environment

    env = environment()
    assert env.autoescape is True
    assert env.from_string("{{ x }}").render(x="<a href='x'>&") == (
        "&lt;a href=&#39;x&#39;&gt;&amp;"
    )
    root = Path(pages_pkg.__file__).parent
    templates = sorted((root / "templates").glob("*.html"))
    assert templates
    for path in [*templates, *root.glob("*.py")]:
        source = path.read_text()
        assert not re.search(r"\|\s*safe\b|autoescape\s+false|Markup|markupsafe", source), path
