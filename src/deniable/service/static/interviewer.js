// interviewer.js: the interviewer page (/interviewer/<survey>, interviewer.html), paper and
// phone mode: the admin token in sessionStorage, each question's coin or dice protocol, and
// the reports that a respondent produced with them (never true answers).

import { el, statusLine } from "./dom.js";
import { HttpError, InterviewerSession } from "./session.js";

/**
 * Run the interviewer page in `win` (a window whose document is interviewer.html).  fetch
 * and storage (sessionStorage: the admin token stays in the tab) are the window's unless
 * given.
 */
export async function runInterviewer(win, { fetch = win.fetch.bind(win), storage = win.sessionStorage } = {}) {
  const doc = win.document;
  const say = statusLine(doc.getElementById("status"));
  const m = /^\/interviewer\/([^/]+)\/?$/.exec(win.location.pathname);
  if (!m) return say("No survey in this address (it should end in /interviewer/<survey>).", true);
  const session = new InterviewerSession({ surveyId: decodeURIComponent(m[1]), fetch, storage });
  const login = doc.getElementById("login");
  const work = doc.getElementById("work");
  const list = doc.getElementById("protocols");
  const entry = doc.getElementById("entry");

  const tokenField = doc.getElementById("admin-token");

  // moveFocus: signing in or out from the page hides the focused button, so the focus goes
  // on to what comes next (the first report, or the token field), not to the body
  const show_ = async (moveFocus = false) => {
    let protocols;
    try {
      protocols = await session.protocols();
    } catch (err) {
      if (err instanceof HttpError && err.status === 401) session.setToken(null);
      login.hidden = false;
      work.hidden = true;
      if (moveFocus) tokenField.focus();
      return say(`Could not load the protocols: ${err.message}`, true);
    }
    login.hidden = true;
    work.hidden = false;
    list.replaceChildren();
    protocols.forEach((p, i) => {
      const id = `r${i}`;
      const steps = el(doc, "ol", { class: "steps" });
      for (const s of p.steps ?? []) steps.append(el(doc, "li", { text: s }));
      const labels = p.labels ?? p.spec?.labels ?? null;
      // protocols are binary coin/dice procedures: two reports unless the server says more
      const reports = p.reports ?? p.spec?.reports ?? (labels ? labels.length : p.protocol ? 2 : null);
      if (p.protocol === null) {
        // no physical protocol gives this design exactly: not asked on paper
        list.append(el(doc, "section", { class: "protocol off" }, el(doc, "h3", { text: p.text ?? p.question }), steps));
        return;
      }
      let control;
      if (reports) {
        control = el(doc, "select", { id, "data-question": p.question });
        control.append(el(doc, "option", { value: "", text: "(not asked)" }));
        for (let v = 0; v < reports; v++) {
          const name = labels && labels.length === reports ? `${labels[v]} (report ${v})` : `report ${v}`;
          control.append(el(doc, "option", { value: v, text: name }));
        }
      } else {
        control = el(doc, "input", { id, type: "number", min: 0, step: 1, inputmode: "numeric", placeholder: "the report, a number from 0", "data-question": p.question });
      }
      const field = el(doc, "div", { class: "field" }, el(doc, "label", { for: id, text: "The result the respondent gave" }), control);
      list.append(el(doc, "section", { class: "protocol", "aria-labelledby": `${id}-title` }, el(doc, "h3", { id: `${id}-title`, text: p.text ?? p.question }), steps, field));
    });
    say(`${protocols.length} question${protocols.length === 1 ? "" : "s"}. Read each protocol to the respondent, then enter the reports they produced.`);
    if (moveFocus) (entry.querySelector("[data-question]") ?? entry.querySelector("button[type=submit]")).focus();
  };

  doc.getElementById("login-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    session.setToken(tokenField.value.trim());
    tokenField.value = "";
    await show_(true);
  });
  doc.getElementById("logout").addEventListener("click", () => {
    session.setToken(null);
    login.hidden = false;
    work.hidden = true;
    tokenField.focus();
    say("Signed out.");
  });
  entry.addEventListener("submit", async (event) => {
    event.preventDefault();
    const reports = [];
    for (const control of entry.querySelectorAll("[data-question]")) {
      if (control.value === "") continue;
      reports.push({ question: control.dataset.question, report: Number(control.value) });
    }
    if (reports.length === 0) return say("Enter at least one report.", true);
    try {
      await session.submit(reports);
      entry.reset();
      say(`Stored ${reports.length} report${reports.length === 1 ? "" : "s"} for a new respondent.`);
    } catch (err) {
      say(`Not stored: ${err.message}`, true);
    }
  });
  if (session.token) await show_();
  else {
    login.hidden = false;
    work.hidden = true;
    say("Enter the admin token to begin.");
  }
}
