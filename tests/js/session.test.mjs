// The page logic (RespondentSession, InterviewerSession) against a fake server, a fake
// localStorage and a crypto stand-in: only randomized reports are ever sent or stored, the
// same report is sent again on reload, and nothing is randomized twice.
import assert from "node:assert/strict";
import { test } from "node:test";
import { randomize } from "../../src/deniable/service/static/randomizer.js";
import { HttpError, InterviewerSession, RespondentSession, sessionProblem } from "../../src/deniable/service/static/session.js";
import { FakeStorage, QUESTIONS, TOP, fakeServer, spec } from "./_fakes.mjs";
import { wordsCrypto } from "./_helpers.mjs";

/** Answers such that the given words make report != answer: the true answer cannot hide in a report. */
const WORDS = { happy: [0n], harassment: [TOP], hours: [TOP, 0n] };
function answerNotReport(q) {
  for (let a = 0; a < q.spec.truths; a++) {
    const r = randomize(q.spec, a, WORDS[q.id]);
    if (r !== a) return { answer: a, report: r };
  }
  throw new Error(`no such answer for ${q.id}`);
}

test("only {question, report} is sent and only reports are stored; never the true answer", async () => {
  const server = fakeServer();
  const storage = new FakeStorage();
  const crypto = wordsCrypto(QUESTIONS.flatMap((q) => WORDS[q.id]));
  const session = new RespondentSession({ surveyId: "demo", fetch: server.fetch, storage, crypto });
  assert.deepEqual(await session.open(), { token: "tok0", fresh: true });
  const survey = await session.load();
  const expected = {};
  for (const q of survey.questions) {
    const { answer, report } = answerNotReport(q);
    expected[q.id] = report;
    const result = await session.answer(q, answer);
    assert.deepEqual(result, { status: "stored", report });
  }
  assert.equal(crypto.left, 0, "every drawn word used, one draw per question");
  const posts = server.requests.filter((r) => r.url.endsWith("/reports"));
  assert.equal(posts.length, 3);
  for (const p of posts) {
    assert.deepEqual(Object.keys(p.body).sort(), ["question", "report"]);
    assert.equal(p.body.report, expected[p.body.question]);
    assert.equal(p.auth, "Bearer tok0");
  }
  assert.deepEqual(server.respondents.get("tok0"), expected);
  // every request body: nothing but the session request and the three reports
  for (const r of server.requests) if (r.body !== undefined) assert.match(r.raw, /^\{\}$|^\{"question":"[a-z]+","report":[0-9]\}$/);
  // storage: the token and one {report, key} per question, nothing else
  for (const [k, v] of storage.writes) {
    if (k === "deniable/token/demo") continue;
    const m = /^deniable\/report\/demo\/tok0\/([a-z]+)$/.exec(k);
    assert.ok(m, k);
    const kept = JSON.parse(v);
    assert.deepEqual(Object.keys(kept).sort(), ["key", "report"]);
    assert.equal(kept.report, expected[m[1]]);
  }
});

test("a reload sends the same reports again (duplicate) and never randomizes again", async () => {
  const server = fakeServer();
  const storage = new FakeStorage();
  const first = new RespondentSession({ surveyId: "demo", fetch: server.fetch, storage, crypto: wordsCrypto([0n, TOP, TOP, 0n]) });
  await first.open();
  const survey = await first.load();
  const sent = {};
  for (const q of survey.questions) sent[q.id] = (await first.answer(q, 1)).report;

  const crypto = wordsCrypto([]); // any draw would throw: nothing is randomized again
  const again = new RespondentSession({ surveyId: "demo", fetch: server.fetch, storage, crypto });
  assert.deepEqual(await again.open(), { token: "tok0", fresh: false });
  await again.load();
  const replayed = await again.replay();
  for (const q of QUESTIONS) assert.deepEqual(replayed[q.id], { status: "duplicate", report: sent[q.id] });
  // answering again, with another answer, sends the kept report
  for (const q of again.survey.questions) assert.deepEqual(await again.answer(q, 0), { status: "duplicate", report: sent[q.id] });
  assert.equal(crypto.calls, 0);
  assert.equal(server.requests.filter((r) => r.url.endsWith("/sessions")).length, 1);
});

