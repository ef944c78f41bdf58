// The respondent page (respondent.html and respondent.js) in a DOM (jsdom), against the fake
// server of _fakes.mjs, a fake localStorage and words handed out in order: what the page
// shows for each kind of question, that it works with the keyboard, its error, closed,
// invitation and over-cap states, and that whatever the answer a request holds only
// {question, report}.
import assert from "node:assert/strict";
import { test } from "node:test";
import { runRespondent } from "../../src/deniable/service/static/respondent.js";
import { randomize, typeOf } from "../../src/deniable/service/static/randomizer.js";
import { danglingReferences, pageWindow, tabOrder, until } from "./_dom.mjs";
import { FakeStorage, QUESTIONS, TOP, fakeServer, spec } from "./_fakes.mjs";
import { wordsCrypto } from "./_helpers.mjs";

const MANGAT = { id: "mangat", spec: spec("mangat-0", ["no", "yes"], "Ever cheated on a test?") };
const CDM = { id: "carrier", spec: spec("cdm-0", ["no", "yes"], "Do you carry the gene?") };

/** Open the page for survey "demo" and wait until it has loaded (and replayed). */
async function openPage({ server = fakeServer(), storage = new FakeStorage(), crypto = wordsCrypto([]), url = "http://survey.test/s/demo" } = {}) {
  const win = pageWindow("respondent.html", url);
  await runRespondent(win, { fetch: server.fetch, storage, crypto });
  return { win, doc: win.document, server, storage, crypto };
}

const form = (doc, i) => doc.getElementById(`q${i}-form`);
const status = (doc, i) => doc.getElementById(`q${i}-status`);
const reportPosts = (server) => server.requests.filter((r) => r.url.endsWith("/reports"));

/** Pick an answer (if any) and press the send button; wait for the outcome. */
async function send(doc, i, answer = null) {
  if (answer !== null) doc.getElementById(`q${i}-a${answer}`).click();
  const button = form(doc, i).querySelector("button.send");
  button.focus();
  button.click();
  await until(() => !button.disabled && !/^Randomizing/.test(status(doc, i).textContent), `question ${i} sent`);
}

test("each question is a named group of labelled radio buttons with its explanation, picture and status line", async () => {
  const questions = [...QUESTIONS, MANGAT];
  const { doc } = await openPage({ server: fakeServer({ questions }) });
  assert.equal(doc.title, "Demo survey");
  assert.equal(doc.getElementById("survey-title").textContent, "Demo survey");
  assert.equal(doc.getElementById("survey-description").textContent, "About work.");
  assert.match(doc.getElementById("status").textContent, /^4 questions\. Your answers are randomized on this device/);
  const forms = doc.querySelectorAll("#questions form.question");
  assert.equal(forms.length, questions.length);
  questions.forEach((q, i) => {
    const fieldset = forms[i].querySelector("fieldset");
    assert.equal(fieldset.querySelector("legend").textContent, q.spec.text);
    const radios = [...fieldset.querySelectorAll("input[type=radio]")];
    assert.deepEqual(radios.map((r) => r.labels[0].textContent), q.spec.labels);
    assert.deepEqual(radios.map((r) => r.value), q.spec.labels.map((_, v) => String(v)));
    assert.ok(radios.every((r) => r.name === `q${i}` && !r.checked));
    // the explanation describes the group; the picture has a text alternative
    assert.equal(doc.getElementById(fieldset.getAttribute("aria-describedby")).className, "how");
    const svg = fieldset.querySelector("svg.bar");
    assert.equal(svg.getAttribute("role"), "img");
    assert.ok(doc.getElementById(svg.getAttribute("aria-labelledby")).textContent.length > 10);
    const line = status(doc, i);
    assert.equal(line.getAttribute("role"), "status");
    assert.equal(line.getAttribute("aria-live"), "polite");
    assert.equal(fieldset.querySelector("button.send").type, "submit");
  });
  assert.deepEqual(danglingReferences(doc), []);
});

