// The pages in a DOM (jsdom, a dev dependency: package.json at the repository root; not a
// test file).  A page is the served HTML file itself, its scripts not run: a test runs the
// page's module function on the window with fakes for fetch, storage and crypto.
import { readFileSync } from "node:fs";
import { JSDOM } from "jsdom";
import { STATIC } from "./_helpers.mjs";

/**
 * The window of a static page (respondent.html, interviewer.html) at the given address.
 *
 * With HTML's focus fixup rule, which jsdom lacks and browsers apply (Chromium: a focused
 * control that is disabled, or whose fieldset is, or that is hidden, loses the focus to
 * the body): without it a test could not see a page lose the keyboard's place.
 */
export function pageWindow(file, url) {
  const html = readFileSync(new URL(file, STATIC), "utf8");
  const win = new JSDOM(html, { url }).window;
  const doc = win.document;
  new win.MutationObserver(() => {
    const active = doc.activeElement;
    const control = active?.matches("button, input, select, textarea");
    if (!(control && (active.disabled || active.closest("fieldset[disabled]"))) && !active?.closest("[hidden]")) return;
    // jsdom's blur() ignores a disabled element: move the focus away through a stand-in
    const standIn = doc.createElement("span");
    standIn.tabIndex = -1;
    doc.body.append(standIn);
    standIn.focus();
    standIn.blur();
    standIn.remove();
  }).observe(doc, { attributes: true, attributeFilter: ["disabled", "hidden"], subtree: true });
  return win;
}

/**
 * Wait until `predicate()` holds, letting the page's pending work run between checks (a
 * bounded number of turns of the event loop, not a time).
 */
export async function until(predicate, what, turns = 500) {
  for (let i = 0; i < turns; i++) {
    if (predicate()) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error(`never happened: ${what}`);
}

/** Every id reference (label for, aria-labelledby, aria-describedby) that names no element. */
export function danglingReferences(doc) {
  const missing = [];
  for (const node of doc.querySelectorAll("[for], [aria-labelledby], [aria-describedby], [aria-controls]")) {
    for (const attr of ["for", "aria-labelledby", "aria-describedby", "aria-controls"]) {
      for (const id of (node.getAttribute(attr) ?? "").split(/\s+/).filter(Boolean)) {
        if (!doc.getElementById(id)) missing.push(`${node.tagName.toLowerCase()} ${attr}=${id}`);
      }
    }
  }
  return missing;
}

/** The elements a Tab key reaches, in order (no element may set a positive tabindex). */
export function tabOrder(doc) {
  const candidates = doc.querySelectorAll("a[href], button, input, select, textarea, [tabindex]");
  return [...candidates].filter((node) => {
    if (node.hasAttribute("tabindex") && Number(node.getAttribute("tabindex")) < 0) return false;
    if (node.disabled || node.closest("fieldset:disabled, [hidden]")) return false;
    return !(node.tagName === "INPUT" && node.type === "hidden");
  });
}