test("the report is kept before it is sent: a failed send is retried with the same report", async () => {
  const server = fakeServer();
  const storage = new FakeStorage();
  const crypto = wordsCrypto([0n]);
  const session = new RespondentSession({ surveyId: "demo", fetch: server.fetch, storage, crypto });
  await session.open();
  const [q] = (await session.load()).questions;
  server.setDown(true);
  await assert.rejects(session.answer(q, 0), /Failed to fetch/);
  server.setDown(false);
  assert.deepEqual(await session.answer(q, 1), { status: "stored", report: 1 });
  assert.equal(crypto.calls, 1);
});

test("a report the server holds (another tab) is adopted, not re-randomized", async () => {
  const server = fakeServer();
  const storage = new FakeStorage();
  const session = new RespondentSession({ surveyId: "demo", fetch: server.fetch, storage, crypto: wordsCrypto([]) });
  await session.open();
  server.respondents.get("tok0").happy = 1;
  const survey = await session.load();
  assert.equal(session.stored(survey.questions[0]), 1);
  assert.deepEqual(await session.answer(survey.questions[0], 0), { status: "duplicate", report: 1 });
});

test("a question whose design changed since this device answered is not sent", async () => {
  const server = fakeServer();
  const storage = new FakeStorage();
  const session = new RespondentSession({ surveyId: "demo", fetch: server.fetch, storage, crypto: wordsCrypto([]) });
  await session.open();
  const survey = await session.load();
  storage.setItem("deniable/report/demo/tok0/happy", JSON.stringify({ report: 1, key: "warner{}" }));
  const before = server.requests.length;
  assert.deepEqual(await session.answer(survey.questions[0], 1), { status: "changed", report: null });
  assert.equal(server.requests.length, before);
});

test("invitations: the token is redeemed once and kept; a bad one is refused", async () => {
  const server = fakeServer({ invitations: new Set(["inv-1"]) });
  const storage = new FakeStorage();
  const session = new RespondentSession({ surveyId: "demo", invitation: "inv-1", fetch: server.fetch, storage });
  await session.open();
  assert.deepEqual(server.requests[0].body, { invitation: "inv-1" });
  const other = new RespondentSession({ surveyId: "demo", invitation: "inv-1", fetch: server.fetch, storage: new FakeStorage() });
  await assert.rejects(other.open(), (e) => e.status === 403 && /invitation/.test(e.message));
  // the same device does not redeem again
  await new RespondentSession({ surveyId: "demo", invitation: "inv-1", fetch: server.fetch, storage }).open();
  assert.equal(server.requests.length, 2);
});

test("server outcomes map to statuses: conflict, bad spec marked, bad survey id refused", async () => {
  const server = fakeServer();
  const storage = new FakeStorage();
  const session = new RespondentSession({ surveyId: "demo", fetch: server.fetch, storage, crypto: wordsCrypto([0n]) });
  await session.open();
  const survey = await session.load();
  server.respondents.get("tok0").happy = 0; // the server holds another report
  assert.equal((await session.answer(survey.questions[0], 1)).status, "conflict");
  const broken = fakeServer({ questions: [{ id: "x", spec: { ...QUESTIONS[0].spec, epsilon: 0.1 } }] });
  const s2 = new RespondentSession({ surveyId: "demo", fetch: broken.fetch, storage: new FakeStorage() });
  await s2.open();
  const [q] = (await s2.load()).questions;
  assert.match(q.problem, /`epsilon`/);
  assert.throws(() => new RespondentSession({ surveyId: "../admin", fetch: server.fetch, storage }), /surveyId/);
});

