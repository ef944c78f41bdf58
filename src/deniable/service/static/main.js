// main.js: the pages' one script.  It runs the page named by
// <body data-page="respondent|interviewer"> (respondent.html, interviewer.html); importing
// the other modules runs nothing.

import { runInterviewer } from "./interviewer.js";
import { runRespondent } from "./respondent.js";

if (typeof document !== "undefined" && typeof window !== "undefined") {
  const page = document.body && document.body.dataset.page;
  const run = page === "respondent" ? runRespondent : page === "interviewer" ? runInterviewer : null;
  if (run) {
    run(window).catch((err) => {
      const box = document.getElementById("status");
      if (box) box.textContent = `Something went wrong: ${err.message}`;
    });
  }
}
