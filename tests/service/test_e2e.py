"""End to end in a real browser: headless Chromium (Debian's ``chromium``, driven by
Playwright's Python API; no browser is downloaded) against a real ``deniable serve``
subprocess on loopback, SQLite in tmp_path, the demo survey.

* The respondent page: every question answered with the keyboard-reachable controls;
  every request body recorded: the only POSTs are the session (an empty body) and one
  ``{"question", "report"}`` per question with the report in the question's range (no
  other field: nothing named like an answer); what the server holds is what was sent; the
  browser's storage holds the token and the randomized reports only.
* A reload replays the same reports (the server answers ``duplicate``) and draws nothing
  new; the page says so.
* The interviewer page stores one paper respondent; simulated respondents arrive through
  the interviewer API; the dashboard (logged in with the admin token) shows the counts of
  every question, and its forest plot loads.
* No console error, no page error, no CSP violation on any page.

Screenshots go to tests/artifacts/ (git-ignored); with ``DENIABLE_DOC_SCREENSHOTS=1`` (or
when they are missing) the respondent page and the dashboard are also copied to docs/img/
for the README and docs/service.md.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from playwright.sync_api import ConsoleMessage, Page, Request, Response, sync_playwright

from deniable.survey import demo_survey

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts"
DOC_IMAGES = ROOT / "docs" / "img"
CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ADMIN = "e2e-admin-token-0123456789abcdef0123456789"
SURVEY = demo_survey()
SIMULATED = 198  # respondents sent through the interviewer API (a dashboard worth a picture)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _http(url: str, *, token: str | None = None, body: Any = None) -> tuple[int, Any]:
    headers = {"Accept": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request(url, data=data, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    """``deniable serve`` on a free loopback port; the base URL."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DENIABLE_")}
    env.pop("DATABASE_URL", None)
    env.update(DENIABLE_ADMIN_TOKEN=ADMIN, DENIABLE_DATA=str(tmp_path / "data"))
    out = (tmp_path / "server.out").open("w")
    err = (tmp_path / "server.err").open("w")
    cmd = [sys.executable, "-m", "deniable.cli", "serve", "--host", "127.0.0.1"]
    cmd += ["--port", str(port), "--db", f"sqlite:///{tmp_path / 'e2e.db'}"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=out, stderr=err)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(f"deniable serve exited {proc.returncode}:\n"
                            f"{(tmp_path / 'server.err').read_text()[-3000:]}")  # fmt: skip
            try:
                if _http(f"{base}/healthz")[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("deniable serve did not answer /healthz within 60 s")
            time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        out.close()
        err.close()


class Watch:
    """Every request of a page (method, path, body) and every console error."""

    def __init__(self, page: Page, base: str) -> None:
        self.base = base
        self.requests: list[tuple[str, str, str | None]] = []
        self.errors: list[str] = []
        self.failed: list[tuple[int, str]] = []
        page.on("request", self._request)
        page.on("response", self._response)
        page.on("console", self._console)
        page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))

    def _request(self, request: Request) -> None:
        path = request.url.removeprefix(self.base)
        self.requests.append((request.method, path, request.post_data))

    def _response(self, response: Response) -> None:
        if response.status >= 400:
            self.failed.append((response.status, response.url))

    def _console(self, msg: ConsoleMessage) -> None:
        if msg.type in ("error", "warning"):
            where = msg.location.get("url", "").removeprefix(self.base)
            self.errors.append(f"console {msg.type}: {msg.text} ({where})")

    def posts(self, suffix: str) -> list[Any]:
        posted = [b for m, p, b in self.requests if m == "POST" and p.endswith(suffix)]
        return [json.loads(b or "null") for b in posted]


def _screenshot(page: Page, name: str, *, full_page: bool = True) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=full_page)


def _to_docs(artifact: str, name: str) -> None:
    """Copy a screenshot to docs/img/ when asked to (or when it is missing there): the
    committed pictures change only on purpose, not on every run (the reports are random)."""
    target = DOC_IMAGES / f"{name}.png"
    if os.environ.get("DENIABLE_DOC_SCREENSHOTS") == "1" or not target.exists():
        DOC_IMAGES.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ARTIFACTS / f"{artifact}.png", target)


