// sketches.js: the count mean sketches' client (CMS and HCMS, Apple Differential Privacy Team
// 2017, "Learning with Privacy at Scale"; docs/sketches.md, "From devices to the estimate";
// the algorithms in docs/specs.md, "Count mean sketches (schema deniable.cms-spec/1)").
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

import { below, checkWords, packBits, uniform } from "./oracles.js";
import { randomWords } from "./randomizer.js";
import { SpecError, show, kindOf } from "./spec.js";

export const CMS_SCHEMA = "deniable.cms-spec/1";
export const SKETCH_HASH = "deniable.cms/1";

/** The algorithm, report form and bits that move between two strings, per mechanism. */
const SKETCHES = Object.freeze({
  cms: Object.freeze({ algorithm: "count-mean-sketch/1", report: "row-bits", moved: 2 }),
  hcms: Object.freeze({ algorithm: "hadamard-count-mean-sketch/1", report: "row-coefficient-bit", moved: 1 }),
});

export const SKETCH_MECHANISMS = Object.freeze(Object.keys(SKETCHES));

const M64 = (1n << 64n) - 1n;
const TWO53 = 2 ** 53;

// ---- SHA-256 (FIPS 180-4)

const K256 = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);
const H256 = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];

const rotr32 = (x, n) => (x >>> n) | (x << (32 - n));