test("interviewer: the admin token from sessionStorage, protocols, and reports posted", async () => {
  const requests = [];
  const fetch = async (url, init) => {
    requests.push({ url, init });
    const data = url.endsWith("/protocols") ? [{ question: "happy", text: "Q", steps: ["Flip a coin."] }] : { status: "stored" };
    return { ok: true, status: url.endsWith("/protocols") ? 200 : 201, json: async () => data };
  };
  const storage = new FakeStorage();
  const session = new InterviewerSession({ surveyId: "demo", fetch, storage });
  session.setToken("admin-secret");
  assert.deepEqual(storage.writes, [["deniable/admin", "admin-secret"]]);
  const protocols = await session.protocols();
  assert.equal(protocols[0].steps[0], "Flip a coin.");
  await session.submit([{ question: "happy", report: 1 }]);
  assert.equal(requests[0].init.headers.Authorization, "Bearer admin-secret");
  assert.equal(requests[1].url, "/api/surveys/demo/interviewer");
  assert.deepEqual(JSON.parse(requests[1].init.body), { reports: [{ question: "happy", report: 1 }] });
  session.setToken(null);
  assert.equal(session.token, null);
});

test("the page explains why a survey cannot be opened: closed, invitation only, used link, busy", () => {
  const http = (status, message) => new HttpError(status, message, { error: message });
  assert.match(sessionProblem(http(409, "survey `demo` is closed: it takes no reports"), null), /^This survey is closed/);
  const only = sessionProblem(http(403, "`invitation`: survey 'demo' takes respondents by invitation only"), null);
  assert.match(only, /by invitation only/);
  assert.match(only, /personal link/);
  const used = sessionProblem(http(403, "`invitation`: not a valid invitation of this survey, or already used"), "tok");
  assert.match(used, /not valid, or it has been used already/);
  assert.doesNotMatch(used, /tok/); // the invitation itself is never shown
  const busy = sessionProblem(http(429, "too many new sessions from your network address: at most 30 in 600 seconds (settings.session_limit_per_address); retry after 42 s"), null);
  assert.match(busy, /try again in 42 seconds/);
  assert.match(sessionProblem(http(429, "slow down"), null), /try again in a few minutes/);
  assert.match(sessionProblem(new TypeError("Failed to fetch"), null), /could not be loaded: Failed to fetch/);
});

test("importing the module in node runs no page (no document)", async () => {
  assert.equal(typeof globalThis.document, "undefined");
});

test("a two-group question: the answer becomes its respondent type (latent.type[answer][default]) before it is randomized", async () => {
  // cheater detection: latent.type = [[1, 3], [0, 2]], default 0 (not a cheater), so "no"
  // is type 1 (honest non-carrier) and "yes" type 0 (honest carrier), who always says yes
  const cdm = { id: "carrier", spec: spec("cdm-0", ["no", "yes"], "Do you carry the gene?") };
  assert.deepEqual(cdm.spec.latent.type, [[1, 3], [0, 2]]);
  for (const [answer, type] of [[0, 1], [1, 0]]) {
    const server = fakeServer({ questions: [{ ...cdm, group: 1 }] });
    const words = [TOP]; // the server's group 1; an answer word above every threshold below 2**53
    const session = new RespondentSession({ surveyId: "demo", fetch: server.fetch, storage: new FakeStorage(), crypto: wordsCrypto(words) });
    await session.open();
    const [q] = (await session.load()).questions;
    const { report } = await session.answer(q, answer);
    assert.equal(report, randomize(cdm.spec, type, words, { group: 1 }));
    assert.equal(report, answer, "group 1: a non-carrier's word above its threshold says no, a carrier says yes");
  }
});

test("a two-group report carries the group the server drew, whatever the words", async () => {
  const cdm = { id: "carrier", spec: spec("cdm-0", ["no", "yes"], "Do you carry the gene?") };
  for (const group of [1, 2]) {
    for (const word of [0n, TOP]) {
      const server = fakeServer({ questions: [{ ...cdm, group }] });
      const crypto = wordsCrypto([word]);
      const session = new RespondentSession({ surveyId: "demo", fetch: server.fetch, storage: new FakeStorage(), crypto });
      await session.open();
      const [q] = (await session.load()).questions;
      assert.equal(q.problem, null);
      const { report } = await session.answer(q, 1);
      assert.equal(Math.floor(report / 2) + 1, group);
      const posted = server.requests.filter((r) => r.url.endsWith("/reports")).map((r) => r.body);
      assert.deepEqual(posted, [{ question: "carrier", report }]);
    }
  }
});
