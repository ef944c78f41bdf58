// deniable.js: randomized response on the respondent's own device.
//
// One dependency-free ES module, no build step.  It randomizes a true answer from a
// question spec (schema "deniable.question/1", docs/specs.md) exactly as deniable's Python
// randomizers do: the same thresholds, the same 64-bit words in the same slots, the same
// comparisons.  tests/js/ replays every case of tests/vectors/randomizers.json with it.
//
// Exports (usable in node and in a browser):
//   checkSpec(spec)                  -> a frozen, checked form of the spec (throws SpecError)
//   randomize(spec, input, words[, {group}])  pure: BigInt words -> the report
//   randomizeAnswer(spec, input)     draws spec.words_per_report words with
//                                     crypto.getRandomValues and randomizes
//   channel(spec)                    the exact report distribution per input (numbers)
//   channelEpsilon(spec)             the epsilon the thresholds implement
//   typeOf(spec, answer, latent)     two-group designs: the respondent type (the input)
//   explain(spec, labels)            plain words (and picture parts) for the respondent
//   RespondentSession, InterviewerSession: the pages' logic, with fetch and storage given
//
// In a browser (typeof document !== "undefined") it also runs the page named by
// <body data-page="respondent|interviewer">.  The true answer lives only in a local
// variable between the click and the randomization: it is never stored, logged or sent.

export const SPEC_SCHEMA = "deniable.question/1";
export const ALGORITHMS = Object.freeze(["bernoulli-count/1", "keep-or-forced/1", "two-group/2"]);

const ONE = 2n ** 53n; // thresholds live in [0, 2**53]: below(word, t) <=> (word >> 11) < t
const WORD_LIMIT = 2n ** 64n;
const MAX_WORDS = 65536; // a sanity bound on words_per_report (a report is a few words)

const BASE_FIELDS = [
  "schema",
  "mechanism",
  "parameters",
  "key",
  "truths",
  "reports",
  "algorithm",
  "words_per_report",
  "thresholds",
  "epsilon",
];
const OPTIONAL_FIELDS = ["text", "labels"];

/** A malformed or inconsistent question spec; `field` names the offending field. */
export class SpecError extends Error {
  constructor(field, message) {
    super(`\`${field}\` ${message}`);
    this.name = "SpecError";
    this.field = field;
  }
}

/** A spec whose stated epsilon understates what its thresholds implement. */
export class PrivacyError extends SpecError {
  constructor(field, message) {
    super(field, message);
    this.name = "PrivacyError";
  }
}

// ---------------------------------------------------------------------------------------
// Checking a spec

