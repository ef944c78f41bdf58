// ngram.js: RAPPOR n-gram discovery's device client (Fanti, Pihur & Erlingsson 2016,
// "Building a RAPPOR with the Unknown"; docs/rappor.md, "n-gram discovery"; the algorithm in
// docs/specs.md, "RAPPOR n-gram discovery (schema deniable.rappor-ngram-spec/1)").
//
// makeNgram(spec) reads the spec the library emits (oracles.rappor_ngram_spec) and returns
// a client whose randomize(value, words) turns a string and exactly words_per_report BigInt
// words into the device's report { pairs, ngrams: [[label, cohort, hex], ...], full: [cohort,
// hex] | null }, bit for bit as Python's rappor_ngram_device_reports does
// (tests/js/ngram.test.mjs replays every case of tests/vectors/rappor_ngram.json).  Word 0
// is the device's cohort word, the next C words the keys of the C position pairs (the
// `pairs` smallest chosen: independent of the string), then each n-gram "<j>:<n-gram>" and
// the full string go through RAPPOR (oraclesrappor.js) with 2 m words each.  Every PRR is
// drawn afresh (one collection; the spec's `memoization`).  Words come from
// crypto.getRandomValues (randomizer.js's randomWords) unless given.

import { LONE_SURROGATE, deviceClient } from "./oracles.js";
import { bloomBits, checkRapporSpec, cohortOf, rapporInstantaneous, rapporPermanent } from "./oraclesrappor.js";
import { SpecError, fieldInteger, show, underField } from "./spec.js";

export const NGRAM_SCHEMA = "deniable.rappor-ngram-spec/1";
export const NGRAM_ALGORITHM = "rappor-ngram/1";


/** A RAPPOR client's checked spec from the field `name`, its errors named under that field. */
function rapporOf(spec, name) {
  return underField(name, () => {
    const c = checkRapporSpec(spec[name]);
    if (typeof spec[name].epsilon !== "number" || !(spec[name].epsilon > 0)) {
      throw new SpecError("epsilon", `must be a positive number, got ${show(spec[name].epsilon)}.`);
    }
    return { ...c, epsilon: spec[name].epsilon };
  });
}

/** Check a RAPPOR n-gram spec (the fields the client uses, both RAPPOR specs whole); returns its checked form. */
export function checkNgramSpec(spec) {
  if (spec === null || typeof spec !== "object" || Array.isArray(spec)) {
    throw new SpecError("spec", `must be a RAPPOR n-gram spec object, got ${show(spec)}.`);
  }
  if (spec.schema !== NGRAM_SCHEMA) throw new SpecError("schema", `must be "${NGRAM_SCHEMA}", got ${show(spec.schema)}.`);
  if (spec.mechanism !== "rappor-ngram") throw new SpecError("mechanism", `must be "rappor-ngram", got ${show(spec.mechanism)}.`);
  if (spec.algorithm !== NGRAM_ALGORITHM) throw new SpecError("algorithm", `must be "${NGRAM_ALGORITHM}", got ${show(spec.algorithm)}.`);
  if (spec.report !== "pairs-ngrams-full") throw new SpecError("report", `must be "pairs-ngrams-full", got ${show(spec.report)}.`);
  const p = spec.parameters;
  if (p === null || typeof p !== "object" || Array.isArray(p)) throw new SpecError("parameters", `must be an object, got ${show(p)}.`);
  const gram = fieldInteger(p, "gram", "parameters.gram", 1, 8);
  const length = fieldInteger(p, "length", "parameters.length", 2 * gram, 64);
  if (length % gram) throw new SpecError("parameters.length", `must be a multiple of \`gram\` (${gram}), got ${length}.`);
  const pad = p.pad;
  if (typeof pad !== "string" || Array.from(pad).length !== 1 || pad === "\u0000" || LONE_SURROGATE.test(pad)) {
    throw new SpecError("parameters.pad", `must be one character other than NUL, got ${show(pad)}.`);
  }
  const alphabet = p.alphabet;
  const chars = typeof alphabet === "string" ? Array.from(alphabet) : null;
  if (chars === null || chars.length < 1 || new Set(chars).size !== chars.length || chars.includes(pad) || chars.includes("\u0000") || LONE_SURROGATE.test(alphabet)) {
    throw new SpecError("parameters.alphabet", `must be a string of distinct characters without \`pad\` or NUL, got ${show(alphabet)}.`);
  }
  const positions = length / gram;
  if (spec.positions !== positions) throw new SpecError("positions", `must be length / gram = ${positions}, got ${show(spec.positions)}.`);
  const all = [];
  for (let a = 0; a < positions; a++) for (let b = a + 1; b < positions; b++) all.push([a, b]);
  if (spec.position_pairs !== all.length) throw new SpecError("position_pairs", `must be G (G - 1) / 2 = ${all.length}, got ${show(spec.position_pairs)}.`);
  const pairs = fieldInteger(p, "pairs", "parameters.pairs", 1, all.length);
  const s = spec.strings;
  if (s?.encoding !== "utf-8" || s?.unit !== "characters") throw new SpecError("strings", `must say utf-8 characters, got ${show(s)}.`);
  for (const [field, want] of [["max_length", length], ["alphabet", alphabet], ["pad", pad]]) {
    if (s[field] !== want) throw new SpecError(`strings.${field}`, `must be ${show(want)} (the parameters say so), got ${show(s[field])}.`);
  }
  const ngram = rapporOf(spec, "ngram_report");
  const full = spec.full_report === null ? null : rapporOf(spec, "full_report");
  const words = { cohort: 1, pair_keys: all.length, ngrams: 4 * pairs * ngram.m, full: full === null ? 0 : 2 * full.m };
  for (const [field, want] of Object.entries(words)) {
    if (spec.words?.[field] !== want) throw new SpecError(`words.${field}`, `must be ${want}, got ${show(spec.words?.[field])}.`);
  }
  const total = 1 + all.length + words.ngrams + words.full;
  if (spec.words_per_report !== total) throw new SpecError("words_per_report", `must be 1 + C + 4 pairs m + 2 m_full = ${total}, got ${show(spec.words_per_report)}.`);
  // epsilon: basic composition of the reports' one-report epsilons, as the library adds
  // them; a spec stating less than its reports cost is refused
  const eps = 2 * pairs * ngram.epsilon + (full === null ? 0 : full.epsilon);
  if (typeof spec.epsilon !== "number" || !(spec.epsilon >= eps)) {
    throw new SpecError("epsilon", `must be a number at least 2 pairs eps(ngram) + eps(full) = ${show(eps)}, got ${show(spec.epsilon)}.`);
  }
  return { key: spec.key, gram, length, pad, chars, positions, all, pairs, ngram, full, words: total };
}