def _simulate(base: str) -> dict[str, list[int]]:
    """SIMULATED respondents through the interviewer API: reports randomized by deniable."""
    truths = {
        "happy": np.random.default_rng(1).random(SIMULATED) < 0.65,
        "harassment": np.random.default_rng(2).random(SIMULATED) < 0.2,
        "hours": np.random.default_rng(3).choice(4, SIMULATED, p=[0.15, 0.45, 0.3, 0.1]),
    }
    reports = {
        q.id: [int(r) for r in q.design.randomize(truths[q.id].astype(np.int64), rng=10 + i)]
        for i, q in enumerate(SURVEY.questions)
    }
    for i in range(SIMULATED):
        body = {"reports": [{"question": q, "report": reports[q][i]} for q in reports]}
        status, data = _http(f"{base}/api/surveys/{SURVEY.id}/interviewer", token=ADMIN, body=body)
        assert status == 201, data
    return reports


def test_respondent_interviewer_and_dashboard_in_chromium(server: str, tmp_path: Path) -> None:
    questions = {q.id: q for q in SURVEY.questions}
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path / "profile"),  # a fresh user-data dir
            executable_path=CHROMIUM,
            args=FLAGS,
            headless=True,
            viewport={"width": 900, "height": 900},
        )
        try:
            page = context.new_page()
            watch = Watch(page, server)

            # ---- the respondent page: answer every question
            page.goto(f"{server}/s/{SURVEY.id}")
            forms = page.locator("form.question")
            forms.nth(len(questions) - 1).wait_for()
            assert forms.count() == len(questions)
            assert page.title() == SURVEY.title
            _screenshot(page, "respondent")  # before answering: what a respondent sees
            _to_docs("respondent", "respondent")
            assert page.locator("svg.bar").count() == len(questions)
            # for a screen reader: each question a named group of named radios, a picture
            # with a text alternative, a live status line
            for i, q in enumerate(SURVEY.questions):
                group = page.get_by_role("group", name=q.text)
                assert group.count() == 1
                for label in q.labels:
                    assert group.get_by_role("radio", name=label, exact=True).count() == 1
                assert group.get_by_role("img").count() == 1
                assert page.locator(f"#q{i}-status").get_attribute("aria-live") == "polite"
            assert page.locator("#status[role=status][aria-live=polite]").count() == 1
            assert "3 times in 4" in page.locator("#q0-form").inner_text()
            for i, q in enumerate(SURVEY.questions):
                answer = (i + 1) % len(q.labels)
                page.locator(f"#q{i}-a{answer}").focus()
                page.keyboard.press("Space")  # the keyboard picks the answer
                assert page.locator(f"#q{i}-a{answer}").is_checked()
                page.locator(f"#q{i}-form button.send").click()
                status = page.locator(f"#q{i}-status.ok")
                status.wait_for()
                assert status.inner_text().startswith("Received."), status.inner_text()
                assert page.locator(f"#q{i}-form input:checked").count() == 0  # answer cleared
            _screenshot(page, "respondent-answered")

            assert watch.posts("/sessions") == [{}]
            sent = watch.posts("/reports")
            assert [b["question"] for b in sent] == list(questions)
            for body in sent:
                assert set(body) == {"question", "report"}, body  # nothing named like an answer
                assert type(body["report"]) is int
                assert 0 <= body["report"] < questions[body["question"]].spec.reports
            reports = {b["question"]: b["report"] for b in sent}
            assert [m for m, _, _ in watch.requests if m not in ("GET", "POST")] == []

            # the browser keeps the token and the reports, nothing else
            (origin,) = [o for o in context.storage_state()["origins"] if o["origin"] == server]
            stored = {i["name"]: i["value"] for i in origin["localStorage"]}
            token = stored.pop(f"deniable/token/{SURVEY.id}")
            kept = {k.rsplit("/", 1)[1]: json.loads(v) for k, v in stored.items()}
            assert set(stored) == {f"deniable/report/{SURVEY.id}/{token}/{q}" for q in questions}
            assert {q: v["report"] for q, v in kept.items()} == reports
            assert all(set(v) == {"report", "key"} for v in kept.values())
            # the server holds exactly what was sent
            code, view = _http(f"{server}/api/surveys/{SURVEY.id}", token=token)
            assert code == 200
            assert {q["id"]: q["answered"] for q in view["questions"]} == reports

            # ---- reload: the same reports again, the server says duplicate
            watch.requests.clear()
            page.reload()
            for i in range(len(questions)):
                status = page.locator(f"#q{i}-status.ok")
                status.wait_for()
                assert status.inner_text().startswith("Already received"), status.inner_text()
            assert watch.posts("/sessions") == []
            assert watch.posts("/reports") == sent

            # a phone-width screen: nothing wider than the screen
            page.set_viewport_size({"width": 360, "height": 740})
            wide = "() => document.documentElement.scrollWidth > window.innerWidth"
            assert page.evaluate(wide) is False
            _screenshot(page, "respondent-phone")

            # ---- the interviewer page: one paper respondent (questions with a protocol)
            interviewer = context.new_page()
            iwatch = Watch(interviewer, server)
            interviewer.goto(f"{server}/interviewer/{SURVEY.id}")
            interviewer.fill("#admin-token", ADMIN)
            interviewer.locator("#login-form button").click()
            interviewer.locator(".protocol").first.wait_for()
            selects = interviewer.locator("select[data-question]")
            assert selects.count() >= 1  # the two-coin question has a coin protocol
            paper = {}
            for j in range(selects.count()):
                qid = selects.nth(j).get_attribute("data-question")
                assert qid is not None
                selects.nth(j).select_option("1")
                paper[qid] = 1
            interviewer.locator("#entry button[type=submit]").click()
            interviewer.get_by_text("Stored").wait_for()
            assert iwatch.posts("/interviewer") == [
                {"reports": [{"question": q, "report": 1} for q in paper]}
            ]
            _screenshot(interviewer, "interviewer")

            # ---- simulated respondents, then the dashboard
            simulated = _simulate(server)
            dash = context.new_page()
            dwatch = Watch(dash, server)
            dash.goto(f"{server}/dashboard/{SURVEY.id}")
            dash.fill("#secret", ADMIN)
            dash.locator("form.login button").click()
            dash.locator(f"a[href='/dashboard/{SURVEY.id}']").click()  # the list of surveys
            forest = dash.locator("img[src*='forest.svg']")
            forest.wait_for()
            dash.wait_for_load_state("networkidle")
            assert forest.evaluate("img => img.complete && img.naturalWidth > 0")
            svg = [p for m, p, _ in dwatch.requests if "forest.svg" in p]
            assert svg, dwatch.requests
            expected_n = {q: 1 + SIMULATED + (1 if q in paper else 0) for q in questions}
            counts = {  # every report value's count: browser + paper + simulated
                q: np.bincount(
                    [reports[q], *simulated[q], *([paper[q]] if q in paper else [])],
                    minlength=questions[q].spec.reports,
                ).tolist()
                for q in questions
            }
            code, results = _http(f"{server}/api/surveys/{SURVEY.id}/results", token=ADMIN)
            assert code == 200
            rows = results["questions"] if isinstance(results, dict) else results
            assert {r["id"]: r["n"] for r in rows} == expected_n
            for qid, q in questions.items():
                if len(q.labels) == 2:  # the yes/no table: n, then the "yes" reports
                    row = dash.locator("tr", has=dash.locator("th", has_text=qid)).first
                    assert row.locator("td").nth(2).inner_text() == str(expected_n[qid])
                    assert row.locator("td").nth(3).inner_text() == str(counts[qid][1])
                else:  # one table per categorical question: n in the caption, counts per row
                    table = dash.locator("table", has=dash.locator("caption", has_text=f"{qid}:"))
                    assert f"n = {expected_n[qid]}" in table.locator("caption").inner_text()
                    for label, count in zip(q.labels, counts[qid], strict=True):
                        row = table.locator("tr", has=dash.locator("th", has_text=label)).first
                        assert row.locator("td").first.inner_text() == str(count)
            _screenshot(dash, "dashboard")
            dash.set_viewport_size({"width": 1200, "height": 1450})
            _screenshot(dash, "dashboard-top", full_page=False)  # the estimates and the plot
            _to_docs("dashboard-top", "dashboard")

            # the respondent and interviewer pages: not one error, not one failed request
            assert watch.errors + iwatch.errors == [], watch.errors + iwatch.errors
            assert watch.failed + iwatch.failed == []
            # the dashboard: only the login form's 401 before logging in (by design), and
            # the browser's own /favicon.ico guess (the dashboard pages name no icon)
            expected = (f"(/dashboard/{SURVEY.id})", "(/favicon.ico)")
            unexpected = [e for e in dwatch.errors if not e.endswith(expected)]
            assert unexpected == [], unexpected
            assert dwatch.failed == [(401, f"{server}/dashboard/{SURVEY.id}")]
        finally:
            context.close()