test("the explanation and the picture give the chances and the limit of the spec, an infinite epsilon in words", async () => {
  const { doc } = await openPage({ server: fakeServer({ questions: [...QUESTIONS, MANGAT] }) });
  // two coins: the truth half the time, else a fair coin: the truth 3 times in 4 in all;
  // epsilon = ln 3 = 1.0986..., shown rounded up
  const twoCoin = form(doc, 0).querySelector(".how").textContent;
  assert.match(twoCoin, /1 time in 2 your device sends your true answer; otherwise a fair coin decides between “yes” and “no”/);
  assert.match(twoCoin, /your true answer is sent 3 times in 4/);
  assert.match(twoCoin, /by at most 3 \(e\^ε, ε = 1\.099\)/);
  const widths = [...form(doc, 0).querySelectorAll("svg.bar rect")].map((r) => Number(r.getAttribute("width")));
  assert.deepEqual(widths, [50, 25, 25]);
  assert.match(form(doc, 0).querySelector("svg.bar title").textContent, /^1 time in 2: your true answer; 1 time in 4: yes, whatever your answer; 1 time in 4: no/);
  // four answers, the truth 1 time in 2, else one of the 4 at random: epsilon = ln 5
  const hours = form(doc, 2).querySelector(".how").textContent;
  assert.match(hours, /otherwise it picks one of the 4 answers at random/);
  assert.match(hours, /at most 5 times as likely/);
  // Mangat's design has a deterministic path: no finite number is shown
  const mangat = form(doc, 3).querySelector(".how").textContent;
  assert.match(mangat, /ε is infinite/);
  assert.doesNotMatch(mangat, /at most|ε = [0-9]/);
});

test("whatever the answer, a request holds only {question, report}, and the device keeps only reports", async () => {
  for (const [i, q] of QUESTIONS.entries()) {
    const words = q.spec.words_per_report === 2 ? [TOP, 5n] : [TOP];
    for (let answer = 0; answer < q.spec.truths; answer++) {
      const opened = await openPage({ crypto: wordsCrypto(words) });
      const { doc, server, storage, crypto } = opened;
      await send(doc, i, answer);
      assert.equal(crypto.calls, 1, "one draw of words_per_report words, whatever the answer");
      assert.equal(crypto.left, 0);
      const posts = reportPosts(server);
      assert.equal(posts.length, 1);
      const expected = randomize(q.spec, answer, words);
      assert.equal(posts[0].raw, JSON.stringify({ question: q.id, report: expected }));
      assert.match(status(doc, i).textContent, /^Received\./);
      assert.equal(form(doc, i).querySelectorAll("input:checked").length, 0, "the answer left the screen");
      // the device: the session token and {report, key}, nothing else
      const kept = [...storage.map.entries()];
      assert.deepEqual(kept.map(([k]) => k).sort(), ["deniable/report/demo/tok0/" + q.id, "deniable/token/demo"]);
      assert.deepEqual(JSON.parse(storage.getItem(`deniable/report/demo/tok0/${q.id}`)), { report: expected, key: q.spec.key });
    }
  }
});

test("the keyboard: native controls in reading order, one group per question, the form's submit sends", async () => {
  const { doc, server } = await openPage({ crypto: wordsCrypto([TOP]) });
  assert.equal(doc.querySelectorAll("[tabindex]:not([tabindex='-1'])").length, 0, "no positive tabindex");
  const order = tabOrder(doc).map((node) => node.id || node.className || node.tagName);
  const expected = ["skip"];
  QUESTIONS.forEach((q, i) => expected.push(...q.spec.labels.map((_, v) => `q${i}-a${v}`), "send"));
  assert.deepEqual(order, expected);
  // the skip link lands on the questions
  const skip = doc.querySelector("a.skip");
  assert.equal(doc.querySelector(skip.getAttribute("href")).getAttribute("tabindex"), "-1");
  // Enter on a radio submits its form (implicit submission): the page listens to "submit"
  const radio = doc.getElementById("q0-a1");
  radio.focus();
  radio.click(); // Space on a focused radio
  form(doc, 0).requestSubmit();
  await until(() => /^Received/.test(status(doc, 0).textContent), "the report sent");
  assert.equal(reportPosts(server).length, 1);
});

