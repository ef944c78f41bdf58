// Fakes of the node tests of the session and page modules (not a test file): a
// localStorage, and an in-memory server following the respondent API of docs/service.md
// that records every request.
import { VECTORS } from "./_helpers.mjs";

/** A question spec of the vectors file, with labels and text. */
export const spec = (id, labels, text) => ({ ...structuredClone(VECTORS.cases.find((c) => c.id === id).spec), labels, text });

/** The demo survey's three questions (two-coin yes/no, Warner yes/no, a four-way one). */
export const QUESTIONS = [
  { id: "happy", spec: spec("two-coin-0", ["no", "yes"], "Are you happy at work?") },
  { id: "harassment", spec: spec("binary-0", ["no", "yes"], "Witnessed harassment?") },
  { id: "hours", spec: spec("categorical-0", ["under 35", "35 to 40", "41 to 50", "over 50"], "Hours?") },
];

export const TOP = 2n ** 64n - 1n;

export class FakeStorage {
  constructor() {
    this.map = new Map();
    this.writes = [];
  }
  getItem(k) {
    return this.map.has(k) ? this.map.get(k) : null;
  }
  setItem(k, v) {
    this.writes.push([k, String(v)]);
    this.map.set(k, String(v));
  }
  removeItem(k) {
    this.map.delete(k);
  }
  get length() {
    return this.map.size;
  }
}

/**
 * An in-memory server for survey "demo"; records every request ({url, method, auth, body,
 * raw}).  Options: questions; invitations (a Set: the survey takes invitations only);
 * open (false: GET says the survey is closed); refuseSessions ({status, error}: every new
 * session refused so); outcome(questionId) -> null or a status that the server answers for
 * a new report instead of storing it ("over_cap" 403, "closed" 409, as the service does).
 */
export function fakeServer({ questions = QUESTIONS, invitations = null, open = true, refuseSessions = null, outcome = () => null } = {}) {
  const requests = [];
  const respondents = new Map(); // token -> {question: report}
  let next = 0;
  let down = false;
  const reply = (status, data) => ({ ok: status < 300, status, json: async () => data });
  const codes = { over_cap: 403, closed: 409, conflict: 409 };
  async function fetch(url, init = {}) {
    const body = init.body === undefined ? undefined : JSON.parse(init.body);
    requests.push({ url, method: init.method, auth: init.headers?.Authorization ?? null, body, raw: init.body });
    if (down) throw new TypeError("Failed to fetch");
    const token = (init.headers?.Authorization ?? "").replace(/^Bearer /, "");
    const m = /^\/api\/surveys\/demo(\/[a-z]+)?$/.exec(url);
    if (!m) return reply(404, { error: "not found" });
    if (m[1] === "/sessions" && init.method === "POST") {
      if (refuseSessions) return reply(refuseSessions.status, { error: refuseSessions.error });
      if (invitations) {
        if (!body.invitation) return reply(403, { error: "`invitation`: survey 'demo' takes respondents by invitation only" });
        if (!invitations.has(body.invitation)) return reply(403, { error: "`invitation`: not a valid invitation of this survey, or already used" });
        invitations.delete(body.invitation);
      }
      const t = `tok${next++}`;
      respondents.set(t, {});
      return reply(201, { token: t });
    }
    if (!respondents.has(token)) return reply(401, { error: "`Authorization`: unknown token." });
    const mine = respondents.get(token);
    if (m[1] === undefined && init.method === "GET") {
      return reply(200, {
        id: "demo", title: "Demo survey", description: "About work.", cap: 3.25, remaining: 3.25, open,
        // a two-group question carries the group the server drew (q.group) and, for the
        // unrelated question, its wording (q.unrelated), as the service sends them
        questions: questions.map((q) => ({ id: q.id, text: q.text ?? q.spec.text, labels: q.labels ?? q.spec.labels, spec: q.spec, epsilon: q.spec.epsilon, answered: mine[q.id] ?? null, ...("group" in q ? { group: q.group } : {}), ...("unrelated" in q ? { unrelated: q.unrelated } : {}) })),
      });
    }
    if (m[1] === "/reports" && init.method === "POST") {
      const q = questions.find((x) => x.id === body.question);
      if (!q || !Number.isInteger(body.report) || body.report < 0 || body.report >= q.spec.reports) return reply(422, { error: "`report` out of range" });
      const refused = q.id in mine ? null : outcome(q.id);
      if (refused) return reply(codes[refused], { status: refused, error: `question \`${q.id}\`: ${refused}` });
      if (!(q.id in mine)) {
        mine[q.id] = body.report;
        return reply(201, { status: "stored" });
      }
      return mine[q.id] === body.report ? reply(200, { status: "duplicate" }) : reply(409, { error: "a different report is stored", status: "conflict" });
    }
    return reply(405, { error: "method" });
  }
  return { fetch, requests, respondents, setDown: (v) => { down = v; } };
}
