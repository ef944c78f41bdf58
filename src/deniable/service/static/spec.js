// spec.js: checking a question spec (schema "deniable.question/1", docs/specs.md).
//
// checkSpec(spec) refuses a malformed or inconsistent spec with a SpecError naming the
// field, and a spec whose stated epsilon understates what its thresholds implement with a
// PrivacyError; it returns the checked form (thresholds as BigInt) that the randomizer,
// the explanations and the channel use.

import { ONE, channelOf, epsilonOf } from "./channel.js";

export const SPEC_SCHEMA = "deniable.question/1";
export const ALGORITHMS = Object.freeze(["bernoulli-count/1", "keep-or-forced/1", "two-group/2"]);

const MAX_WORDS = 65536; // a sanity bound on words_per_report (a report is a few words)
const MAX_TRUTHS = 2 ** 24; // the largest k of a categorical design (deniable.designs.Categorical)

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

/** The integer `obj[field]` in min..max, else a SpecError naming `name` (the field's path in a spec). */
export function fieldInteger(obj, field, name, min, max) {
  const v = obj?.[field];
  if (!Number.isSafeInteger(v) || v < min || v > max) throw new SpecError(name, `must be an integer in ${min}..${max}, got ${show(v)}.`);
  return v;
}

/** What `check()` returns; a SpecError it throws is named under the spec's field `name` (`name.field`). */
export function underField(name, check) {
  try {
    return check();
  } catch (err) {
    if (err instanceof SpecError) throw new SpecError(`${name}.${err.field}`, err.message.slice(err.field.length + 3));
    throw err;
  }
}

/** A spec whose stated epsilon understates what its thresholds implement. */
export class PrivacyError extends SpecError {
  constructor(field, message) {
    super(field, message);
    this.name = "PrivacyError";
  }
}

/**
 * Check the labels of a question's answers: `answers` distinct non-empty strings (the
 * checked spec's `answers`: 2 for a two-group design, else `truths`).
 */
export function checkLabels(labels, answers, field = "labels") {
  if (!Array.isArray(labels) || labels.length !== answers || !labels.every((s) => typeof s === "string" && s.length > 0)) {
    throw new SpecError(field, `must be a list of ${answers} non-empty strings (one per answer), got ${show(labels)}.`);
  }
  if (new Set(labels).size !== labels.length) throw new SpecError(field, `must be distinct, got ${show(labels)}.`);
}

/** A value as the error messages quote it (JSON where it can be). */
// A respondent's answer or a device's value is never quoted in an error (an error may be
// logged or sent on): its kind only.
export function kindOf(value) {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "number" && !Number.isFinite(value)) return "a non-finite number";
  if (value === undefined) return "undefined";
  const type = typeof value; // "an object", "a string": the article by the word's first letter
  return `${"aeiou".includes(type[0]) ? "an" : "a"} ${type}`;
}

export function show(value) {
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
    if (truths > MAX_TRUTHS) throw new SpecError("truths", `must be at most ${MAX_TRUTHS} (2**24) for ${algorithm}, got ${truths}.`);
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

  checked.answers = twoGroup ? 2 : truths;
  if ("labels" in spec) checkLabels(spec.labels, checked.answers);
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

/** The report distribution of each input: channel(spec)[input][report] (floating point). */
export function channel(spec) {
  return channelOf(checkSpec(spec));
}

/** The epsilon the spec's thresholds implement (Infinity for a deterministic path). */
export function channelEpsilon(spec) {
  return epsilonOf(checkSpec(spec));
}