test("after a report is sent the focus moves to the question's status line, so Tab goes on to the next question", async () => {
  const { doc } = await openPage({ crypto: wordsCrypto([TOP]) });
  await send(doc, 0, 1);
  assert.equal(form(doc, 0).querySelector("fieldset").disabled, true);
  assert.equal(doc.activeElement, status(doc, 0));
  assert.equal(status(doc, 0).getAttribute("tabindex"), "-1");
  const order = tabOrder(doc);
  assert.equal(order[order.indexOf(doc.getElementById("q1-a0")) - 1].className, "skip", "the sent question leaves the tab order");
});

test("a failed send keeps the focus on the send button, to try again", async () => {
  const server = fakeServer();
  const { doc } = await openPage({ server, crypto: wordsCrypto([TOP]) });
  server.setDown(true);
  await send(doc, 0, 1);
  assert.equal(doc.activeElement, form(doc, 0).querySelector("button.send"));
});

test("no answer chosen: nothing is randomized or sent", async () => {
  const { doc, server, crypto } = await openPage();
  await send(doc, 1);
  assert.equal(status(doc, 1).textContent, "Choose an answer first.");
  assert.equal(status(doc, 1).className, "q-status error");
  assert.equal(crypto.calls, 0);
  assert.equal(reportPosts(server).length, 0);
});

test("a two-group question (cheater detection): two answers, randomized from the respondent type of the answer in the server's group", async () => {
  // the group is the server's (never drawn here): one answer word, TOP (above every
  // threshold below 2**53: an honest carrier, whose threshold is 2**53, still says "yes")
  for (const group of [1, 2]) {
    for (const answer of [0, 1]) {
      const words = [TOP];
      const { doc, server } = await openPage({ server: fakeServer({ questions: [{ ...CDM, group }] }), crypto: wordsCrypto(words) });
      const radios = [...form(doc, 0).querySelectorAll("input[type=radio]")];
      assert.deepEqual(radios.map((r) => r.labels[0].textContent), ["no", "yes"]);
      assert.match(form(doc, 0).querySelector(".how").textContent, /group 1 1 time in 2 and in group 2 otherwise/);
      assert.match(form(doc, 0).querySelector(".how").textContent, /ε is infinite/);
      await send(doc, 0, answer);
      const type = CDM.spec.latent.type[answer][CDM.spec.latent.default]; // docs/specs.md: latent.type[x][l]
      assert.equal(type, typeOf(CDM.spec, answer));
      const expected = randomize(CDM.spec, type, words, { group });
      assert.deepEqual(reportPosts(server).map((r) => r.body), [{ question: "carrier", report: expected }]);
      assert.equal(expected, 2 * (group - 1) + answer, "the group, then no (a non-carrier) or yes (a carrier)");
      // the report says its group: “yes, group 2”, not a bare number
      assert.match(status(doc, 0).textContent, new RegExp(`report “${["no", "yes"][answer]}, group ${group}”`));
    }
  }
});

test("a question whose spec fails the check is shown as such, with nothing to answer and no dangling reference", async () => {
  const questions = [{ id: "tampered", spec: { ...QUESTIONS[0].spec, epsilon: 0.1 } }, QUESTIONS[1]];
  const { doc } = await openPage({ server: fakeServer({ questions }) });
  assert.match(form(doc, 0).querySelector(".error").textContent, /^This question cannot be randomized on this device: `epsilon` is 0\.1/);
  assert.equal(form(doc, 0).querySelectorAll("input, button").length, 0);
  assert.equal(form(doc, 1).querySelectorAll("input[type=radio]").length, 2);
  // the group is described by its error, not by an explanation that is not there
  assert.deepEqual(danglingReferences(doc), []);
  const described = doc.getElementById(form(doc, 0).querySelector("fieldset").getAttribute("aria-describedby"));
  assert.equal(described.className, "error");
});

