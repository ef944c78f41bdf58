// The interviewer page (interviewer.html and interviewer.js) in a DOM (jsdom), against a
// fake server of the protocols API: signing in and out, the protocols shown, the reports
// of one paper respondent posted, and the errors it shows.
import assert from "node:assert/strict";
import { test } from "node:test";
import { runInterviewer } from "../../src/deniable/service/static/interviewer.js";
import { danglingReferences, pageWindow, tabOrder, until } from "./_dom.mjs";
import { FakeStorage } from "./_fakes.mjs";

const ADMIN = "admin-secret";
// GET /api/surveys/<survey>/protocols as the service answers it: a protocol when coins or
// dice give the design exactly, else one step and protocol null
const PROTOCOLS = [
  { question: "happy", text: "Are you happy at work?", steps: ["Flip a coin.", "Enter the answer the respondent says: \"yes\" as report 1, \"no\" as report 0."], protocol: { name: "two-coin" } },
  { question: "hours", text: "Hours?", steps: ["No coin or dice protocol gives exactly this question's design: do not ask it on paper."], protocol: null },
];

function fakeServer({ protocols = PROTOCOLS, refuse = null } = {}) {
  const requests = [];
  const reply = (status, data) => ({ ok: status < 300, status, json: async () => data });
  async function fetch(url, init = {}) {
    requests.push({ url, method: init.method, auth: init.headers?.Authorization ?? null, raw: init.body });
    if (init.headers?.Authorization !== `Bearer ${ADMIN}`) return reply(401, { error: "`Authorization`: the admin token is needed" });
    if (url === "/api/surveys/demo/protocols" && init.method === "GET") return reply(200, protocols);
    if (url === "/api/surveys/demo/interviewer" && init.method === "POST") {
      return refuse ? reply(refuse.status, { error: refuse.error }) : reply(201, { respondent: 7, results: [] });
    }
    return reply(404, { error: "not found" });
  }
  return { fetch, requests };
}

async function openPage({ server = fakeServer(), storage = new FakeStorage(), url = "http://survey.test/interviewer/demo" } = {}) {
  const win = pageWindow("interviewer.html", url);
  await runInterviewer(win, { fetch: server.fetch, storage });
  return { win, doc: win.document, server, storage };
}

const statusText = (doc) => doc.getElementById("status").textContent;

async function signIn(doc, token = ADMIN) {
  const before = statusText(doc);
  doc.getElementById("admin-token").value = token;
  doc.querySelector("#login-form button[type=submit]").click();
  await until(() => statusText(doc) !== before, "the protocols loaded or refused");
}

test("without a token: the sign-in form only", async () => {
  const { doc, server } = await openPage();
  assert.equal(doc.getElementById("login").hidden, false);
  assert.equal(doc.getElementById("work").hidden, true);
  assert.equal(statusText(doc), "Enter the admin token to begin.");
  assert.equal(server.requests.length, 0);
  assert.deepEqual(tabOrder(doc).map((n) => n.id || n.tagName), ["admin-token", "BUTTON"]);
});

test("signing in: the token kept in the tab's storage, the protocols shown, one question said as one", async () => {
  const storage = new FakeStorage();
  const { doc, server } = await openPage({ storage });
  await signIn(doc);
  assert.deepEqual(storage.writes, [["deniable/admin", ADMIN]]);
  assert.equal(doc.getElementById("admin-token").value, "", "the token leaves the form");
  assert.equal(server.requests[0].auth, `Bearer ${ADMIN}`);
  assert.equal(doc.getElementById("login").hidden, true);
  assert.equal(doc.getElementById("work").hidden, false);
  assert.equal(statusText(doc), "2 questions. Read each protocol to the respondent, then enter the reports they produced.");
  const sections = doc.querySelectorAll("#protocols section.protocol");
  assert.equal(sections.length, 2);
  assert.equal(sections[0].querySelector("h3").textContent, "Are you happy at work?");
  assert.deepEqual([...sections[0].querySelectorAll("ol.steps li")].map((li) => li.textContent), PROTOCOLS[0].steps);
  const select = sections[0].querySelector("select[data-question=happy]");
  assert.deepEqual([...select.options].map((o) => [o.value, o.textContent]), [["", "(not asked)"], ["0", "report 0"], ["1", "report 1"]]);
  assert.equal(select.labels[0].textContent, "The result the respondent gave");
  // no physical protocol: listed, not asked
  assert.ok(sections[1].classList.contains("off"));
  assert.equal(sections[1].querySelectorAll("select, input").length, 0);
  assert.deepEqual(danglingReferences(doc), []);
});