/** SHA-256 of `bytes` (a Uint8Array): 32 bytes. */
export function sha256(bytes) {
  const blocks = Math.ceil((bytes.length + 9) / 64);
  const padded = new Uint8Array(64 * blocks);
  padded.set(bytes);
  padded[bytes.length] = 0x80;
  const view = new DataView(padded.buffer);
  const bits = bytes.length * 8; // the length in bits, big-endian in the last 8 bytes
  view.setUint32(padded.length - 8, Math.floor(bits / 2 ** 32));
  view.setUint32(padded.length - 4, bits >>> 0);
  const h = [...H256];
  const w = new Uint32Array(64);
  for (let b = 0; b < blocks; b++) {
    for (let t = 0; t < 16; t++) w[t] = view.getUint32(64 * b + 4 * t);
    for (let t = 16; t < 64; t++) {
      const s0 = rotr32(w[t - 15], 7) ^ rotr32(w[t - 15], 18) ^ (w[t - 15] >>> 3);
      const s1 = rotr32(w[t - 2], 17) ^ rotr32(w[t - 2], 19) ^ (w[t - 2] >>> 10);
      w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    let [a, bb, c, d, e, f, g, hh] = h;
    for (let t = 0; t < 64; t++) {
      const t1 = (hh + (rotr32(e, 6) ^ rotr32(e, 11) ^ rotr32(e, 25)) + ((e & f) ^ (~e & g)) + K256[t] + w[t]) >>> 0;
      const t2 = ((rotr32(a, 2) ^ rotr32(a, 13) ^ rotr32(a, 22)) + ((a & bb) ^ (a & c) ^ (bb & c))) >>> 0;
      [hh, g, f, e, d, c, bb, a] = [g, f, e, (d + t1) >>> 0, c, bb, a, (t1 + t2) >>> 0];
    }
    for (const [i, x] of [a, bb, c, d, e, f, g, hh].entries()) h[i] = (h[i] + x) >>> 0;
  }
  const out = new Uint8Array(32);
  const outView = new DataView(out.buffer);
  h.forEach((x, i) => outView.setUint32(4 * i, x));
  return out;
}

// ---- the string hash deniable.cms/1

const encoder = new TextEncoder();
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const PREFIX = encoder.encode(`${SKETCH_HASH}\u0000`);

/** A string's UTF-8 bytes, checked as the library checks them: non-empty, at most maxBytes. */
export function sketchString(value, maxBytes) {
  if (typeof value !== "string") throw new SpecError("value", `must be a string (the sketches report strings), got ${kindOf(value)}.`);
  if (LONE_SURROGATE.test(value)) throw new SpecError("value", "must be valid Unicode (no lone surrogates).");
  const raw = encoder.encode(value);
  if (raw.length === 0) throw new SpecError("value", "must be a non-empty string, got an empty one.");
  if (raw.length > maxBytes) throw new SpecError("value", `must be at most max_bytes = ${maxBytes} bytes in UTF-8, got ${raw.length} bytes.`);
  return raw;
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
  if (spec.schema !== CMS_SCHEMA) throw new SpecError("schema", `must be "${CMS_SCHEMA}", got ${show(spec.schema)}.`);
  if (!Object.hasOwn(SKETCHES, spec.mechanism)) {
    throw new SpecError("mechanism", `must be one of ${SKETCH_MECHANISMS.join(", ")}, got ${show(spec.mechanism)}.`);
  }
  const kind = SKETCHES[spec.mechanism];
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
  // flip iff word >> 11 < t: 0 < t < 2**52 (a flip probability in (0, 1/2))
  const t = integer(spec.constants, "flip", "constants.flip", 1, TWO53 / 2 - 1);
  const eps = spec.epsilon;
  const implemented = spec.implemented_epsilon;
  if (typeof eps !== "number" || !(eps > 0) || typeof implemented !== "number" || !(implemented <= eps)) {
    throw new SpecError("implemented_epsilon", `must be a number at most \`epsilon\` (${show(eps)}), got ${show(implemented)}.`);
  }
  // the epsilon the flip threshold implements, moved ln((2**53 - t) / t): never above the
  // stated epsilon (a tampered threshold would weaken privacy).  1e-14 relative covers the
  // last-place difference between JavaScript's and Python's logarithm; one step of t moves
  // epsilon by about 1 / t (below 1e-14 from t > 2**47), so this guards against tampering,
  // it does not re-derive the threshold (the library's tests/test_cms.py does, exactly)
  const realised = kind.moved * Math.log((TWO53 - t) / t);
  if (realised > eps * (1 + 1e-14)) {
    throw new SpecError("constants.flip", `must implement at most \`epsilon\` = ${eps} (${kind.moved} ln((2**53 - t) / t)), got ${t} (epsilon ${realised}).`);
  }
  const words = spec.mechanism === "cms" ? 1 + m : 3;
  if (spec.words_per_report !== words) {
    throw new SpecError("words_per_report", `must be ${words} for ${spec.mechanism} with these constants, got ${show(spec.words_per_report)}.`);
  }
  return { mechanism: spec.mechanism, k, m, flip: BigInt(t), salt, maxBytes, words, key: spec.key, seeds: rowSeeds(salt, k) };
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
  if (c.mechanism === "cms") {
    const bits = Array.from({ length: c.m }, (_, i) => Number(i === col) ^ below(w[1 + i], c.flip));
    return [row, packBits(bits)];
  }
  const coef = uniform(w[1], c.m);
  return 2 * (row * c.m + coef) + (popParity(coef & col) ^ below(w[2], c.flip));
}

/**
 * The client of one count mean sketch from its spec (schema "deniable.cms-spec/1"):
 * { spec, mechanism, key, rows, columnsCount, wordsPerReport, epsilon, columns(value),
 * randomize(value, words), randomizeValue(value[, cryptoImpl]) }.  A value that is not a
 * non-empty string of at most max_bytes UTF-8 bytes, or the wrong number of words, throws a
 * SpecError naming `value` or `words`; the spec's fields are checked by name first.
 */
export function makeSketch(spec) {
  const c = checkSketchSpec(spec);
  const digest = (value) => sketchDigest(sketchString(value, c.maxBytes));
  const randomize = (value, words) => report(c, digest(value), checkWords(words, c.words));
  return Object.freeze({
    spec,
    mechanism: c.mechanism,
    key: c.key,
    rows: c.k,
    columnsCount: c.m,
    wordsPerReport: c.words,
    epsilon: spec.epsilon,
    columns: (value) => {
      const x = digest(value);
      return c.seeds.map((seed) => column(seed, x, c.m));
    },
    randomize,
    randomizeValue: (value, cryptoImpl = globalThis.crypto) => {
      const x = digest(value); // checked before any word is drawn
      return report(c, x, randomWords(c.words, cryptoImpl));
    },
    checked: c,
  });
}
