// respondent.js: the respondent page (/s/<survey>, respondent.html).  One form per
// question: labelled radio buttons, the explanation and its picture, a send button and a
// live status line.  The true answer lives only in a local variable between the submit and
// the randomization: it is never stored, logged or sent.

import { el, picture, statusLine } from "./dom.js";
import { answerNames, explain, quote } from "./explain.js";
import { HttpError, NO_BOUND, RespondentSession, sessionProblem } from "./session.js";
import { checkSpec } from "./spec.js";

function statusText(status, label) {
  const what = label === null ? "" : ` ${quote(label)}`;
  const note = label === null ? "" : " (it may or may not be your true answer)";
  switch (status) {
    case "stored":
      return `Received. Your device sent the randomized report${what}${note}.`;
    case "duplicate":
      return `Already received: your device sent its randomized report${what} again${note}.`;
    case "conflict":
      return "The server holds a different report for this question: nothing was changed.";
    case "over_cap":
      return "This question would pass the survey's privacy limit for you: it was not sent.";
    case "closed":
      return "The survey is closed: nothing was sent.";
    case "changed":
      return "This question changed after your device answered it: nothing was sent.";
    default:
      return `Not sent (${status}).`;
  }
}

/** What a report says, for the status line: an answer's label, a count of red cards, or
 * for a two-group design the answer and the group (report 2 (group - 1) + answer). */
function reportLabel(question, report) {
  const labels = answerNames(question.spec, question.labels ?? undefined);
  const c = checkSpec(question.spec);
  if (c.algorithm === "bernoulli-count/1" && c.words > 1) return `${report} red card${report === 1 ? "" : "s"}`;
  if (c.algorithm === "two-group/2") return `${labels[report % 2]}, group ${1 + Math.floor(report / 2)}`;
  return labels[report] ?? String(report);
}

function renderQuestion(doc, session, question, index) {
  const qid = `q${index}`;
  const form = el(doc, "form", { class: "question", id: `${qid}-form`, novalidate: true });
  const fieldset = el(doc, "fieldset", { "aria-describedby": `${qid}-how` });
  fieldset.append(el(doc, "legend", { text: question.text }));
  // tabindex -1: the focus can land on the status line (after a send), Tab never stops there
  const status = el(doc, "p", { class: "q-status", id: `${qid}-status`, role: "status", "aria-live": "polite", tabindex: "-1" });
  if (question.problem) {
    // the fieldset is described by why it cannot be asked (the id of the explanation)
    fieldset.append(el(doc, "p", { class: "error", id: `${qid}-how`, text: `This question cannot be randomized on this device: ${question.problem}` }));
    form.append(fieldset);
    return { form, done: null, question };
  }
  const labels = answerNames(question.spec, question.labels ?? undefined);
  const choices = el(doc, "div", { class: "choices" });
  labels.forEach((label, value) => {
    const id = `${qid}-a${value}`;
    choices.append(el(doc, "div", { class: "choice" }, el(doc, "input", { type: "radio", name: qid, id, value, required: true }), el(doc, "label", { for: id, text: label })));
  });
  fieldset.append(choices);
  // the unrelated question of Greenberg's design: asked here, its answer used only inside
  // the randomization on this device (never stored, never sent)
  let unrelated = null;
  if (typeof question.unrelated === "string" && checkSpec(question.spec).latent?.default === null) {
    unrelated = el(doc, "fieldset", { class: "unrelated", id: `${qid}-unrelated` });
    unrelated.append(el(doc, "legend", { text: question.unrelated }));
    unrelated.append(el(doc, "p", { class: "note", text: "Answer this question too: your device uses the answer only to randomize, and never sends it." }));
    ["no", "yes"].forEach((label, value) => {
      const id = `${qid}-u${value}`;
      unrelated.append(el(doc, "div", { class: "choice" }, el(doc, "input", { type: "radio", name: `${qid}-u`, id, value, required: true }), el(doc, "label", { for: id, text: label })));
    });
    fieldset.append(unrelated);
  }
  if (checkSpec(question.spec).epsilon === Infinity) {
    // outside the survey's cap: said in words, never as a number
    fieldset.append(el(doc, "p", { class: "guarantee", text: `${NO_BOUND}: the randomization hides your answer from a casual reader, but a report can reveal it.` }));
  }
  const info = explain(question.spec, labels);
  const how = el(doc, "div", { class: "how", id: `${qid}-how` });
  for (const s of info.how) how.append(el(doc, "p", { text: s }));
  how.append(el(doc, "p", { class: "reveal", text: info.reveal }));
  fieldset.append(how, picture(doc, info, qid));
  const button = el(doc, "button", { type: "submit", class: "send", text: "Randomize and send" });
  fieldset.append(button, status);
  form.append(fieldset);

  const done = (status_, report) => {
    status.textContent = statusText(status_, report === null ? null : reportLabel(question, report));
    status.className = `q-status ${["stored", "duplicate"].includes(status_) ? "ok" : "error"}`;
    if (["stored", "duplicate", "conflict", "changed"].includes(status_)) {
      for (const input of choices.querySelectorAll("input")) input.checked = false; // the true answer leaves the screen too
      if (unrelated) for (const input of unrelated.querySelectorAll("input")) input.checked = false;
      fieldset.disabled = true;
      form.classList.add("done");
    }
  };
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const focused = form.contains(doc.activeElement); // sent from the keyboard, or a focusing click
    const picked = choices.querySelector("input:checked");
    const pickedUnrelated = unrelated ? unrelated.querySelector("input:checked") : null;
    const kept = session.stored(question);
    if ((!picked || (unrelated && !pickedUnrelated)) && kept === null) {
      status.textContent = unrelated && picked ? "Answer the second question too." : "Choose an answer first.";
      status.className = "q-status error";
      return;
    }
    button.disabled = true;
    status.textContent = "Randomizing and sending…";
    try {
      const latent = pickedUnrelated ? Number(pickedUnrelated.value) : undefined;
      const result = await session.answer(question, picked ? Number(picked.value) : 0, latent);
      done(result.status, result.report);
    } catch (err) {
      // the report is kept before it is sent: say so only if there is one (a device that
      // cannot randomize has none)
      const keeps = Number.isSafeInteger(session.stored(question));
      const note = keeps ? " Your device keeps its randomized report and sends the same one when you try again." : "";
      status.textContent = `Not sent: ${err.message}${note}`;
      status.className = "q-status error";
    } finally {
      button.disabled = false;
      // keep the keyboard's place: on the outcome once the question is done (the next Tab
      // goes on to the next question), else on the button, to try again
      if (focused) (fieldset.disabled ? status : button).focus();
    }
  });
  return { form, done, question };
}

