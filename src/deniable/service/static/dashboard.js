// The dashboard's one script (the pages work without it): changing the confidence level or
// the time bucket reloads the page with the new choice, so the "Update" button is only needed
// without JavaScript.  No inline script runs anywhere (CSP: script-src 'self').
const controls = document.getElementById("controls");
if (controls) {
  for (const select of controls.querySelectorAll("select")) {
    select.addEventListener("change", () => controls.requestSubmit());
  }
  const button = controls.querySelector("button[type=submit]");
  if (button) button.classList.add("js-hidden");
}