test("labels from the server that do not fit the spec make the question one the page cannot ask", async () => {
  const questions = [{ id: "labels", spec: QUESTIONS[0].spec, labels: ["no", "yes", "maybe"] }, { id: "twice", spec: QUESTIONS[1].spec, labels: ["no", "no"] }];
  const { doc } = await openPage({ server: fakeServer({ questions }) });
  assert.match(form(doc, 0).querySelector(".error")?.textContent ?? "", /`labels` must be a list of 2 non-empty strings .*got \["no","yes","maybe"\]/);
  assert.match(form(doc, 1).querySelector(".error")?.textContent ?? "", /`labels` must be distinct/);
  for (const i of [0, 1]) assert.equal(form(doc, i).querySelectorAll("input, button").length, 0);
});

test("a two-group question whose latent indicator has no default (the unrelated question) is not asked without the unrelated question's wording", async () => {
  const questions = [{ id: "unrelated", spec: spec("unrelated-unknown-0", ["no", "yes"], "Q?"), group: 1 }];
  const { doc, server } = await openPage({ server: fakeServer({ questions }) });
  assert.match(form(doc, 0).querySelector(".error")?.textContent ?? "", /`latent\.default`/);
  assert.equal(form(doc, 0).querySelectorAll("input, button").length, 0);
  assert.equal(reportPosts(server).length, 0);
});

test("a survey that cannot be opened: closed, invitation only, a used invitation, busy, offline", async () => {
  const cases = [
    [{ refuseSessions: { status: 409, error: "survey `demo` is closed: it takes no reports" } }, "", /^This survey is closed: it takes no answers now/],
    [{ invitations: new Set(["inv-1"]) }, "", /^This survey is by invitation only\. Open the personal link/],
    [{ invitations: new Set(["inv-1"]) }, "?invitation=inv-2&lang=en", /^This invitation link is not valid, or it has been used already/],
    [{ refuseSessions: { status: 429, error: "too many new sessions from your network address; retry after 42 s" } }, "", /try again in 42 seconds\.$/],
  ];
  for (const [options, query, message] of cases) {
    const server = fakeServer(options);
    const { win, doc } = await openPage({ server, url: `http://survey.test/s/demo${query}` });
    const box = doc.getElementById("status");
    assert.match(box.textContent, message);
    assert.equal(box.className, "status error");
    assert.doesNotMatch(box.textContent, /inv-2/, "the invitation is never shown");
    assert.equal(doc.querySelectorAll("form.question").length, 0);
    assert.equal(reportPosts(server).length, 0);
    // the invitation leaves the address bar (and the history), the rest of the query stays
    assert.equal(win.location.search, query ? "?lang=en" : "");
  }
  const server = fakeServer();
  server.setDown(true);
  const { doc } = await openPage({ server });
  assert.equal(doc.getElementById("status").textContent, "The survey could not be loaded: Failed to fetch");
});

test("an invitation is redeemed once; the same device comes back without it", async () => {
  const server = fakeServer({ invitations: new Set(["inv-1"]) });
  const storage = new FakeStorage();
  const first = await openPage({ server, storage, url: "http://survey.test/s/demo?invitation=inv-1" });
  assert.equal(first.win.location.search, "");
  assert.deepEqual(server.requests[0].body, { invitation: "inv-1" });
  assert.equal(first.doc.querySelectorAll("form.question").length, 3);
  const again = await openPage({ server, storage });
  assert.equal(again.doc.querySelectorAll("form.question").length, 3);
  assert.equal(server.requests.filter((r) => r.url.endsWith("/sessions")).length, 1);
});

test("a closed survey shows its questions but takes no answer", async () => {
  const { doc } = await openPage({ server: fakeServer({ open: false }) });
  assert.equal(doc.getElementById("status").textContent, "This survey is closed: answers are no longer received.");
  assert.equal(doc.getElementById("status").className, "status error");
  for (let i = 0; i < 3; i++) assert.equal(form(doc, i).querySelector("fieldset").disabled, true);
  assert.equal(tabOrder(doc).filter((n) => n.tagName === "INPUT" || n.tagName === "BUTTON").length, 0);
});

