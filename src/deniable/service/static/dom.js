// dom.js: building page elements.  DOM built with createElement / textContent (never HTML
// text), no inline styles (the CSP forbids them), classes from style.css.

import { chance } from "./explain.js";

const SVG_NS = "http://www.w3.org/2000/svg";

/** A function that shows a message in a page's status line (error: in the error colours). */
export function statusLine(box) {
  return (text, error = false) => {
    box.textContent = text;
    box.className = error ? "status error" : "status";
  };
}

/** An element with attributes (class, text, or any attribute) and children. */
export function el(doc, tag, attrs = {}, ...children) {
  const node = doc.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

export function svgEl(doc, tag, attrs = {}) {
  const node = doc.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  return node;
}

/** The picture: a bar split into what the device sends (classes give the colours). */
export function picture(doc, explanation, idBase) {
  const figure = el(doc, "figure", { class: "picture" });
  const titleId = `${idBase}-pic`;
  const svg = svgEl(doc, "svg", { viewBox: "0 0 100 10", preserveAspectRatio: "none", class: "bar", role: "img", "aria-labelledby": titleId, focusable: "false" });
  const title = svgEl(doc, "title", { id: titleId });
  title.textContent = explanation.parts.map((p) => `${chance(p.share)}: ${p.label}`).join("; ");
  svg.append(title);
  let x = 0;
  for (const p of explanation.parts) {
    const width = p.share * 100;
    svg.append(svgEl(doc, "rect", { x: x.toFixed(3), y: 0, width: width.toFixed(3), height: 10, class: `seg seg-${p.kind}` }));
    x += width;
  }
  figure.append(svg);
  const legend = el(doc, "ul", { class: "legend", "aria-hidden": "true" });
  for (const p of explanation.parts) {
    legend.append(el(doc, "li", {}, el(doc, "span", { class: `swatch seg-${p.kind}` }), doc.createTextNode(`${chance(p.share)}: ${p.label}`)));
  }
  figure.append(legend);
  return figure;
}