test("one protocol is said as one question", async () => {
  const { doc } = await openPage({ server: fakeServer({ protocols: PROTOCOLS.slice(0, 1) }) });
  await signIn(doc);
  assert.equal(statusText(doc), "1 question. Read each protocol to the respondent, then enter the reports they produced.");
});

test("storing a respondent: only the questions asked, {question, report} each; the form is cleared", async () => {
  const { doc, server } = await openPage();
  await signIn(doc);
  const select = doc.querySelector("select[data-question=happy]");
  select.value = "1";
  doc.querySelector("#entry button[type=submit]").click();
  await until(() => /^Stored/.test(statusText(doc)), "stored");
  assert.equal(statusText(doc), "Stored 1 report for a new respondent.");
  const post = server.requests.at(-1);
  assert.equal(post.url, "/api/surveys/demo/interviewer");
  assert.equal(post.raw, JSON.stringify({ reports: [{ question: "happy", report: 1 }] }));
  assert.equal(select.value, "", "the form is ready for the next respondent");
});

test("nothing entered: nothing sent", async () => {
  const { doc, server } = await openPage();
  await signIn(doc);
  const before = server.requests.length;
  doc.getElementById("entry").requestSubmit();
  await until(() => statusText(doc) === "Enter at least one report.", "refused");
  assert.equal(doc.getElementById("status").className, "status error");
  assert.equal(server.requests.length, before);
});

test("a refused submission says why and keeps the entries", async () => {
  const { doc } = await openPage({ server: fakeServer({ refuse: { status: 409, error: "survey `demo` is closed: it takes no reports" } }) });
  await signIn(doc);
  doc.querySelector("select[data-question=happy]").value = "0";
  doc.getElementById("entry").requestSubmit();
  await until(() => /^Not stored/.test(statusText(doc)), "refused");
  assert.equal(statusText(doc), "Not stored: survey `demo` is closed: it takes no reports");
  assert.equal(doc.querySelector("select[data-question=happy]").value, "0");
});

test("a wrong token: forgotten, the sign-in form again; signing out forgets the token", async () => {
  const storage = new FakeStorage();
  const { doc } = await openPage({ storage });
  await signIn(doc, "wrong");
  assert.equal(statusText(doc), "Could not load the protocols: `Authorization`: the admin token is needed");
  assert.equal(storage.getItem("deniable/admin"), null);
  assert.equal(doc.getElementById("login").hidden, false);
  assert.equal(doc.getElementById("work").hidden, true);
  await signIn(doc);
  assert.equal(doc.getElementById("work").hidden, false);
  doc.getElementById("logout").click();
  assert.equal(storage.getItem("deniable/admin"), null);
  assert.equal(doc.getElementById("login").hidden, false);
  assert.equal(statusText(doc), "Signed out.");
});

test("the keyboard's place: the first report after signing in, the token field after a refusal or signing out", async () => {
  const { doc } = await openPage();
  const button = doc.querySelector("#login-form button[type=submit]");
  button.focus();
  await signIn(doc, "wrong");
  assert.equal(doc.activeElement, doc.getElementById("admin-token"));
  button.focus();
  await signIn(doc);
  assert.equal(doc.activeElement, doc.querySelector("select[data-question=happy]"));
  doc.getElementById("logout").focus();
  doc.getElementById("logout").click();
  assert.equal(doc.activeElement, doc.getElementById("admin-token"));
});

test("a token kept in the tab: the protocols at once", async () => {
  const storage = new FakeStorage();
  storage.setItem("deniable/admin", ADMIN);
  const { doc } = await openPage({ storage });
  assert.equal(doc.getElementById("work").hidden, false);
  assert.equal(doc.querySelectorAll("select[data-question]").length, 1);
});

test("an address without a survey", async () => {
  const { doc, server } = await openPage({ url: "http://survey.test/interviewer/" });
  assert.equal(statusText(doc), "No survey in this address (it should end in /interviewer/<survey>).");
  assert.equal(server.requests.length, 0);
});
