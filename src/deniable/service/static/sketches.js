// sketches.js: the count mean sketches' client (CMS and HCMS, Apple Differential Privacy Team
// 2017, "Learning with Privacy at Scale"; docs/sketches.md, "From devices to the estimate";
// the algorithms in docs/specs.md, "Count mean sketches (schema deniable.cms-spec/1)", and
// a CMS of spec version 2, schema deniable.cms-spec/2: one 16-bit flip field a bit, four a word).
//
// makeSketch(spec) reads the spec the library emits (oracles.cms_spec) and returns a client
// whose randomize(value, words) turns a string and exactly words_per_report BigInt words into
// the report, bit for bit as Python does (tests/js/sketches.test.mjs replays the cms-<i> and
// hcms-<i> cases of tests/vectors/oracles.json, each string's column in every row included).
// Reports come out in the form of the vectors file: CMS [row, packed bits as hex], HCMS the
// integer 2 (j m + l) + b.  Words come from crypto.getRandomValues (randomizer.js's
// randomWords) unless given.
//
// The string hash deniable.cms/1 needs SHA-256.  It is computed here, synchronously, in pure
// JavaScript (FIPS 180-4), not with crypto.subtle.digest: WebCrypto's digest is asynchronous
// (randomize would no longer be a plain function like every other client's randomize) and
// crypto.subtle is absent from pages not served over HTTPS, where crypto.getRandomValues
// still works.  The strings are short (at most max_bytes), so speed does not matter; the test
// checks it against node:crypto over every block boundary.

import { below, deviceClient, packBits, stringBytes, uniform } from "./oracles.js";
import { sha256 } from "./digest.js";
import { SpecError, show } from "./spec.js";

export { sha256 };

export const CMS_SCHEMA = "deniable.cms-spec/1";
/** The schema of a CMS of spec version 2 (16-bit flip fields, four a word). */
export const CMS_SCHEMA_2 = "deniable.cms-spec/2";
/** Both count-mean-sketch schemas (a stream or batch of either is a sketch's). */
export const CMS_SCHEMAS = Object.freeze([CMS_SCHEMA, CMS_SCHEMA_2]);
export const SKETCH_HASH = "deniable.cms/1";

/** The algorithm, report form and bits that move between two strings, per mechanism. */
const SKETCHES = Object.freeze({
  cms: Object.freeze({ algorithm: "count-mean-sketch/1", report: "row-bits", moved: 2 }),
  hcms: Object.freeze({ algorithm: "hadamard-count-mean-sketch/1", report: "row-coefficient-bit", moved: 1 }),
});

export const SKETCH_MECHANISMS = Object.freeze(Object.keys(SKETCHES));

const M64 = (1n << 64n) - 1n;
const TWO53 = 2 ** 53;
/** Spec 2 of CMS: the width of a flip field, the fields of a word. */
const FIELD_BITS = 16;
const FIELDS = 4;
const FIELD_MASK = (1n << 16n) - 1n;

// ---- the string hash deniable.cms/1

const encoder = new TextEncoder();
const PREFIX = encoder.encode(`${SKETCH_HASH}\u0000`);

/** A string's UTF-8 bytes, checked as the library checks them: non-empty, at most maxBytes. */
export function sketchString(value, maxBytes) {
  return stringBytes(value, maxBytes, "the sketches");
}

/** x(s): the top 33 bits of SHA-256("deniable.cms/1" || 0x00 || utf-8 s), big-endian. */
export function sketchDigest(raw) {
  const input = new Uint8Array(PREFIX.length + raw.length);
  input.set(PREFIX);
  input.set(raw, PREFIX.length);
  const d = sha256(input);
  let x = 0n;
  for (let i = 0; i < 8; i++) x = (x << 8n) | BigInt(d[i]);
  return x >> 31n;
}

/** [a_j, b_j] of each row: bytes 0..7 and 8..15, little-endian, of SHA-256("deniable.cms/1:<salt>:<j>"). */
export function rowSeeds(salt, rows) {
  return Array.from({ length: rows }, (_, j) => {
    const d = sha256(encoder.encode(`${SKETCH_HASH}:${salt}:${j}`));
    let a = 0n;
    let b = 0n;
    for (let i = 7; i >= 0; i--) {
      a = (a << 8n) | BigInt(d[i]);
      b = (b << 8n) | BigInt(d[8 + i]);
    }
    return [a, b];
  });
}