function show(value) {
  if (typeof value === "bigint") return `${value}`;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

function isObject(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function count(spec, field, min) {
  const value = spec[field];
  if (!Number.isSafeInteger(value) || value < min) {
    throw new SpecError(field, `must be an integer >= ${min}, got ${show(value)}.`);
  }
  return value;
}

/** A threshold: a JSON integer or a digit string in [0, 2**53], as a BigInt. */
function threshold(value, field) {
  let t;
  if (typeof value === "number" && Number.isInteger(value)) t = BigInt(value);
  else if (typeof value === "string" && /^[0-9]{1,20}$/.test(value)) t = BigInt(value);
  else {
    throw new SpecError(field, `must be an integer in [0, 2**53] (a number or a digit string), got ${show(value)}.`);
  }
  if (t < 0n || t > ONE) {
    throw new SpecError(field, `must be in [0, 2**53] = [0, 9007199254740992], got ${t}.`);
  }
  return t;
}

function thresholdList(value, field, length) {
  if (!Array.isArray(value) || value.length !== length) {
    throw new SpecError(field, `must be a list of ${length} thresholds, got ${show(value)}.`);
  }
  return value.map((v, i) => threshold(v, `${field}[${i}]`));
}

function exactKeys(obj, keys, field) {
  if (!isObject(obj)) throw new SpecError(field, `must be a JSON object with ${keys.join(", ")}, got ${show(obj)}.`);
  for (const k of keys) {
    if (!(k in obj)) throw new SpecError(`${field}.${k}`, `is missing (${field} has ${keys.join(", ")}).`);
  }
  for (const k of Object.keys(obj)) {
    if (!keys.includes(k)) throw new SpecError(`${field}.${k}`, `is not a field of ${field} (it has ${keys.join(", ")}).`);
  }
}

function checkSchema(spec) {
  if (!("schema" in spec)) throw new SpecError("schema", `is missing (schema ${SPEC_SCHEMA}).`);
  const schema = spec.schema;
  if (schema === SPEC_SCHEMA) return;
  const m = typeof schema === "string" ? /^deniable\.question\/([0-9]+)$/.exec(schema) : null;
  if (m && Number(m[1]) > 1) {
    throw new SpecError("schema", `${show(schema)} is newer than this page reads (${SPEC_SCHEMA}): reload the page to get the current version.`);
  }
  throw new SpecError("schema", `must be ${show(SPEC_SCHEMA)}, got ${show(schema)}.`);
}

function checkLatent(latent, truths) {
  exactKeys(latent, ["name", "default", "type", "types"], "latent");
  if (!["unrelated", "cheater", "honest"].includes(latent.name)) {
    throw new SpecError("latent.name", `must be one of unrelated, cheater, honest, got ${show(latent.name)}.`);
  }
  if (!(latent.default === null || latent.default === 0 || latent.default === 1)) {
    throw new SpecError("latent.default", `must be null, 0 or 1, got ${show(latent.default)}.`);
  }
  if (!Array.isArray(latent.types) || latent.types.length !== truths || !latent.types.every((s) => typeof s === "string")) {
    throw new SpecError("latent.types", `must be a list of ${truths} type names (truths), got ${show(latent.types)}.`);
  }
  if (!Array.isArray(latent.type) || latent.type.length !== 2) {
    throw new SpecError("latent.type", `must be a 2 x 2 table of respondent types, got ${show(latent.type)}.`);
  }
  latent.type.forEach((row, x) => {
    if (!Array.isArray(row) || row.length !== 2) {
      throw new SpecError(`latent.type[${x}]`, `must be a list of 2 types, got ${show(row)}.`);
    }
    row.forEach((t, l) => {
      if (!Number.isSafeInteger(t) || t < 0 || t >= truths) {
        throw new SpecError(`latent.type[${x}][${l}]`, `must be a type in 0..${truths - 1}, got ${show(t)}.`);
      }
    });
  });
}

/**
 * Check a question spec and return its checked form (thresholds as BigInt), frozen.
 *
 * Checks: a JSON object; the schema (a newer one is refused with a message to reload); every
 * required field present and no unknown one; the counts (truths, reports, words_per_report)
 * consistent with the algorithm; every threshold an integer in [0, 2**53] with the shape the
 * algorithm needs (cumulative forcing thresholds not decreasing); the labels; and epsilon
 * against the thresholds: the channel the thresholds implement has an epsilon, and the spec
 * must state it (within 1e-9, the rounding of the thresholds) -- infinite when it is
 * infinite.  A stated epsilon below the implemented one throws PrivacyError.  The parameters
 * are not re-derived here (docs/specs.md: a client uses the thresholds as given; the server
 * checked them with QuestionSpec.from_dict).
 */
export function checkSpec(spec) {
  // a spec object is checked once per content: the cache entry holds its JSON text, so a
  // spec edited after its check is checked again
  let text = null;
  if (isObject(spec)) {
    try {
      text = JSON.stringify(spec);
    } catch {
      throw new SpecError("spec", "must be JSON data (a BigInt or a cycle is not).");
    }
  }
  const hit = text === null ? undefined : CHECKED.get(spec);
  if (hit && hit.text === text) return hit.checked;
  const checked = checkSpecNow(spec);
  if (text !== null) CHECKED.set(spec, { text, checked });
  return checked;
}

const CHECKED = new WeakMap();

function checkSpecNow(spec) {
  if (!isObject(spec)) throw new SpecError("spec", `must be a JSON object (a question spec), got ${show(spec)}.`);
  checkSchema(spec);
  const algorithm = spec.algorithm;
  const twoGroup = algorithm === "two-group/2";
  const required = twoGroup ? [...BASE_FIELDS, "latent"] : BASE_FIELDS;
  for (const f of required) {
    if (!(f in spec)) throw new SpecError(f, `is missing (a ${SPEC_SCHEMA} spec has ${required.join(", ")}).`);
  }
  for (const f of Object.keys(spec)) {
    if (!required.includes(f) && !OPTIONAL_FIELDS.includes(f)) {
      throw new SpecError(f, `is not a field of a ${SPEC_SCHEMA} spec (it has ${[...required, ...OPTIONAL_FIELDS].join(", ")}).`);
    }
  }
  if (typeof spec.mechanism !== "string" || !/^[a-z][a-z0-9-]*$/.test(spec.mechanism)) {
    throw new SpecError("mechanism", `must be a design name (lower-case letters, digits, -), got ${show(spec.mechanism)}.`);
  }
  if (!isObject(spec.parameters)) {
    throw new SpecError("parameters", `must be a JSON object of name to value, got ${show(spec.parameters)}.`);
  }
  if (typeof spec.key !== "string" || !spec.key.startsWith(`${spec.mechanism}{`)) {
    throw new SpecError("key", `must be the mechanism's name followed by its parameters as JSON, got ${show(spec.key)}.`);
  }
  if (!ALGORITHMS.includes(algorithm)) {
    throw new SpecError("algorithm", `must be one of ${ALGORITHMS.join(", ")}, got ${show(algorithm)} (a spec from a newer version? reload the page).`);
  }
  const truths = count(spec, "truths", 2);
  const reports = count(spec, "reports", 2);
  const words = count(spec, "words_per_report", 1);
  if (words > MAX_WORDS) throw new SpecError("words_per_report", `must be at most ${MAX_WORDS}, got ${words}.`);
  const th = spec.thresholds;
  const checked = { algorithm, truths, reports, words, mechanism: spec.mechanism, key: spec.key };

  if (algorithm === "bernoulli-count/1") {
    if (truths !== 2) throw new SpecError("truths", `must be 2 for ${algorithm}, got ${truths}.`);
    if (reports !== words + 1) {
      throw new SpecError("reports", `must be words_per_report + 1 = ${words + 1} for ${algorithm} (a count of words below the threshold), got ${reports}.`);
    }
    exactKeys(th, ["yes"], "thresholds");
    checked.yes = thresholdList(th.yes, "thresholds.yes", 2);
  } else if (algorithm === "keep-or-forced/1") {
    if (reports !== truths) throw new SpecError("reports", `must equal truths (${truths}) for ${algorithm}, got ${reports}.`);
    if (words !== 2) throw new SpecError("words_per_report", `must be 2 for ${algorithm}, got ${words}.`);
    exactKeys(th, ["keep", "forced"], "thresholds");
    checked.keep = threshold(th.keep, "thresholds.keep");
    if (th.forced === null) {
      checked.forced = null;
    } else {
      checked.forced = thresholdList(th.forced, "thresholds.forced", truths - 1);
      checked.forced.forEach((c, j) => {
        if (j > 0 && c < checked.forced[j - 1]) {
          throw new SpecError(`thresholds.forced[${j}]`, `must not be below thresholds.forced[${j - 1}] (cumulative), got ${c} < ${checked.forced[j - 1]}.`);
        }
      });
    }
  } else {
    if (reports !== 4) throw new SpecError("reports", `must be 4 for ${algorithm} (the group and the answer), got ${reports}.`);
    if (words !== 2) throw new SpecError("words_per_report", `must be 2 for ${algorithm}, got ${words}.`);
    if (truths !== 3 && truths !== 4) throw new SpecError("truths", `must be 3 or 4 (respondent types) for ${algorithm}, got ${truths}.`);
    checkLatent(spec.latent, truths);
    exactKeys(th, ["group", "yes"], "thresholds");
    checked.group = threshold(th.group, "thresholds.group");
    if (!Array.isArray(th.yes) || th.yes.length !== 2) {
      throw new SpecError("thresholds.yes", `must be two lists (group 1, group 2) of ${truths} thresholds, got ${show(th.yes)}.`);
    }
    checked.yes = th.yes.map((row, g) => thresholdList(row, `thresholds.yes[${g}]`, truths));
    checked.latent = spec.latent;
  }

  const answers = twoGroup ? 2 : truths;
  if ("labels" in spec) {
    const labels = spec.labels;
    if (!Array.isArray(labels) || labels.length !== answers || !labels.every((s) => typeof s === "string" && s.length > 0)) {
      throw new SpecError("labels", `must be a list of ${answers} non-empty strings (one per answer), got ${show(labels)}.`);
    }
    if (new Set(labels).size !== labels.length) throw new SpecError("labels", `must be distinct, got ${show(labels)}.`);
  }
  if ("text" in spec && typeof spec.text !== "string") throw new SpecError("text", `must be a string, got ${show(spec.text)}.`);

  // epsilon: stated exactly as the thresholds implement it (never finite for infinite)
  const eps = spec.epsilon;
  if (!(eps === "inf" || (typeof eps === "number" && Number.isFinite(eps) && eps >= 0))) {
    throw new SpecError("epsilon", `must be a number >= 0 or "inf", got ${show(eps)}.`);
  }
  const implemented = epsilonOf(checked);
  if (eps === "inf") {
    if (Number.isFinite(implemented)) {
      throw new SpecError("epsilon", `is "inf" but the thresholds implement epsilon = ${implemented} (a tampered spec).`);
    }
  } else if (!Number.isFinite(implemented)) {
    throw new PrivacyError("epsilon", `is finite (${eps}) but the thresholds make epsilon infinite: some report reveals the answer.`);
  } else if (eps < implemented - 1e-9 * Math.max(1, implemented)) {
    throw new PrivacyError("epsilon", `is ${eps} but the thresholds implement epsilon = ${implemented}: the spec understates it.`);
  } else if (eps > implemented + 1e-9 * Math.max(1, implemented)) {
    throw new SpecError("epsilon", `is ${eps} but the thresholds implement epsilon = ${implemented} (a tampered spec).`);
  }
  checked.epsilon = eps === "inf" ? Infinity : eps;
  return Object.freeze(checked);
}

// ---------------------------------------------------------------------------------------
// The channel the thresholds implement

function bitLength(n) {
  return n.toString(2).length;
}

/** Probability of each category of uniform(word, k) (multiply-shift, docs/specs.md). */
function uniformShares(k) {
  const e = bitLength(k) - 1;
  if (2 ** e === k) return new Array(k).fill(1 / k);
  const b = BigInt(64 - bitLength(k));
  const span = 1n << b;
  const K = BigInt(k);
  const ceilDiv = (a) => (a + K - 1n) / K;
  const shares = [];
  for (let y = 0n; y < K; y++) {
    const n = ceilDiv((y + 1n) * span) - ceilDiv(y * span); // values v with floor(v k / 2**b) = y
    shares.push(Number(n) / Number(span));
  }
  return shares;
}

function forcedShares(c) {
  if (c.forced === null) return uniformShares(c.truths);
  const cuts = [0n, ...c.forced, ONE];
  return cuts.slice(1).map((hi, y) => Number(hi - cuts[y]) / Number(ONE));
}

function binomialPmf(p, n) {
  const pmf = [];
  let coef = 1;
  for (let c = 0; c <= n; c++) {
    pmf.push(coef * p ** c * (1 - p) ** (n - c));
    coef = (coef * (n - c)) / (c + 1);
  }
  return pmf;
}

/** The exact channel of a checked spec: rows per input, columns per report (numbers). */
function channelOf(c) {
  const N = Number(ONE);
  if (c.algorithm === "bernoulli-count/1") {
    return c.yes.map((t) => binomialPmf(Number(t) / N, c.words));
  }
  if (c.algorithm === "keep-or-forced/1") {
    const keep = Number(c.keep) / N;
    const q = forcedShares(c);
    return q.map((_, x) => q.map((qy, y) => (1 - keep) * qy + (y === x ? keep : 0)));
  }
  const g1 = Number(c.group) / N;
  const rows = [];
  for (let type = 0; type < c.truths; type++) {
    const y1 = Number(c.yes[0][type]) / N;
    const y2 = Number(c.yes[1][type]) / N;
    rows.push([g1 * (1 - y1), g1 * y1, (1 - g1) * (1 - y2), (1 - g1) * y2]);
  }
  return rows;
}

/** log(max / min) of two non-negative exact ratios given as BigInt numerators. */
function logRatio(a, b) {
  if (a === b) return 0;
  if (a === 0n || b === 0n) return Infinity;
  return Math.abs(Math.log(Number(a) / Number(b)));
}

/** The epsilon the thresholds implement (closed forms, so a big words_per_report is cheap). */
function epsilonOf(c) {
  if (c.algorithm === "bernoulli-count/1") {
    // P(count | x) is binomial(w, t_x): the log ratio is linear in the count, so the worst
    // report is all-below or all-above: w * max(|ln t1/t0|, |ln (1-t1)/(1-t0)|)
    const [a, b] = c.yes;
    const worst = Math.max(logRatio(a, b), logRatio(ONE - a, ONE - b));
    return worst === 0 ? 0 : c.words * worst;
  }
  const rows = channelOf(c);
  let eps = 0;
  for (let y = 0; y < rows[0].length; y++) {
    const column = rows.map((r) => r[y]);
    const hi = Math.max(...column);
    const lo = Math.min(...column);
    if (hi === 0) continue;
    eps = Math.max(eps, lo === 0 ? Infinity : Math.log(hi / lo));
  }
  return eps;
}

/** The report distribution of each input: channel(spec)[input][report] (floating point). */
export function channel(spec) {
  return channelOf(checkSpec(spec));
}

/** The epsilon the spec's thresholds implement (Infinity for a deterministic path). */
export function channelEpsilon(spec) {
  return epsilonOf(checkSpec(spec));
}

// ---------------------------------------------------------------------------------------
// Randomizing

function checkWords(words, n) {
  if (words === null || typeof words !== "object" || typeof words.length !== "number" || words.length !== n) {
    throw new SpecError("words", `must be a list of ${n} BigInt 64-bit words, got ${words === null || words === undefined ? words : `${words.length ?? "no"} words`}.`);
  }
  const out = [];
  for (let i = 0; i < n; i++) {
    const w = words[i];
    if (typeof w !== "bigint" || w < 0n || w >= WORD_LIMIT) {
      throw new SpecError(`words[${i}]`, `must be a BigInt in [0, 2**64), got ${show(w)} (${typeof w}).`);
    }
    out.push(w);
  }
  return out;
}

// below(word, t) = (word >> 11) < t, as 0 or 1: a comparison turned into a number, no branch
function below(word, t) {
  return Number(word >> 11n < t);
}

// uniform(word, k): multiply-shift onto 0..k-1 (docs/specs.md)
function uniform(word, k) {
  const e = bitLength(k) - 1;
  if (2 ** e === k) return Number(word >> BigInt(64 - e));
  const b = BigInt(64 - bitLength(k));
  return Number(((word >> (64n - b)) * BigInt(k)) >> b);
}

/**
 * Randomize one true answer from its spec and the given random words (pure).
 *
 * input: the true answer, 0 .. truths-1 (two-group designs: the respondent type, see
 * typeOf).  words: spec.words_per_report BigInt words in [0, 2**64), slot 0 first (a
 * two-group design with options.group given takes 1 word, the answer word).  Returns the
 * report, 0 .. reports-1.
 *
 * No step branches on the input: the input only ever INDEXES a threshold list or enters
 * arithmetic (keep-or-forced computes the forced category for every answer and selects
 * other + keep * (input - other)); every word is consumed whatever the input.
 */
export function randomize(spec, input, words, options = {}) {
  const c = checkSpec(spec);
  if (!Number.isSafeInteger(input) || input < 0 || input >= c.truths) {
    const what = c.algorithm === "two-group/2" ? "respondent type" : "true answer";
    throw new SpecError("input", `must be a ${what} in 0..${c.truths - 1}, got ${show(input)}.`);
  }
  const givenGroup = options && options.group !== undefined;
  if (givenGroup && c.algorithm !== "two-group/2") {
    throw new SpecError("group", `is only for two-group designs, not ${c.algorithm}.`);
  }
  if (givenGroup && options.group !== 1 && options.group !== 2) {
    throw new SpecError("group", `must be 1 or 2, got ${show(options.group)}.`);
  }
  const w = checkWords(words, givenGroup ? 1 : c.words);

  if (c.algorithm === "bernoulli-count/1") {
    const t = c.yes[input]; // indexing by the answer selects its threshold
    let report = 0;
    for (const word of w) report += below(word, t);
    return report;
  }
  if (c.algorithm === "keep-or-forced/1") {
    const keep = below(w[0], c.keep);
    let other;
    if (c.forced === null) {
      other = uniform(w[1], c.truths);
    } else {
      const v = w[1] >> 11n;
      other = 0;
      for (const cut of c.forced) other += Number(cut <= v); // categories whose cut is passed
    }
    return other + keep * (input - other); // keep ? input : other, by arithmetic
  }
  // two-group/2: slot 0 the group word (unless the group is given), slot 1 the answer word
  const group = givenGroup ? options.group : 2 - below(w[0], c.group); // below -> group 1
  const answerWord = givenGroup ? w[0] : w[1];
  const answer = below(answerWord, c.yes[group - 1][input]);
  return 2 * (group - 1) + answer;
}

/** Two-group designs: the respondent type of a true answer and latent indicator. */
export function typeOf(spec, answer, latent) {
  const c = checkSpec(spec);
  if (c.algorithm !== "two-group/2") throw new SpecError("algorithm", `has no respondent types: ${c.algorithm} takes the answer itself.`);
  if (answer !== 0 && answer !== 1) throw new SpecError("answer", `must be 0 or 1, got ${show(answer)}.`);
  const l = latent === undefined || latent === null ? c.latent.default : latent;
  if (l !== 0 && l !== 1) {
    throw new SpecError(c.latent.name, `must be 0 or 1 (the ${c.latent.name} indicator has no default), got ${show(latent)}.`);
  }
  return c.latent.type[answer][l];
}

/** Fresh uniform 64-bit words from crypto.getRandomValues (65536 bytes per call at most). */
export function randomWords(n, cryptoImpl = globalThis.crypto) {
  if (!cryptoImpl || typeof cryptoImpl.getRandomValues !== "function") {
    throw new Error("no crypto.getRandomValues: this device cannot randomize safely.");
  }
  const words = new BigUint64Array(n);
  for (let i = 0; i < n; i += 8192) cryptoImpl.getRandomValues(words.subarray(i, Math.min(n, i + 8192)));
  return Array.from(words);
}

/** Randomize a true answer with fresh words from crypto.getRandomValues. */
export function randomizeAnswer(spec, input, cryptoImpl = globalThis.crypto) {
  const c = checkSpec(spec);
  return randomize(spec, input, randomWords(c.words, cryptoImpl));
}

// ---------------------------------------------------------------------------------------
// Plain words

const SMALL_DENOMINATORS = [2, 3, 4, 5, 6, 8, 10, 12, 16, 20];

/** "3 times in 4", "always", "never", "about 27 times in 100" for a probability. */
export function chance(p) {
  if (p <= 0) return "never";
  if (p >= 1) return "always";
  for (const d of SMALL_DENOMINATORS) {
    const n = Math.round(p * d);
    if (n > 0 && n < d && Math.abs(n / d - p) < 1e-9) return `${n} ${n === 1 ? "time" : "times"} in ${d}`;
  }
  const pct = Math.round(p * 100);
  if (pct < 1) return "less than 1 time in 100";
  if (pct > 99) return "more than 99 times in 100";
  return `about ${pct} times in 100`;
}

/** e^epsilon for people: 3 significant digits, rounded up (never understating). */
export function oddsFactor(epsilon) {
  if (!Number.isFinite(epsilon)) throw new RangeError("an infinite epsilon has no odds factor: say so instead.");
  const f = Math.exp(epsilon);
  const digits = f >= 100 ? 0 : f >= 10 ? 1 : 2;
  const scale = 10 ** digits;
  let shown = Math.round(f * scale) / scale;
  if (shown < f * (1 - 1e-12)) shown = Math.ceil(f * scale) / scale;
  return shown.toFixed(digits).replace(/\.?0+$/, "");
}

function epsText(epsilon) {
  return Number.isFinite(epsilon) ? `ε = ${Math.ceil(epsilon * 1000) / 1000}` : "ε is infinite";
}

function quote(label) {
  return `“${label}”`;
}

/**
 * What happens to an answer, in plain words computed from the spec's thresholds.
 *
 * Returns {how: [sentences], reveal: sentence, parts: [{share, kind, label}], summary}:
 * `parts` split the unit interval for the picture (kind "true" = the true answer is sent,
 * "opposite", "forced" = a fixed answer whatever the truth, "random"), in order.
 */
export function explain(spec, labels) {
  const c = checkSpec(spec);
  const N = Number(ONE);
  const binary = c.algorithm !== "keep-or-forced/1";
  const names = labels ?? spec.labels ?? (binary ? ["no", "yes"] : Array.from({ length: c.truths }, (_, i) => `answer ${i + 1}`));
  const how = [];
  const parts = [];
  let reveal;
  if (c.algorithm === "bernoulli-count/1" && c.words === 1) {
    const [a, b] = c.yes.map((t) => Number(t) / N); // P(yes | no), P(yes | yes)
    const [no, yes] = [quote(names[0]), quote(names[1])];
    if (a === b) {
      how.push(`Your device ignores your answer: it sends ${yes} ${chance(b)} and ${no} otherwise.`);
      parts.push({ share: b, kind: "forced", label: `${names[1]}, whatever your answer` }, { share: 1 - b, kind: "forced-no", label: `${names[0]}, whatever your answer` });
    } else {
      const positive = b > a;
      const core = positive ? b - a : a - b; // the truth (or its opposite) is sent
      const fy = positive ? a : b; // "yes" whatever the truth
      const fn = 1 - core - fy; // "no" whatever the truth
      const kind = positive ? "true" : "opposite";
      const what = positive ? "your true answer" : "the opposite of your true answer";
      let sentence = core >= 1 ? `Your device always sends ${what}` : `${cap(chance(core))} your device sends ${what}`;
      if (core < 1) {
        const pYes = fy / (fy + fn);
        if (Math.abs(fy - fn) < 1e-12) sentence += `; otherwise a fair coin decides between ${yes} and ${no}`;
        else if (fn <= 0) sentence += `; otherwise it sends ${yes}`;
        else if (fy <= 0) sentence += `; otherwise it sends ${no}`;
        else sentence += `; otherwise it sends ${yes} ${chance(pYes)} and ${no} the rest of the time`;
      }
      how.push(`${sentence}.`);
      // symmetric channels (P(report = truth) the same for both answers): say it in all
      if (Math.abs(1 - a - b) < 1e-12 && core < 1) {
        how.push(positive
          ? `In all, your true answer is sent ${chance(b)}; otherwise the opposite.`
          : `In all, the opposite of your true answer is sent ${chance(a)}; otherwise your true answer.`);
      }
      parts.push({ share: core, kind, label: what }, { share: fy, kind: "forced", label: `${names[1]}, whatever your answer` }, { share: fn, kind: "forced-no", label: `${names[0]}, whatever your answer` });
    }
    reveal = Number.isFinite(c.epsilon)
      ? `The most a ${yes} can reveal: it multiplies the odds that your true answer is ${yes} by at most ${oddsFactor(c.epsilon)} (e^ε, ${epsText(c.epsilon)}); a ${no} reveals no more.`
      : `Some reports can reveal your true answer for certain (${epsText(c.epsilon)}): this question gives no limit on what a report reveals.`;
  } else if (c.algorithm === "bernoulli-count/1") {
    const [p0, p1] = c.yes.map((t) => Number(t) / N);
    how.push(`Your device draws ${c.words} cards and sends how many of them are red: a card is red ${cardChance(p1)} if your true answer is ${quote(names[1])}, and ${cardChance(p0)} if it is ${quote(names[0])}.`);
    parts.push({ share: p1, kind: "true", label: `a card is red (true answer ${names[1]})` }, { share: 1 - p1, kind: "forced-no", label: "a card is black" });
    reveal = Number.isFinite(c.epsilon)
      ? `The most a report can reveal: it multiplies the odds that your true answer is ${quote(names[1])} by at most ${oddsFactor(c.epsilon)} (e^ε, ${epsText(c.epsilon)}).`
      : `Some reports can reveal your true answer for certain (${epsText(c.epsilon)}): this question gives no limit on what a report reveals.`;
  } else if (c.algorithm === "keep-or-forced/1") {
    const keep = Number(c.keep) / N;
    const q = forcedShares(c);
    const uniformForced = q.every((v) => Math.abs(v - q[0]) < 1e-12);
    let sentence = keep >= 1 ? "Your device always sends your true answer" : `${cap(chance(keep))} your device sends your true answer`;
    if (keep < 1) {
      sentence += uniformForced
        ? `; otherwise it picks one of the ${c.truths} answers at random, each equally likely`
        : `; otherwise it picks an answer at random: ${q.map((v, y) => `${quote(names[y])} ${chance(v)}`).join(", ")}`;
    }
    how.push(`${sentence}.`);
    if (uniformForced && keep < 1) how.push(`In all, your true answer is sent ${chance(keep + (1 - keep) * q[0])}.`);
    parts.push({ share: keep, kind: "true", label: "your true answer" }, { share: 1 - keep, kind: "random", label: "an answer drawn at random" });
    reveal = Number.isFinite(c.epsilon)
      ? `The most a report can reveal: whatever your device sends, it makes one answer at most ${oddsFactor(c.epsilon)} times as likely as another, in the odds (e^ε, ${epsText(c.epsilon)}).`
      : `Some reports can reveal your true answer for certain (${epsText(c.epsilon)}): this question gives no limit on what a report reveals.`;
  } else {
    const g1 = Number(c.group) / N;
    how.push(`Your device puts you in group 1 ${chance(g1)} and in group 2 otherwise, then answers ${quote(names[1])} or ${quote(names[0])} by that group's rules; the report says the group and the answer.`);
    parts.push({ share: g1, kind: "true", label: "group 1" }, { share: 1 - g1, kind: "random", label: "group 2" });
    reveal = `Some reports can reveal your true answer for certain (${epsText(c.epsilon)}): this design gives no limit on what a report reveals.`;
  }
  return { how, reveal, parts: parts.filter((p) => p.share > 0), epsilon: c.epsilon, summary: [...how, reveal].join(" ") };
}

function cardChance(p) {
  return p >= 1 ? "every time" : p <= 0 ? "never" : chance(p);
}

function cap(text) {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

// ---------------------------------------------------------------------------------------
// The respondent's session: the page's logic, with fetch, storage and crypto given, so node
// tests run it against fakes.  Only randomized reports are stored or sent.

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

  /** GET the survey; every question's spec is checked (a bad one is marked, not thrown). */
  async load() {
    const { data } = await call(this.fetch, "GET", this.api, { token: this.token });
    if (!data || !Array.isArray(data.questions)) throw new HttpError(500, "the server sent no questions.", data);
    for (const q of data.questions) {
      try {
        checkSpec(q.spec);
        q.problem = null;
      } catch (err) {
        q.problem = err.message;
      }
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
   * is sent (a lost response must not lead to a second randomization).
   */
  async answer(question, answer) {
    const kept = this.stored(question);
    if (kept === undefined) return { status: "changed", report: null };
    let report = kept;
    if (report === null) {
      report = randomizeAnswer(question.spec, answer, this.crypto);
      this.keep(question, report);
    }
    // `answer` goes out of use here; only `report` leaves this function
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

// ---------------------------------------------------------------------------------------
// The pages (browser only).  DOM built with createElement / textContent (never HTML text), no
// inline styles (the CSP forbids them), classes from style.css.

const SVG_NS = "http://www.w3.org/2000/svg";

function el(doc, tag, attrs = {}, ...children) {
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

function svgEl(doc, tag, attrs = {}) {
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

function reportLabel(question, report) {
  const labels = question.labels ?? question.spec.labels;
  const c = checkSpec(question.spec);
  if (c.algorithm === "bernoulli-count/1" && c.words > 1) return `${report} red card${report === 1 ? "" : "s"}`;
  return labels && labels[report] !== undefined ? labels[report] : String(report);
}

function renderQuestion(doc, session, question, index) {
  const qid = `q${index}`;
  const form = el(doc, "form", { class: "question", id: `${qid}-form`, novalidate: true });
  const fieldset = el(doc, "fieldset", { "aria-describedby": `${qid}-how` });
  fieldset.append(el(doc, "legend", { text: question.text }));
  const status = el(doc, "p", { class: "q-status", id: `${qid}-status`, role: "status", "aria-live": "polite" });
  if (question.problem) {
    fieldset.append(el(doc, "p", { class: "error", text: `This question cannot be randomized on this device: ${question.problem}` }));
    form.append(fieldset);
    return { form, done: null, question };
  }
  const labels = question.labels ?? question.spec.labels ?? [];
  const choices = el(doc, "div", { class: "choices" });
  labels.forEach((label, value) => {
    const id = `${qid}-a${value}`;
    choices.append(el(doc, "div", { class: "choice" }, el(doc, "input", { type: "radio", name: qid, id, value, required: true }), el(doc, "label", { for: id, text: label })));
  });
  fieldset.append(choices);
  const info = explain(question.spec, labels.length ? labels : undefined);
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
      fieldset.disabled = true;
      form.classList.add("done");
    }
  };
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const picked = choices.querySelector("input:checked");
    const kept = session.stored(question);
    if (!picked && kept === null) {
      status.textContent = "Choose an answer first.";
      status.className = "q-status error";
      return;
    }
    button.disabled = true;
    status.textContent = "Randomizing and sending…";
    try {
      const result = await session.answer(question, picked ? Number(picked.value) : 0);
      done(result.status, result.report);
    } catch (err) {
      status.textContent = `Not sent: ${err.message} Your device keeps its randomized report and sends the same one when you try again.`;
      status.className = "q-status error";
    } finally {
      button.disabled = false;
    }
  });
  return { form, done, question };
}

async function runRespondent(win) {
  const doc = win.document;
  const statusBox = doc.getElementById("status");
  const say = (text, error = false) => {
    statusBox.textContent = text;
    statusBox.className = error ? "status error" : "status";
  };
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
    fetch: win.fetch.bind(win),
    storage: win.localStorage,
    crypto: win.crypto,
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

async function runInterviewer(win) {
  const doc = win.document;
  const statusBox = doc.getElementById("status");
  const say = (text, error = false) => {
    statusBox.textContent = text;
    statusBox.className = error ? "status error" : "status";
  };
  const m = /^\/interviewer\/([^/]+)\/?$/.exec(win.location.pathname);
  if (!m) return say("No survey in this address (it should end in /interviewer/<survey>).", true);
  const session = new InterviewerSession({ surveyId: decodeURIComponent(m[1]), fetch: win.fetch.bind(win), storage: win.sessionStorage });
  const login = doc.getElementById("login");
  const work = doc.getElementById("work");
  const list = doc.getElementById("protocols");
  const entry = doc.getElementById("entry");

  const show_ = async () => {
    let protocols;
    try {
      protocols = await session.protocols();
    } catch (err) {
      if (err instanceof HttpError && err.status === 401) session.setToken(null);
      login.hidden = false;
      work.hidden = true;
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
    say(`${protocols.length} questions. Read each protocol to the respondent, then enter the reports they produced.`);
  };

  doc.getElementById("login-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const input = doc.getElementById("admin-token");
    session.setToken(input.value.trim());
    input.value = "";
    await show_();
  });
  doc.getElementById("logout").addEventListener("click", () => {
    session.setToken(null);
    login.hidden = false;
    work.hidden = true;
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