/**
 * Run the respondent page in `win` (a window whose document is respondent.html).  fetch,
 * storage (localStorage) and crypto are the window's unless given (the tests give fakes).
 */
export async function runRespondent(win, { fetch = win.fetch.bind(win), storage = win.localStorage, crypto = win.crypto } = {}) {
  const doc = win.document;
  const say = statusLine(doc.getElementById("status"));
  const m = /^\/s\/([^/]+)\/?$/.exec(win.location.pathname);
  if (!m) return say("No survey in this address (it should end in /s/<survey>).", true);
  const params = new URLSearchParams(win.location.search);
  const invitation = params.get("invitation");
  if (invitation) {
    params.delete("invitation"); // the invitation leaves the address bar and the history
    const rest = params.toString();
    win.history.replaceState(null, "", `${win.location.pathname}${rest ? `?${rest}` : ""}`);
  }
  const session = new RespondentSession({
    surveyId: decodeURIComponent(m[1]),
    invitation,
    fetch,
    storage,
    crypto,
  });
  say("Loading the survey…");
  try {
    const opened = await session.open();
    try {
      await session.load();
    } catch (err) {
      if (!(err instanceof HttpError && err.status === 401 && !opened.fresh && !invitation)) throw err;
      session.forgetToken(); // a token this server does not know: start a new session
      await session.open();
      await session.load();
    }
  } catch (err) {
    return say(sessionProblem(err, invitation), true);
  }
  const survey = session.survey;
  doc.title = survey.title;
  doc.getElementById("survey-title").textContent = survey.title;
  doc.getElementById("survey-description").textContent = survey.description ?? "";
  const list = doc.getElementById("questions");
  list.replaceChildren();
  const rendered = survey.questions.map((q, i) => renderQuestion(doc, session, q, i));
  for (const r of rendered) list.append(r.form);
  if (survey.questions.length === 0) list.append(el(doc, "p", { text: "There are no questions left for you in this survey." }));
  if (survey.open === false) {
    for (const r of rendered) r.form.querySelector("fieldset").disabled = true;
    say("This survey is closed: answers are no longer received.", true);
  }
  else say(`${survey.questions.length} question${survey.questions.length === 1 ? "" : "s"}. Your answers are randomized on this device before they are sent.`);
  // send again what this device already answered (the same reports: nothing new leaks)
  try {
    const replayed = await session.replay();
    for (const r of rendered) {
      if (r.done && replayed[r.question.id]) r.done(replayed[r.question.id].status, replayed[r.question.id].report);
    }
  } catch (err) {
    say(`Could not resend your earlier reports: ${err.message}`, true);
  }
}