/** h_j(s) = ((((a_j x + b_j) mod 2**64) >> 32) m) >> 32. */
function column(seed, x, m) {
  return Number(((((seed[0] * x + seed[1]) & M64) >> 32n) * BigInt(m)) >> 32n);
}

// ---- the spec

function integer(obj, field, name, min, max) {
  const v = obj?.[field];
  if (!Number.isSafeInteger(v) || v < min || v > max) throw new SpecError(name, `must be an integer in ${min}..${max}, got ${show(v)}.`);
  return v;
}

/** Check a count-mean-sketch spec (the fields the client uses); returns its checked form. */
export function checkSketchSpec(spec) {
  if (spec === null || typeof spec !== "object" || Array.isArray(spec)) {
    throw new SpecError("spec", `must be a count-mean-sketch spec object, got ${show(spec)}.`);
  }
  if (!CMS_SCHEMAS.includes(spec.schema)) throw new SpecError("schema", `must be "${CMS_SCHEMA}" or "${CMS_SCHEMA_2}", got ${show(spec.schema)}.`);
  const v2 = spec.schema === CMS_SCHEMA_2;
  if (v2 ? spec.mechanism !== "cms" : !Object.hasOwn(SKETCHES, spec.mechanism)) {
    const allowed = v2 ? `cms for ${CMS_SCHEMA_2}` : SKETCH_MECHANISMS.join(", ");
    throw new SpecError("mechanism", `must be one of ${allowed}, got ${show(spec.mechanism)}.`);
  }
  const kind = v2 ? { ...SKETCHES.cms, algorithm: "count-mean-sketch/2" } : SKETCHES[spec.mechanism];
  if (v2) {
    // spec 2: bit i flips iff 16-bit field i % 4 of flip word i // 4 is below the threshold
    if (spec.parameters?.spec_version !== 2) throw new SpecError("parameters.spec_version", `must be 2 for ${CMS_SCHEMA_2}, got ${show(spec.parameters?.spec_version)}.`);
    if (spec.constants?.field_bits !== FIELD_BITS) throw new SpecError("constants.field_bits", `must be ${FIELD_BITS}, got ${show(spec.constants?.field_bits)}.`);
    if (spec.constants?.fields_per_word !== FIELDS) throw new SpecError("constants.fields_per_word", `must be ${FIELDS}, got ${show(spec.constants?.fields_per_word)}.`);
  } else if (spec.mechanism === "cms" && spec.parameters && Object.hasOwn(spec.parameters, "spec_version")) {
    throw new SpecError("parameters.spec_version", `must be absent for ${CMS_SCHEMA} (spec version 1), got ${show(spec.parameters.spec_version)}.`);
  }
  for (const field of ["algorithm", "report"]) {
    if (spec[field] !== kind[field]) throw new SpecError(field, `must be "${kind[field]}" for ${spec.mechanism}, got ${show(spec[field])}.`);
  }
  if (spec.hash?.family !== SKETCH_HASH) throw new SpecError("hash.family", `must be "${SKETCH_HASH}", got ${show(spec.hash?.family)}.`);
  if (spec.strings?.encoding !== "utf-8") throw new SpecError("strings.encoding", `must be "utf-8", got ${show(spec.strings?.encoding)}.`);
  const k = integer(spec.constants, "rows", "constants.rows", 1, 65536);
  const m = integer(spec.constants, "columns", "constants.columns", 2, 65536);
  if (spec.mechanism === "hcms" && m & (m - 1)) throw new SpecError("constants.columns", `must be a power of two for hcms, got ${m}.`);
  const maxBytes = integer(spec.strings, "max_bytes", "strings.max_bytes", 1, 65536);
  const salt = integer(spec.parameters, "salt", "parameters.salt", 0, 2 ** 32 - 1);
  for (const [field, want] of [["k", k], ["m", m], ["max_bytes", maxBytes]]) {
    if (spec.parameters[field] !== want) throw new SpecError(`parameters.${field}`, `must be ${want} (the constants say so), got ${show(spec.parameters[field])}.`);
  }
  // flip iff word >> 11 < t: 0 < t < 2**52 (a flip probability in (0, 1/2)); spec 2: iff
  // field < t, 0 < t < 2**15
  const grid = v2 ? 2 ** FIELD_BITS : TWO53;
  const t = integer(spec.constants, "flip", "constants.flip", 1, grid / 2 - 1);
  const eps = spec.epsilon;
  const implemented = spec.implemented_epsilon;
  if (typeof eps !== "number" || !(eps > 0) || typeof implemented !== "number" || !(implemented <= eps)) {
    throw new SpecError("implemented_epsilon", `must be a number at most \`epsilon\` (${show(eps)}), got ${show(implemented)}.`);
  }
  // the epsilon the flip threshold implements, moved ln((2**53 - t) / t): never above the
  // stated epsilon (a tampered threshold would weaken privacy).  1e-14 relative covers the
  // last-place difference between JavaScript's and Python's logarithm; one step of t moves
  // epsilon by about 1 / t (below 1e-14 from t > 2**47), so this guards against tampering,
  // it does not re-derive the threshold (the library's tests/test_cms.py does, exactly).
  // Spec 2 states the realized epsilon itself, which this checks the same way.
  const realised = kind.moved * Math.log((grid - t) / t);
  if (realised > eps * (1 + 1e-14)) {
    const power = v2 ? FIELD_BITS : 53;
    throw new SpecError("constants.flip", `must implement at most \`epsilon\` = ${eps} (${kind.moved} ln((2**${power} - t) / t)), got ${t} (epsilon ${realised}).`);
  }
  const words = spec.mechanism !== "cms" ? 3 : v2 ? 1 + Math.ceil(m / FIELDS) : 1 + m;
  if (spec.words_per_report !== words) {
    throw new SpecError("words_per_report", `must be ${words} for ${spec.mechanism} with these constants, got ${show(spec.words_per_report)}.`);
  }
  return { mechanism: spec.mechanism, version: v2 ? 2 : 1, k, m, flip: BigInt(t), salt, maxBytes, words, key: spec.key, seeds: rowSeeds(salt, k) };
}

