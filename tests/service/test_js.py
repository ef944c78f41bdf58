"""The browser code (the ES modules ``deniable/service/static/*.js``) under Node.

* ``node --test tests/js/`` runs the Node suite (every case of tests/vectors/randomizers.json
  bit for bit, the output distribution against the channel, malformed specs, the session
  logic against a fake server, the respondent and interviewer pages in a DOM (jsdom, the
  dev dependency of package.json: ``npm ci`` at the repository root, which scripts/test
  runs), the modules' layers); this test fails with node's output when it fails, so the
  suite's one runner reports it.
* Beyond the committed vectors: Python builds vectors for every example design of
  tests/_cases.py (both groups of designs) and for the demo survey's questions, with
  deniable's own randomizers, and the JavaScript randomizer must reproduce every report.
* The pages load one module script, ``/static/main.js``, and preload every module it
  imports; the service serves each as JavaScript under its Content-Security-Policy.
"""

from __future__ import annotations

import importlib.util
import json
import math
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from _apihelp import make_client

from deniable.designs._vectors import _cases
from deniable.service.storage import ServiceStore
from deniable.survey import demo_survey

ROOT = Path(__file__).resolve().parents[2]
JS_TESTS = ROOT / "tests" / "js"
STATIC = ROOT / "src" / "deniable" / "service" / "static"


def _examples() -> object:
    # tests/_cases.py by path: tests/ need not be on sys.path when tests/service runs alone
    spec = importlib.util.spec_from_file_location("_cases_by_path", ROOT / "tests" / "_cases.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node (>= 18) is not installed: scripts/test installs Debian's nodejs.")
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True)
    match = re.match(r"v(\d+)\.", version.stdout)
    if not match or int(match.group(1)) < 18:
        pytest.fail(f"node >= 18 is needed for `node --test`, found {version.stdout.strip()}.")
    return node


