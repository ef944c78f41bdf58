// How the browser code is cut into ES modules (src/deniable/service/static/*.js): who may
// import whom, where randomness and the page may appear, and the public face deniable.js.
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { test } from "node:test";
import { STATIC } from "./_helpers.mjs";

const MODULES = readdirSync(STATIC).filter((f) => f.endsWith(".js") && f !== "dashboard.js").sort();
const source = (name) => readFileSync(new URL(name, STATIC), "utf8");
const code = (name) => source(name).replace(/^\s*\/\/.*$/gm, "").replace(/\/\*[\s\S]*?\*\//g, ""); // comments out

/** The modules a module imports (or re-exports from), by file name. */
function imports(name) {
  const found = [];
  for (const m of source(name).matchAll(/^(?:import|export)\s[^;]*?\sfrom\s+"([^"]+)";/gm)) found.push(m[1]);
  for (const m of source(name).matchAll(/^import\s+"([^"]+)";/gm)) found.push(m[1]);
  return found;
}

// what each module may import: the randomizer core (channel, spec, randomizer) stands
// alone, so another client can take those three files; the pages sit on top
const ALLOWED = {
  "channel.js": [],
  "spec.js": ["channel.js"],
  "randomizer.js": ["channel.js", "spec.js"],
  "explain.js": ["channel.js", "spec.js"],
  "session.js": ["randomizer.js", "spec.js"],
  "dom.js": ["explain.js"],
  "respondent.js": ["dom.js", "explain.js", "session.js", "spec.js"],
  "interviewer.js": ["dom.js", "session.js"],
  "main.js": ["interviewer.js", "respondent.js"],
  // the frequency-oracle client: its words from randomizer.js, its errors from spec.js; every
  // device client's common face (deviceClient: checked words, or words drawn) is here
  "oracles.js": ["randomizer.js", "spec.js"],
  "oraclesmemo.js": ["oracles.js", "oraclesrappor.js", "randomizer.js", "spec.js"],
  "oraclesrappor.js": ["oracles.js", "spec.js"],
  // the count mean sketches' client: words through oracles.js's deviceClient, errors from spec.js
  // SHA-256 once, pure (the sketches' string hash and a batch's spec digest)
  "digest.js": [],
  "sketches.js": ["digest.js", "oracles.js", "spec.js"],
  // the heavy-hitter (PEM, TreeHist) device client: the same shape as sketches.js
  "heavy.js": ["oracles.js", "spec.js"],
  // the Sequence Fragment Puzzle's device client: two sketches.js clients, its puzzle hash
  "sfp.js": ["digest.js", "oracles.js", "sketches.js", "spec.js"],
  // RAPPOR n-gram discovery's device client: RAPPOR reports through oraclesrappor.js
  "ngram.js": ["oracles.js", "oraclesrappor.js", "spec.js"],
  // the range mechanisms' and Square Wave's device client: level reports through oracles.js
  "ranges.js": ["oracles.js", "randomizer.js", "spec.js"],
  // a telemetry device: the batch format and its POST, and the stream client on top
  "batch.js": ["digest.js", "heavy.js", "ngram.js", "oracles.js", "oraclesrappor.js", "ranges.js", "session.js", "sfp.js", "sketches.js", "spec.js"],
  "stream.js": ["batch.js", "heavy.js", "ngram.js", "oracles.js", "oraclesmemo.js", "oraclesrappor.js", "randomizer.js", "ranges.js", "session.js", "sfp.js", "sketches.js", "spec.js"],
  "deniable.js": ["dom.js", "explain.js", "randomizer.js", "session.js", "spec.js"],
};

test("the modules are the ones listed, and each imports only what its layer allows", () => {
  assert.deepEqual(MODULES, Object.keys(ALLOWED).sort());
  for (const name of MODULES) {
    const specifiers = imports(name);
    for (const s of specifiers) assert.match(s, /^\.\/[a-z]+\.js$/, `${name} imports ${s}: only modules beside it`);
    assert.deepEqual(specifiers.map((s) => s.slice(2)).sort(), ALLOWED[name], name);
  }
});

test("the core is free of the page and the network; randomness only from crypto.getRandomValues", () => {
  for (const name of MODULES) {
    const text = code(name);
    assert.doesNotMatch(text, /Math\.random|Date\.now|performance\.now/, `${name}: a randomness source other than crypto.getRandomValues`);
    // stream.js: the device's memo in the page's localStorage unless a storage is given
    if (!["dom.js", "respondent.js", "interviewer.js", "main.js", "stream.js"].includes(name)) {
      assert.doesNotMatch(text, /\bdocument\b|\bwindow\b|localStorage|sessionStorage/, `${name} touches the page`);
    }
    // batch.js and stream.js talk to the service only (GET /streams/{id}, POST its batches)
    if (!["session.js", "respondent.js", "interviewer.js", "batch.js", "stream.js"].includes(name)) {
      assert.doesNotMatch(text, /\bfetch\b|XMLHttpRequest|sendBeacon|WebSocket/, `${name} touches the network`);
    }
    if (name !== "randomizer.js") assert.doesNotMatch(text, /getRandomValues/, `${name} draws randomness itself`);
  }
  // and nothing at all that would send data elsewhere or run text as code
  for (const name of MODULES) assert.doesNotMatch(code(name), /XMLHttpRequest|sendBeacon|WebSocket|EventSource|\beval\(|new Function|import\(/, name);
});

test("only main.js runs anything when imported", async () => {
  for (const name of MODULES.filter((n) => n !== "main.js")) {
    const lines = code(name).split("\n").filter((l) => /^[a-z]/.test(l));
    const statements = lines.filter((l) => !/^(import|export|const|let|function|async function|class)\b/.test(l) && !/^export\s/.test(l));
    assert.deepEqual(statements, [], `${name} has top-level statements`);
  }
});

test("deniable.js re-exports the public names of the modules, the same objects", async () => {
  const face = await import(new URL("deniable.js", STATIC));
  // the names deniable.js has always exported (docs/service.md, "The module")
  const names = ["ALGORITHMS", "HttpError", "InterviewerSession", "PrivacyError", "RespondentSession", "SPEC_SCHEMA", "SpecError", "chance", "channel", "channelEpsilon", "checkSpec", "explain", "oddsFactor", "picture", "randomWords", "randomize", "randomizeAnswer", "sessionProblem", "typeOf"];
  assert.deepEqual(Object.keys(face).sort(), names);
  for (const name of names) {
    const owners = [];
    for (const file of MODULES.filter((n) => n !== "deniable.js" && n !== "main.js")) {
      const mod = await import(new URL(file, STATIC));
      if (name in mod) owners.push([file, mod[name]]);
    }
    assert.equal(owners.length, 1, `${name} is defined in one module, found ${owners.map(([f]) => f)}`);
    assert.equal(face[name], owners[0][1], name);
  }
});
