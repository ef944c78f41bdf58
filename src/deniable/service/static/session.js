// session.js: the pages' logic without a page: the respondent's session (a token, the
// survey, reports kept on the device and sent, replayed after a reload, retried after a
// failure) and the interviewer's, with fetch, storage and crypto given, so node tests run
// them against fakes.  Only randomized reports are stored or sent: the body of a report is
// {question, report} and nothing else.

import { randomize, randomizeAnswer, randomWords, typeOf } from "./randomizer.js";
import { SpecError, checkLabels, checkSpec, show } from "./spec.js";

export class HttpError extends Error {
  constructor(status, message, body) {
    super(message);
    this.name = "HttpError";
    this.status = status;
    this.body = body;
  }
}

/**
 * What the respondent page says when a survey cannot be opened: the survey is closed (409),
 * takes respondents by invitation only (403 without an invitation), the invitation is not
 * valid or was used (403 with one), or too many sessions were started from this network
 * (429); any other error as it came.  `err` is an HttpError or any Error.
 */
export function sessionProblem(err, invitation) {
  const status = err instanceof HttpError ? err.status : null;
  if (status === 409) return "This survey is closed: it takes no answers now. Thank you for your interest.";
  if (status === 403 && !invitation) {
    return "This survey is by invitation only. Open the personal link from your invitation: each link works once, on one device.";
  }
  if (status === 403) {
    return "This invitation link is not valid, or it has been used already: each link works once, on one device. If you opened it before in another browser, answer there; otherwise ask the survey's organizers for a new link.";
  }
  if (status === 429) {
    const m = /retry after (\d+) s/.exec(err.message);
    const wait = m ? ` in ${m[1]} seconds` : " in a few minutes";
    return `Many people have just started this survey from your network. Please try again${wait}.`;
  }
  return `The survey could not be loaded: ${err.message}`;
}

async function call(fetchImpl, method, url, { token, body } = {}) {
  const headers = { Accept: "application/json" };
  if (token) headers.Authorization = `Bearer ${token}`;
  const init = { method, headers, credentials: "same-origin", cache: "no-store" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetchImpl(url, init);
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = null;
  }
  if (!response.ok) {
    const message = data && typeof data.error === "string" ? data.error : `the server answered ${response.status}.`;
    throw new HttpError(response.status, message, data);
  }
  return { status: response.status, data };
}

const PREFIX = "deniable";

/** What the pages say of an infinite epsilon (a two-group question): never a number. */
export const NO_BOUND = "ε = ∞ (no bounded guarantee)";

/**
 * Why the page cannot ask a question, or null: its spec, its labels for the spec, a
 * two-group question without the group the server drew (the page never chooses it), or
 * one whose latent indicator has no default (the unrelated question) without the wording
 * of that second question, which the page then asks on this device.
 */
function problemOf(question) {
  try {
    const c = checkSpec(question.spec);
    if (question.labels !== undefined && question.labels !== null) checkLabels(question.labels, c.answers);
    if (c.algorithm === "two-group/2" && question.group !== 1 && question.group !== 2) {
      throw new SpecError("group", `must be the randomization group the server drew (1 or 2), got ${show(question.group)}: the page never chooses it.`);
    }
    if (c.algorithm === "two-group/2" && c.latent.default === null && (typeof question.unrelated !== "string" || !question.unrelated.trim())) {
      throw new SpecError("latent.default", `is null: the respondent type needs the answer to the ${c.latent.name} question too, and the server sent no wording for it.`);
    }
    return null;
  } catch (err) {
    return err.message;
  }
}

export class RespondentSession {
  /**
   * surveyId: from the URL (/s/{id}); invitation: the ?invitation= token or null;
   * fetch, storage (localStorage-like: getItem/setItem/removeItem) and crypto are given.
   */
  constructor({ surveyId, invitation = null, fetch: fetchImpl, storage, crypto: cryptoImpl = globalThis.crypto, base = "" }) {
    if (typeof surveyId !== "string" || !/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(surveyId)) {
      throw new SpecError("surveyId", `must be a survey id (letters, digits, _ . -), got ${show(surveyId)}.`);
    }
    this.surveyId = surveyId;
    this.invitation = invitation;
    this.fetch = fetchImpl;
    this.storage = storage;
    this.crypto = cryptoImpl;
    this.api = `${base}/api/surveys/${encodeURIComponent(surveyId)}`;
    this.token = null;
    this.survey = null;
  }

  get tokenKey() {
    return `${PREFIX}/token/${this.surveyId}`;
  }

  reportKey(questionId) {
    return `${PREFIX}/report/${this.surveyId}/${this.token}/${questionId}`;
  }

  /** The respondent token: kept from an earlier visit, or a new session (the invitation). */
  async open() {
    const kept = this.storage.getItem(this.tokenKey);
    if (kept) {
      this.token = kept;
      return { token: kept, fresh: false };
    }
    const body = this.invitation ? { invitation: this.invitation } : {};
    const { data } = await call(this.fetch, "POST", `${this.api}/sessions`, { body });
    if (!data || typeof data.token !== "string") throw new HttpError(500, "the server sent no session token.", data);
    this.token = data.token;
    this.storage.setItem(this.tokenKey, data.token);
    return { token: data.token, fresh: true };
  }