def test_node_suite() -> None:
    if not (ROOT / "node_modules" / "jsdom" / "package.json").is_file():
        pytest.fail(
            "the node tests need their dev dependencies (jsdom): run `npm ci` in "
            f"{ROOT} (scripts/test does it when node_modules is missing).",
            pytrace=False,
        )
    result = subprocess.run(
        [_node(), "--test", "tests/js/"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if result.returncode != 0:
        failed = "\n".join(line for line in result.stdout.splitlines() if line.startswith("not ok"))
        pytest.fail(
            f"node --test tests/js/ failed (exit {result.returncode}):\n{failed}\n\n"
            f"--- stdout ---\n{result.stdout[-20000:]}\n--- stderr ---\n{result.stderr[-5000:]}",
            pytrace=False,
        )
    assert re.search(r"^# fail 0$", result.stdout, re.M), result.stdout[-2000:]
    assert re.search(r"^# pass [1-9]\d*$", result.stdout, re.M), result.stdout[-2000:]


def test_js_matches_python_beyond_the_vectors_file(tmp_path: Path) -> None:
    examples = _examples()
    designs = [(f"example-{name}", make()) for name, make in examples.DESIGN_CASES]  # type: ignore[attr-defined]
    designs += [
        (f"two-group-{name}-{i}", make())
        for name, makers in examples.TWO_GROUP_EXAMPLES.items()  # type: ignore[attr-defined]
        for i, make in enumerate(makers)
    ]
    designs += [(f"demo-{q.id}", q.design) for q in demo_survey().questions]
    cases = [case for case_id, design in designs for case in _cases(case_id, design)]
    path = tmp_path / "vectors.json"
    path.write_text(json.dumps({"schema": "deniable.vectors/1", "cases": cases}))
    result = subprocess.run(
        [_node(), str(JS_TESTS / "_replay.mjs"), str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["errors"] == []
    assert out["mismatches"] == []
    assert out["cases"] == len(cases)
    assert out["reports"] == sum(len(c["reports"]) for c in cases)
    # every demo question and both two-group forms were replayed
    ids = {c["id"] for c in cases}
    assert {f"demo-{q.id}" for q in demo_survey().questions} <= ids
    assert any(i.endswith("-group-given") for i in ids)


class _Page(HTMLParser):
    """Collects what a strict CSP (script-src 'self'; style-src 'self') would block."""

    def __init__(self) -> None:
        super().__init__()
        self.problems: list[str] = []
        self.scripts: list[str] = []
        self.styles: list[str] = []
        self.preloads: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = {k for k, _ in attrs}
        if "style" in names:
            self.problems.append(f"<{tag} style=...>")
        self.problems += [f"<{tag} {k}=...>" for k in names if k.startswith("on")]
        if tag == "style":
            self.problems.append("<style> element")
        if tag == "script":
            src = dict(attrs).get("src")
            if not src:
                self.problems.append("<script> without src")
            elif dict(attrs).get("type") != "module":
                self.problems.append(f"<script src={src}> is not a module")
            else:
                self.scripts.append(src)
        if tag == "link" and dict(attrs).get("rel") == "stylesheet":
            self.styles.append(str(dict(attrs).get("href")))
        if tag == "link" and dict(attrs).get("rel") == "modulepreload":
            self.preloads.append(str(dict(attrs).get("href")))
        href = dict(attrs).get("href") or dict(attrs).get("src") or ""
        if href.startswith(("http:", "https:", "//", "javascript:")):
            self.problems.append(f"<{tag}> loads {href}")


_IMPORT = re.compile(r'^(?:import|export)\s[^;]*?\sfrom\s+"\./([a-z]+\.js)";', re.M)


def _module_closure(entry: str) -> list[str]:
    """Every module that ``entry`` imports, directly or not (itself included)."""
    seen: list[str] = []
    todo = [entry]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.append(name)
            todo += _IMPORT.findall((STATIC / name).read_text(encoding="utf-8"))
    return sorted(seen)


def _modules() -> list[Path]:
    return sorted(p for p in STATIC.glob("*.js"))


_PAGES = {"respondent.html": "/s/workplace", "interviewer.html": "/interviewer/workplace"}


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
@pytest.mark.parametrize("page", [*_PAGES, "index.html"])
def test_pages_have_no_inline_script_or_style(store: ServiceStore, page: str) -> None:
    served = make_client(store).get(_PAGES.get(page, "/"))
    assert served.status_code == 200
    assert served.headers["content-type"] == "text/html; charset=utf-8"
    parser = _Page()
    parser.feed(served.text)
    assert parser.problems == []
    assert parser.styles == ["/static/style.css"]
    # the head the pages share is the server's (pages.with_shared_head), not the file's
    file = (STATIC / page).read_text(encoding="utf-8")
    for line in ('<meta charset="utf-8">', '<meta name="referrer" content="no-referrer">',
                 '<link rel="icon" href="/static/icon.svg" type="image/svg+xml">'):  # fmt: skip
        assert served.text.count(line) == 1 and line not in file
    head = served.text[: served.text.index("</head>")]
    assert head.index("<meta charset") < head.index("<title>")  # within the first bytes
    body = re.search(r"<body[^>]*data-page=\"(\w+)\"", file)
    assert body is not None
    if page == "index.html":
        assert body.group(1) == "landing" and parser.scripts == parser.preloads == []
        return
    assert f"{body.group(1)}.html" == page
    assert parser.scripts == ["/static/main.js"]
    # every module main.js loads is preloaded (no waterfall of imports), and nothing else
    closure = _module_closure("main.js")
    assert {"main.js", "randomizer.js", "spec.js", "respondent.js"} <= set(closure)
    assert sorted(parser.preloads) == [f"/static/{m}" for m in closure if m != "main.js"]
    assert len(set(parser.preloads)) == len(parser.preloads)


def test_a_module_closure_follows_imports_and_exports(tmp_path: Path) -> None:
    from deniable.service.routes.deps import module_closure

    (tmp_path / "a.js").write_text('import { b } from "./b.js";\nexport { c } from "./c.js";\n')
    (tmp_path / "b.js").write_text('import { a } from "./a.js";\n// from "./x.js";\n')
    (tmp_path / "c.js").write_text("export const c = 1;\n")
    assert module_closure("a.js", tmp_path) == ["b.js", "c.js"]  # a cycle ends; not a.js
    assert module_closure("c.js", tmp_path) == []


def test_the_shared_head_needs_a_head_line() -> None:
    from deniable.service.pages import with_shared_head

    with pytest.raises(ValueError, match="no <head> line"):
        with_shared_head("<html><body></body></html>")
    assert "modulepreload" not in with_shared_head("<head>\n</head>")


def test_modules_build_the_dom_without_inline_styles_or_eval() -> None:
    modules = _modules()
    assert {p.name for p in modules} >= {"deniable.js", "main.js", "randomizer.js", "spec.js"}
    forbidden = [".style.", '"style"', "innerHTML", "outerHTML", "insertAdjacentHTML"]
    forbidden += ["eval(", "new Function", "document.write", "console.log", "import("]
    forbidden += ["Math.random"]
    for path in modules:
        source = path.read_text(encoding="utf-8")
        for text in forbidden:
            assert text not in source, (path.name, text)
        # no address of another site (the SVG namespace is a name, never fetched)
        other = re.findall(r"(?:https?:)?//[a-z0-9.-]+\.[a-z]+[^\s\"'`]*", source)
        assert [u for u in other if u != "http://www.w3.org/2000/svg"] == [], path.name
    # the files the pages use are there (package data: service/static/*)
    mine = {"icon.svg", "interviewer.html", "respondent.html", "style.css"}
    mine |= set(_module_closure("main.js")) | set(_module_closure("deniable.js"))
    assert mine <= {p.name for p in STATIC.iterdir()}


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_modules_are_served_as_javascript_under_the_csp(store: ServiceStore) -> None:
    client = make_client(store)
    csp = client.get("/s/workplace").headers["content-security-policy"]
    directives = dict(d.strip().split(" ", 1) for d in csp.split(";"))
    assert directives["script-src"] == "'self'"  # module scripts and their imports: same origin
    for path in _modules():
        r = client.get(f"/static/{path.name}")
        assert r.status_code == 200, path.name
        media = r.headers["content-type"].split(";")[0].strip()
        assert media in {"text/javascript", "application/javascript"}, (path.name, media)
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.content == path.read_bytes()


def test_static_modules_are_revalidated_not_cached_blind(tmp_path: Path) -> None:
    """The page is a graph of ES modules under unversioned URLs: a browser that kept one for a
    day after an upgrade could run an old module beside new ones.  Static files are therefore
    served ``no-cache`` (reused only after revalidation by their ETag), and a revalidation
    with that ETag is answered 304."""
    from fastapi.testclient import TestClient

    from deniable.service.app import create_app
    from deniable.service.settings import Settings
    from deniable.service.storage import ServiceStore

    store = ServiceStore(f"sqlite:///{tmp_path}/s.db")
    store.migrate()
    app = create_app(Settings(database_url=str(store.engine.url)), store)
    with TestClient(app) as client:
        first = client.get("/static/main.js")
        assert first.status_code == 200
        assert first.headers["cache-control"] == "no-cache"
        again = client.get("/static/main.js", headers={"if-none-match": first.headers["etag"]})
        assert again.status_code == 304
    store.close()


def _stream_oracles() -> list[tuple[str, Any, list[Any]]]:
    from deniable.oracles import (
        CMS,
        GRR,
        HCMS,
        LOLOHA,
        LOSUE,
        OUE,
        PEM,
        HaarHRR,
        HadamardResponse,
        HierarchicalHistogram,
        LinearOLH,
        Rappor,
        SquareWave,
        TreeHist,
    )

    words = ["apple", "banana", "", "z\u00fcrich", "apple"]
    return [
        ("oue", OUE.from_epsilon(1.0, k=13), [0, 5, 12]),
        ("linear", LinearOLH(k=40, g=2048, p_truthful=0.75), [0, 39, 7]),
        ("hadamard", HadamardResponse.from_epsilon(1.0, k=16), [15, 0]),
        ("losue", LOSUE.from_epsilon(3.0, 5, eps_1=1.0), [1, 1, 4]),
        ("loloha", LOLOHA.from_epsilon(2.0, 20, eps_1=1.0, g=4), [19, 0, 19]),
        ("rappor", Rappor(m=72, h=3, cohorts=5, f=0.3, p=0.1, q=0.8), words),
        ("grr", GRR.from_epsilon(1.0, k=300), [0, 299, 7]),  # a question spec
        (
            "cms",
            CMS(k=6, m=20, epsilon=3.0, salt=77, spec_version=1),
            ["apple", "z\u00fcrich", "x" * 40],
        ),
        ("cms2", CMS(k=6, m=21, epsilon=3.0, salt=78), ["apple", "pear", "x" * 40]),  # spec 2
        ("hcms", HCMS(k=5, m=32, epsilon=2.0, salt=5), ["apple", "banana", "\U0001f600"]),
        ("pem", PEM(epsilon=2.0, max_bytes=9, start_bits=5, step_bits=8), ["apple", "\u2713"]),
        ("treehist", TreeHist(epsilon=3.0, max_bytes=2), ["hi", "\u00fc", "z"]),
        ("hh", HierarchicalHistogram(27, 3, 2.0, oracle="olh"), [0, 26, 13, 5]),
        ("haar", HaarHRR(32, 1.0), [0, 31, 16]),
        ("sw", SquareWave(2.0, lower=-1.0, upper=3.0, clip=True), [-1.0, 3.0, 0.7, 9.0]),
    ]


def _new_stream(client: Any, name: str, oracle: Any) -> str:
    """Store a stream of ``oracle`` (RAPPOR and the sketches with candidates); a device
    token of it."""
    from _apihelp import admin_headers

    from deniable.designs import spec_of
    from deniable.oracles import (
        GRR,
        PEM,
        CountMeanSketch,
        Rappor,
        TreeHist,
        cms_spec,
        heavy_spec,
        oracle_spec,
        range_spec,
        rappor_spec,
        square_wave_spec,
    )

    strings = isinstance(oracle, Rappor | CountMeanSketch)
    if isinstance(oracle, Rappor):
        spec = rappor_spec(oracle)
    elif isinstance(oracle, CountMeanSketch):
        spec = cms_spec(oracle)
    elif isinstance(oracle, PEM | TreeHist):  # strings nobody listed: no candidates
        spec = heavy_spec(oracle)
    elif oracle.name in ("hierarchical-histogram", "haar-hrr"):  # ordered values
        spec = range_spec(oracle)
    elif oracle.name == "square-wave":
        spec = square_wave_spec(oracle)
    else:  # k-ary randomized response has a question spec
        spec = spec_of(oracle).to_dict() if isinstance(oracle, GRR) else oracle_spec(oracle)
    body: dict[str, Any] = {
        "id": name,
        "oracle": spec,
        "period": "day",
        "window": {"kind": "day", "epsilon": 1000.0},
    }
    if strings:
        body["candidates"] = ["apple", "banana", "pear"]
    answers = {
        "pem": {"top_k": 4, "alpha": None},
        "hh": {"quantiles": [0.5], "ranges": [[0, 3]]},
        "sw": {"ranges": [[0.0, 1.5]]},
    }  # the server's: the JS device reads, ignores them
    if name in answers:
        body["answers"] = answers[name]
    r = client.put(f"/api/streams/{name}", json=body, headers=admin_headers())
    assert r.status_code == 201, r.text
    r = client.post(f"/api/streams/{name}/devices", headers=admin_headers())
    return str(r.json()["devices"][0]["token"])


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
@pytest.mark.parametrize("case", range(15))
def test_the_service_accepts_a_batch_the_js_stream_client_builds(
    store: ServiceStore, tmp_path: Path, case: int
) -> None:
    """The JS device of stream.js reads the spec ``GET /streams/{id}`` serves and builds a
    binary batch; the server decodes, charges and stores every report of it (201), and the
    same batch posted to a stream of another oracle is refused (422, the key digest)."""
    from _apihelp import bearer

    from deniable.distributed import decode_batch

    oracles = _stream_oracles()
    name, oracle, values = oracles[case]
    client = make_client(store, streams_dir=tmp_path / "streams")
    token = _new_stream(client, name, oracle)
    spec_path, values_path = tmp_path / "spec.json", tmp_path / "values.json"
    spec_path.write_text(client.get(f"/streams/{name}").text, encoding="utf-8")
    values_path.write_text(json.dumps(values), encoding="utf-8")
    result = subprocess.run(
        [_node(), str(JS_TESTS / "_stream_device.mjs"), str(spec_path), str(values_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    batch = bytes.fromhex(result.stdout)
    assert len(decode_batch(oracle, batch)) == len(values)
    binary = {"Content-Type": "application/octet-stream"}
    r = client.post(f"/streams/{name}/batches", content=batch, headers={**binary, **bearer(token)})
    assert r.status_code == 201, r.text
    assert r.json()["reports"] == len(values)
    if name == "cms2":  # spec 2 charges its realized epsilon, 2 ln((2**16 - t) / t) a report
        t = oracle.flip_threshold
        assert t == math.ceil(2**16 / (1 + math.exp(1.5)))
        realized = 2 * math.log((2**16 - t) / t)
        assert r.json()["epsilon"] == pytest.approx(len(values) * realized, rel=1e-9)
        assert r.json()["epsilon"] < len(values) * 3.0
    other_name, other, _ = oracles[(case + 1) % len(oracles)]
    other_token = _new_stream(client, other_name, other)
    r = client.post(
        f"/streams/{other_name}/batches", content=batch, headers={**binary, **bearer(other_token)}
    )
    assert r.status_code == 422 and "another oracle" in r.text, r.text


def test_js_checks_categorical_specs_up_to_the_largest_k_as_python_states_them(
    tmp_path: Path,
) -> None:
    # spec.js once built the k x k channel to find a keep-or-forced spec's epsilon: a
    # categorical question (or a stream's k-ary RR) of k = 65,537 ran the page out of memory.
    # Its epsilon is now ln(1 + keep / ((1 - keep) q)) at the forcing's smallest share: it must
    # agree with Python's implemented epsilon for uniform forcing (power of two or not, up to
    # k = 2**24) and for a forcing given by cuts; one past 2**24 is refused by name.
    from deniable.designs import Categorical, QuestionSpec

    designs = [Categorical(k, p_truthful=p) for k in (65_537, 2**20 + 3, 2**24) for p in (0.3, 0.9)]
    designs += [Categorical(6, p_truthful=0.5, forced=(0.5, 0.2, 0.1, 0.1, 0.05, 0.05))]
    specs = [QuestionSpec(d).to_dict() for d in designs]
    big = dict(specs[0], truths=2**24 + 1, reports=2**24 + 1)
    path = tmp_path / "specs.json"
    path.write_text(json.dumps([*specs, big]))
    script = (
        'import { readFileSync } from "node:fs";\n'
        f'import {{ channelEpsilon }} from "{(STATIC / "spec.js").as_uri()}";\n'
        "const out = [];\n"
        "for (const s of JSON.parse(readFileSync(process.argv[1], 'utf8'))) {\n"
        "  try { out.push(channelEpsilon(s)); } catch (e) { out.push(String(e.message)); }\n"
        "}\n"
        "process.stdout.write(JSON.stringify(out));\n"
    )
    result = subprocess.run(
        [_node(), "--input-type=module", "-e", script, str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    got = json.loads(result.stdout)
    for spec, eps in zip(specs, got[:-1], strict=True):
        assert isinstance(eps, float), eps
        assert eps == pytest.approx(spec["epsilon"], rel=1e-12, abs=0.0), spec["key"][:60]
    assert got[-1] == (
        "`truths` must be at most 16777216 (2**24) for keep-or-forced/1, got 16777217."
    )