function popParity(n) {
  let p = 0;
  for (let v = n; v > 0; v >>>= 1) p ^= v & 1;
  return p;
}

/** The report of a string's digest from exactly c.words words (docs/specs.md). */
function report(c, x, w) {
  const row = uniform(w[0], c.k);
  const col = column(c.seeds[row], x, c.m);
  if (c.mechanism === "cms" && c.version === 2) {
    const field = (i) => (w[1 + Math.floor(i / FIELDS)] >> BigInt(FIELD_BITS * (i % FIELDS))) & FIELD_MASK;
    const bits = Array.from({ length: c.m }, (_, i) => Number(i === col) ^ Number(field(i) < c.flip));
    return [row, packBits(bits)];
  }
  if (c.mechanism === "cms") {
    const bits = Array.from({ length: c.m }, (_, i) => Number(i === col) ^ below(w[1 + i], c.flip));
    return [row, packBits(bits)];
  }
  const coef = uniform(w[1], c.m);
  return 2 * (row * c.m + coef) + (popParity(coef & col) ^ below(w[2], c.flip));
}

/**
 * The client of one count mean sketch from its spec (schema "deniable.cms-spec/1", or
 * "deniable.cms-spec/2" for a CMS of spec version 2):
 * { spec, mechanism, key, rows, columnsCount, wordsPerReport, epsilon, columns(value),
 * randomize(value, words), randomizeValue(value[, cryptoImpl]) }.  A value that is not a
 * non-empty string of at most max_bytes UTF-8 bytes, or the wrong number of words, throws a
 * SpecError naming `value` or `words`; the spec's fields are checked by name first.
 */
export function makeSketch(spec) {
  const c = checkSketchSpec(spec);
  const digest = (value) => sketchDigest(sketchString(value, c.maxBytes));
  const columns = (value) => {
    const x = digest(value);
    return c.seeds.map((seed) => column(seed, x, c.m));
  };
  const fields = { mechanism: c.mechanism, key: c.key, rows: c.k, columnsCount: c.m };
  return deviceClient(spec, c, c.words, fields, digest, (value, x, words) => report(c, x, words), { columns });
}