  /** Forget a token the server no longer knows (and nothing else). */
  forgetToken() {
    this.storage.removeItem(this.tokenKey);
    this.token = null;
  }

  /** GET the survey; every question is checked (a bad one is marked, not thrown). */
  async load() {
    const { data } = await call(this.fetch, "GET", this.api, { token: this.token });
    if (!data || !Array.isArray(data.questions)) throw new HttpError(500, "the server sent no questions.", data);
    for (const q of data.questions) {
      q.problem = problemOf(q);
      // a report the server already holds is this device's report: keep it
      if (Number.isSafeInteger(q.answered) && this.stored(q) === null && q.problem === null) this.keep(q, q.answered);
    }
    this.survey = data;
    return data;
  }

  /** The randomized report this device keeps for a question, or null. */
  stored(question) {
    const raw = this.storage.getItem(this.reportKey(question.id));
    if (raw === null) return null;
    try {
      const kept = JSON.parse(raw);
      if (kept && kept.key === question.spec.key && Number.isSafeInteger(kept.report)) return kept.report;
    } catch {
      /* unreadable: treated as none below */
    }
    return undefined; // a report for another version of the question: never re-randomize
  }

  keep(question, report) {
    this.storage.setItem(this.reportKey(question.id), JSON.stringify({ report, key: question.spec.key }));
  }

  /** POST a report; returns the server's status (stored, duplicate, conflict, over_cap, closed). */
  async send(question, report) {
    try {
      const { data } = await call(this.fetch, "POST", `${this.api}/reports`, { token: this.token, body: { question: question.id, report } });
      return (data && data.status) || "stored";
    } catch (err) {
      if (err instanceof HttpError && err.body && typeof err.body.status === "string") return err.body.status;
      if (err instanceof HttpError && err.status === 403) return "over_cap";
      if (err instanceof HttpError && err.status === 409) return /closed/i.test(err.message) ? "closed" : "conflict";
      throw err;
    }
  }

  /**
   * Answer a question: the device's kept report if it has one (the same report again,
   * whatever the answer given now), else a fresh randomization of `answer`, kept BEFORE it
   * is sent (a lost response must not lead to a second randomization).  A two-group
   * design randomizes the respondent type of the answer (latent.type[answer][latent],
   * docs/specs.md; `latent`: the answer to the unrelated question, else the default)
   * within the group the server drew (`question.group`, one answer word): the report is
   * 2 (group - 1) + answer, and the page never chooses the group.
   */
  async answer(question, answer, latent = undefined) {
    const kept = this.stored(question);
    if (kept === undefined) return { status: "changed", report: null };
    let report = kept;
    if (report === null) {
      const twoGroup = checkSpec(question.spec).algorithm === "two-group/2"; // the design's, not the answer's
      if (twoGroup) {
        if (question.group !== 1 && question.group !== 2) throw new SpecError("group", `must be the group the server drew (1 or 2), got ${show(question.group)}.`);
        const type = typeOf(question.spec, answer, latent);
        report = randomize(question.spec, type, randomWords(1, this.crypto), { group: question.group });
      } else {
        report = randomizeAnswer(question.spec, answer, this.crypto);
      }
      this.keep(question, report);
    }
    // `answer` and `latent` go out of use here; only `report` leaves this function
    return { status: await this.send(question, report), report };
  }

  /** Send again every report this device keeps (after a reload): idempotent on the server. */
  async replay() {
    const out = {};
    for (const q of this.survey.questions) {
      const kept = q.problem === null ? this.stored(q) : null;
      if (Number.isSafeInteger(kept)) out[q.id] = { status: await this.send(q, kept), report: kept };
    }
    return out;
  }
}

// ---------------------------------------------------------------------------------------
// The interviewer (paper / phone mode): the admin token in sessionStorage, the protocols,
// and the reports that respondents produced with coins or dice.

export class InterviewerSession {
  constructor({ surveyId, fetch: fetchImpl, storage, base = "" }) {
    this.surveyId = surveyId;
    this.fetch = fetchImpl;
    this.storage = storage;
    this.api = `${base}/api/surveys/${encodeURIComponent(surveyId)}`;
  }

  get tokenKey() {
    return `${PREFIX}/admin`;
  }

  get token() {
    return this.storage.getItem(this.tokenKey);
  }

  setToken(token) {
    if (token) this.storage.setItem(this.tokenKey, token);
    else this.storage.removeItem(this.tokenKey);
  }

  async protocols() {
    const { data } = await call(this.fetch, "GET", `${this.api}/protocols`, { token: this.token });
    if (!Array.isArray(data)) throw new HttpError(500, "the server sent no protocols.", data);
    return data;
  }

  /** reports: [{question, report}] of one respondent. */
  async submit(reports) {
    const { status, data } = await call(this.fetch, "POST", `${this.api}/interviewer`, { token: this.token, body: { reports } });
    return { status, data };
  }
}