test("over the privacy cap, the survey closed, a conflict: the question says so; a refused report stays kept", async () => {
  let refuse = "over_cap";
  const server = fakeServer({ outcome: (id) => (id === "happy" ? refuse : id === "harassment" ? "closed" : null) });
  const storage = new FakeStorage();
  const { doc } = await openPage({ server, storage, crypto: wordsCrypto([TOP, TOP, TOP, 0n]) });
  await send(doc, 0, 1);
  assert.equal(status(doc, 0).textContent, "This question would pass the survey's privacy limit for you: it was not sent.");
  assert.equal(status(doc, 0).className, "q-status error");
  assert.equal(form(doc, 0).querySelector("fieldset").disabled, false);
  const kept = JSON.parse(storage.getItem("deniable/report/demo/tok0/happy")).report;
  await send(doc, 1, 0);
  assert.equal(status(doc, 1).textContent, "The survey is closed: nothing was sent.");
  // the server no longer refuses: the kept report goes, whatever is picked now, no new draw
  refuse = null;
  await send(doc, 0, 0);
  assert.match(status(doc, 0).textContent, /^Received\./);
  assert.equal(reportPosts(server).at(-1).body.report, kept);
  // another tab sent a different report: nothing changes, the question is done
  server.respondents.get("tok0").hours = 3;
  storage.setItem("deniable/report/demo/tok0/hours", JSON.stringify({ report: 0, key: QUESTIONS[2].spec.key }));
  await send(doc, 2, 1);
  assert.equal(status(doc, 2).textContent, "The server holds a different report for this question: nothing was changed.");
  assert.equal(form(doc, 2).querySelector("fieldset").disabled, true);
});

test("a failed send says the device keeps its report, and the retry sends the same one", async () => {
  const server = fakeServer();
  const crypto = wordsCrypto([0n]);
  const { doc } = await openPage({ server, crypto });
  server.setDown(true);
  await send(doc, 0, 0);
  assert.equal(status(doc, 0).textContent, "Not sent: Failed to fetch Your device keeps its randomized report and sends the same one when you try again.");
  server.setDown(false);
  await send(doc, 0, 1);
  assert.match(status(doc, 0).textContent, /^Received\./);
  const posts = reportPosts(server);
  assert.equal(posts.length, 2);
  assert.equal(posts[0].raw, posts[1].raw);
  assert.equal(crypto.calls, 1);
});

test("a device without crypto.getRandomValues sends nothing and says why, without claiming a kept report", async () => {
  const { doc, server, storage } = await openPage({ crypto: {} });
  await send(doc, 0, 1);
  assert.equal(status(doc, 0).textContent, "Not sent: no crypto.getRandomValues: this device cannot randomize safely.");
  assert.equal(status(doc, 0).className, "q-status error");
  assert.equal(reportPosts(server).length, 0);
  assert.equal(storage.getItem("deniable/report/demo/tok0/happy"), null);
});

test("a reload sends the kept reports again and says they were received; nothing is drawn", async () => {
  const server = fakeServer();
  const storage = new FakeStorage();
  const first = await openPage({ server, storage, crypto: wordsCrypto([TOP, 0n]) });
  await send(first.doc, 0, 1);
  await send(first.doc, 1, 0);
  const sent = reportPosts(server).map((r) => r.raw);
  const crypto = wordsCrypto([]);
  const { doc } = await openPage({ server, storage, crypto });
  assert.deepEqual(reportPosts(server).slice(2).map((r) => r.raw), sent);
  for (const i of [0, 1]) {
    assert.match(status(doc, i).textContent, /^Already received: your device sent its randomized report “(no|yes)” again/);
    assert.equal(form(doc, i).querySelector("fieldset").disabled, true);
  }
  assert.equal(form(doc, 2).querySelector("fieldset").disabled, false);
  assert.equal(crypto.calls, 0);
  assert.notEqual(doc.activeElement, status(doc, 1), "a replay does not move the focus");
});

test("a kept token the server does not know: a new session", async () => {
  const server = fakeServer();
  const storage = new FakeStorage();
  storage.setItem("deniable/token/demo", "stale");
  const { doc } = await openPage({ server, storage });
  assert.equal(storage.getItem("deniable/token/demo"), "tok0");
  assert.equal(doc.querySelectorAll("form.question").length, 3);
});