/** The characters of a value, checked as the library checks them. */
function charsOf(c, value) {
  if (typeof value !== "string") throw new SpecError("value", `must be a string (RAPPOR n-grams report strings), got ${show(value)}.`);
  if (LONE_SURROGATE.test(value)) throw new SpecError("value", "must be valid Unicode (no lone surrogates).");
  const chars = Array.from(value);
  if (chars.length < 1 || chars.length > c.length) throw new SpecError("value", `must hold 1..${c.length} characters (\`length\`), got ${chars.length}.`);
  const bad = chars.findIndex((ch) => !c.chars.includes(ch));
  if (bad >= 0) throw new SpecError("value", `must hold characters of the alphabet, got one that is not at character ${bad}.`);
  return chars;
}

/** One RAPPOR report [cohort, hex] of `value` from 2 m words (PRR, then IRR). */
function rapporReport(r, cohort, value, words) {
  const prr = rapporPermanent(r, bloomBits(r, cohort, value), words.slice(0, r.m));
  return rapporInstantaneous(r, prr, words.slice(r.m, 2 * r.m));
}

/** The report of a checked value from exactly c.words words (docs/specs.md). */
function report(c, value, chars, words) {
  const C = c.all.length;
  const keys = words.slice(1, 1 + C);
  const order = keys.map((_, t) => t).sort((a, b) => (keys[a] < keys[b] ? -1 : keys[a] > keys[b] ? 1 : a - b));
  const pairs = order.slice(0, c.pairs).map((t) => [...c.all[t]]);
  const padded = [...chars, ...Array(c.length - chars.length).fill(c.pad)];
  const cohort = cohortOf(c.ngram, words[0]);
  const ngrams = [];
  let at = 1 + C;
  for (const pair of pairs) {
    for (const j of pair) {
      const label = `${j}:${padded.slice(j * c.gram, (j + 1) * c.gram).join("")}`;
      ngrams.push([label, cohort, rapporReport(c.ngram, cohort, label, words.slice(at, at + 2 * c.ngram.m))]);
      at += 2 * c.ngram.m;
    }
  }
  let full = null;
  if (c.full !== null) {
    const fc = cohortOf(c.full, words[0]);
    full = [fc, rapporReport(c.full, fc, value, words.slice(at))];
  }
  return { pairs, ngrams, full };
}

/**
 * The device client of RAPPOR n-gram discovery from its spec (schema
 * "deniable.rappor-ngram-spec/1"): { spec, key, positions, pairs, wordsPerReport, epsilon,
 * randomize(value, words), randomizeValue(value[, cryptoImpl]) }.  A value that is not a
 * string of 1..length characters of the alphabet, or the wrong number of words, throws a
 * SpecError naming `value` or `words`; the spec's fields are checked by name first.
 */
export function makeNgram(spec) {
  const c = checkNgramSpec(spec);
  const fields = { key: c.key, positions: c.positions, pairs: c.pairs };
  return deviceClient(spec, c, c.words, fields, (value) => charsOf(c, value), (value, chars, words) => report(c, value, chars, words));
}