test("an address without a survey, and a survey with no question left", async () => {
  const none = await openPage({ url: "http://survey.test/s/" });
  assert.equal(none.doc.getElementById("status").textContent, "No survey in this address (it should end in /s/<survey>).");
  assert.equal(none.server.requests.length, 0);
  const empty = await openPage({ server: fakeServer({ questions: [] }) });
  assert.equal(empty.doc.getElementById("questions").textContent, "There are no questions left for you in this survey.");
});

test("a question without labels (none from the server, none in its spec) offers the answers by their default names", async () => {
  const bare = (q) => {
    const s = structuredClone(q.spec);
    delete s.labels;
    return { id: q.id, text: s.text, spec: s, labels: null };
  };
  const { doc, server } = await openPage({ server: fakeServer({ questions: [bare(QUESTIONS[1]), bare(QUESTIONS[2])] }), crypto: wordsCrypto([TOP]) });
  const names = (i) => [...form(doc, i).querySelectorAll("input[type=radio]")].map((r) => r.labels[0].textContent);
  assert.deepEqual(names(0), ["no", "yes"]);
  assert.deepEqual(names(1), ["answer 1", "answer 2", "answer 3", "answer 4"]);
  // the explanation uses the same names
  assert.match(form(doc, 0).querySelector(".how").textContent, /the odds that your true answer is “yes”/);
  await send(doc, 0, 1);
  assert.equal(reportPosts(server).length, 1);
  assert.match(status(doc, 0).textContent, /^Received\. Your device sent the randomized report “(no|yes)”/);
});

test("a two-group question without the server's group is not asked: the page never chooses the group", async () => {
  const { doc, server, crypto } = await openPage({ server: fakeServer({ questions: [CDM] }), crypto: wordsCrypto([0n, TOP]) });
  assert.match(form(doc, 0).querySelector(".error")?.textContent ?? "", /`group` must be the randomization group the server drew \(1 or 2\), got undefined: the page never chooses it/);
  assert.equal(form(doc, 0).querySelectorAll("input, button").length, 0);
  assert.equal(crypto.calls, 0);
  assert.equal(reportPosts(server).length, 0);
});

test("a two-group question says ε = ∞ (no bounded guarantee), never a number", async () => {
  const { doc } = await openPage({ server: fakeServer({ questions: [{ ...CDM, group: 2 }, QUESTIONS[0]] }) });
  assert.match(form(doc, 0).querySelector(".guarantee").textContent, /^ε = ∞ \(no bounded guarantee\): /);
  assert.doesNotMatch(form(doc, 0).textContent, /ε = \d/);
  assert.equal(form(doc, 1).querySelector(".guarantee"), null, "a bounded question has its finite epsilon");
});

test("the unrelated question is asked on the device and enters only the randomization", async () => {
  const base = spec("unrelated-unknown-0", ["no", "yes"], "Have you ever shoplifted?");
  const question = { id: "shop", spec: base, group: 2, unrelated: "Were you born in April?" };
  for (const answer of [0, 1]) {
    for (const latent of [0, 1]) {
      const words = [2n ** 63n];
      const { doc, server } = await openPage({ server: fakeServer({ questions: [question] }), crypto: wordsCrypto(words) });
      const second = doc.getElementById("q0-unrelated");
      assert.equal(second.querySelector("legend").textContent, "Were you born in April?");
      assert.match(second.textContent, /never sends it/);
      // the sensitive answer alone is not enough: the unrelated one is needed too
      doc.getElementById(`q0-a${answer}`).click();
      const button = form(doc, 0).querySelector("button.send");
      button.click();
      await until(() => !button.disabled, "refused");
      assert.equal(status(doc, 0).textContent, "Answer the second question too.");
      assert.equal(reportPosts(server).length, 0);
      doc.getElementById(`q0-u${latent}`).click();
      await send(doc, 0);
      const type = base.latent.type[answer][latent];
      assert.equal(type, typeOf(base, answer, latent));
      const expected = randomize(base, type, words, { group: 2 });
      assert.ok(expected === 2 || expected === 3, "group 2's reports");
      assert.deepEqual(reportPosts(server).map((r) => r.body), [{ question: "shop", report: expected }]);
      // both true answers leave the screen
      assert.equal(doc.querySelectorAll("input:checked").length, 0);
    }
  }
});
