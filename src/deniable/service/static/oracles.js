// oracles.js: the browser client of deniable's frequency oracles (docs/telemetry.md, "The
// browser client"; the algorithms in docs/specs.md, "Frequency oracles").
//
// makeOracle(spec) reads the spec the library emits (oracles.oracle_spec, schema
// "deniable.oracle/1"; for k-ary randomized response, GRR, the question spec of the design
// "categorical" with uniform forcing) and returns a client whose randomize(value, words)
// turns a value and exactly words_per_report BigInt words into the report, bit for bit as
// Python does: tests/js/oracles.test.mjs replays every case of tests/vectors/oracles.json.
// Reports come out in the form of the vectors file (packed bits as a hex string, hashed
// reports as [a, b, y] with a and b decimal strings).  The longitudinal oracles keep their
// permanent responses on the device: see oraclesmemo.js.  Words come from
// crypto.getRandomValues (randomizer.js's randomWords) unless given.

import { randomWords, randomize as randomizeAnswer } from "./randomizer.js";
import { SpecError, checkSpec, show, kindOf } from "./spec.js";

export const ORACLE_SCHEMA = "deniable.oracle/1";

/** The report form of each algorithm (docs/specs.md, "Reports and the vectors file"). */
const REPORTS = Object.freeze({
  "symmetric-unary/1": "packed-bits",
  "optimized-unary/1": "packed-bits",
  "local-hashing/1": "hash-bucket",
  "linear-local-hashing/1": "linear-hash",
  "hadamard-response/1": "row-bit",
  "subset-selection/1": "packed-bits",
  "longitudinal-grr/1": "value",
  "longitudinal-unary/1": "packed-bits",
  "loloha/1": "hash-bucket",
});

export const ORACLE_ALGORITHMS = Object.freeze(Object.keys(REPORTS));

const M64 = (1n << 64n) - 1n;
const ONE = 1n << 53n;

function bitLength(n) {
  return n.toString(2).length;
}

/** below(word, t) = (word >> 11) < t, as 0 or 1. */
export function below(word, t) {
  return Number(word >> 11n < t);
}

/** uniform(word, m): multiply-shift onto 0..m-1 (docs/specs.md). */
export function uniform(word, m) {
  const e = bitLength(m) - 1;
  if (2 ** e === m) return e === 0 ? 0 : Number(word >> BigInt(64 - e));
  const b = BigInt(64 - bitLength(m));
  return Number(((word >> (64n - b)) * BigInt(m)) >> b);
}

/** keep ? x : other, by arithmetic (keep is 0 or 1; x and other numbers or both BigInt). */
function select(keep, x, other) {
  return typeof x === "bigint" ? other + BigInt(keep) * (x - other) : other + keep * (x - other);
}

/** One round of k-ary randomized response: x if below(keepWord, keep), else uniform. */
export function keepOrUniform(x, keepWord, word, keep, m) {
  return select(below(keepWord, keep), x, uniform(word, m));
}

/** Multiply-add-shift bucket of local hashing (docs/specs.md). */
export function bucketOf(a, b, x, g) {
  return Number((((((a * BigInt(x)) + b) & M64) >> 32n) * BigInt(g)) >> 32n);
}

function parity(big) {
  let p = 0;
  for (let v = big; v > 0n; v >>= 1n) p ^= Number(v & 1n);
  return p;
}

/** k bits (numbers 0/1) packed as the vectors give them: hex, bit j at bit j % 8 of byte j // 8. */
export function packBits(bits) {
  const bytes = new Uint8Array(Math.ceil(bits.length / 8));
  for (let j = 0; j < bits.length; j++) bytes[j >> 3] |= bits[j] << (j & 7);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** PRR bits of unary encoding: bit j set with p (j = x) or q, one word a bit. */
export function unaryRound(x, words, p, q) {
  return words.map((w, j) => below(w, select(Number(j === x), p, q)));
}

function integer(c, field, min, max = Number.MAX_SAFE_INTEGER) {
  const v = c[field];
  if (!Number.isSafeInteger(v) || v < min || v > max) {
    throw new SpecError(`constants.${field}`, `must be an integer in ${min}..${max}, got ${show(v)}.`);
  }
  return v;
}

function threshold(c, field) {
  return BigInt(integer(c, field, 0, Number(ONE)));
}

/** The checked constants of an oracle spec and the words a report takes. */
function checkConstants(algorithm, k, c) {
  const out = { k };
  if (algorithm === "symmetric-unary/1" || algorithm === "optimized-unary/1") {
    out.bits = integer(c, "bits", 1, 53);
    out.set = BigInt(integer(c, "set", 0, 2 ** out.bits));
    out.lanes = Math.ceil(k / 64);
    out.words = out.bits * out.lanes + (algorithm === "optimized-unary/1" ? 1 : 0);
  } else if (algorithm === "local-hashing/1") {
    out.g = integer(c, "buckets", 2);
    out.keep = threshold(c, "keep");
    out.words = 4;
  } else if (algorithm === "linear-local-hashing/1") {
    out.g = integer(c, "buckets", 2, 2 ** 53);
    out.l = bitLength(out.g) - 1;
    if (2 ** out.l !== out.g) throw new SpecError("constants.buckets", `must be a power of two, got ${out.g}.`);
    out.keep = threshold(c, "keep");
    out.L = Math.max(1, bitLength(k - 1));
    out.R = Math.floor(64 / out.L);
    out.m = integer(c, "report_words", 1);
    for (const [field, want] of [["value_bits", out.L], ["rows_per_word", out.R]]) {
      if (c[field] !== want) throw new SpecError(`constants.${field}`, `must be ${want} for k = ${k}, got ${show(c[field])}.`);
    }
    out.words = Math.ceil(out.l / out.R) + 2;
    const yAfterRows = (((out.l - 1) % out.R) + 1) * out.L + out.l <= 64;
    const m = Math.ceil(out.l / out.R) + (yAfterRows ? 0 : 1);
    if (out.m !== m) throw new SpecError("constants.report_words", `must be ${m} for k = ${k} and ${out.g} buckets, got ${out.m}.`);
  } else if (algorithm === "hadamard-response/1") {
    out.rows = integer(c, "rows", 2);
    out.e = bitLength(out.rows) - 1;
    if (2 ** out.e !== out.rows || out.rows < k) throw new SpecError("constants.rows", `must be a power of two at least k = ${k}, got ${out.rows}.`);
    out.flip = threshold(c, "flip");
    out.words = 2;
  } else if (algorithm === "subset-selection/1") {
    out.d = integer(c, "size", 1, k - 1);
    out.include = threshold(c, "include");
    out.words = 1 + out.d;
  } else if (algorithm === "longitudinal-grr/1") {
    out.keep1 = threshold(c, "keep_1");
    out.keep2 = threshold(c, "keep_2");
    out.words = 4;
  } else if (algorithm === "longitudinal-unary/1") {
    for (const f of ["p1", "q1", "p2", "q2"]) out[f] = threshold(c, f);
    out.words = 2 * k;
  } else {
    out.g = integer(c, "buckets", 2, k);
    out.keep1 = threshold(c, "keep_1");
    out.keep2 = threshold(c, "keep_2");
    out.words = 6;
  }
  return out;
}

/** Check an oracle spec (the fields the client uses); returns its checked form. */
export function checkOracleSpec(spec) {
  if (spec === null || typeof spec !== "object" || Array.isArray(spec)) {
    throw new SpecError("spec", `must be an oracle spec object, got ${show(spec)}.`);
  }
  if (spec.schema !== ORACLE_SCHEMA) throw new SpecError("schema", `must be "${ORACLE_SCHEMA}", got ${show(spec.schema)}.`);
  if (!ORACLE_ALGORITHMS.includes(spec.algorithm)) {
    throw new SpecError("algorithm", `must be one of ${ORACLE_ALGORITHMS.join(", ")}, got ${show(spec.algorithm)}.`);
  }
  if (spec.report !== REPORTS[spec.algorithm]) {
    throw new SpecError("report", `must be "${REPORTS[spec.algorithm]}" for ${spec.algorithm}, got ${show(spec.report)}.`);
  }
  if (!Number.isSafeInteger(spec.k) || spec.k < 2) throw new SpecError("k", `must be an integer >= 2, got ${show(spec.k)}.`);
  if (spec.constants === null || typeof spec.constants !== "object") {
    throw new SpecError("constants", `must be an object, got ${show(spec.constants)}.`);
  }
  const eps = spec.epsilon;
  const implemented = spec.implemented_epsilon;
  if (typeof eps !== "number" || !(eps > 0) || typeof implemented !== "number" || !(implemented <= eps)) {
    throw new SpecError("implemented_epsilon", `must be a number at most \`epsilon\` (${show(eps)}), got ${show(implemented)}.`);
  }
  const c = checkConstants(spec.algorithm, spec.k, spec.constants);
  if (spec.words_per_report !== c.words) {
    throw new SpecError("words_per_report", `must be ${c.words} for ${spec.algorithm} with these constants, got ${show(spec.words_per_report)}.`);
  }
  return { ...c, algorithm: spec.algorithm, key: spec.key, spec };
}

/** The value, checked against the domain: an integer in 0..k-1. */
export function checkValue(value, k) {
  if (!Number.isSafeInteger(value) || value < 0 || value >= k) {
    throw new SpecError("value", `must be an integer in 0..${k - 1}, got ${Number.isInteger(value) ? "one outside" : kindOf(value)} (values are not shown in errors).`);
  }
  return value;
}

const encoder = new TextEncoder();
/** A lone UTF-16 surrogate: a string holding one is not valid Unicode. */
export const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * A reported string's UTF-8 bytes, checked as the library checks them: a string (`who`
 * report strings, the error says) of valid Unicode, non-empty (`why` says why, if given),
 * at most maxBytes.
 */
export function stringBytes(value, maxBytes, who, why = "") {
  if (typeof value !== "string") throw new SpecError("value", `must be a string (${who} report strings), got ${kindOf(value)}.`);
  if (LONE_SURROGATE.test(value)) throw new SpecError("value", "must be valid Unicode (no lone surrogates).");
  const raw = encoder.encode(value);
  if (raw.length === 0) throw new SpecError("value", `must be a non-empty string${why}, got an empty one.`);
  if (raw.length > maxBytes) throw new SpecError("value", `must be at most max_bytes = ${maxBytes} bytes in UTF-8, got ${raw.length} bytes.`);
  return raw;
}

/** Exactly n BigInt words in [0, 2**64). */
export function checkWords(words, n) {
  if (words === null || typeof words !== "object" || typeof words.length !== "number" || words.length !== n) {
    throw new SpecError("words", `must be a list of ${n} BigInt 64-bit words, got ${words?.length ?? show(words)} words.`);
  }
  return Array.from(words, (w, i) => {
    if (typeof w !== "bigint" || w < 0n || w > M64) throw new SpecError(`words[${i}]`, `must be a BigInt in [0, 2**64), got ${show(w)}.`);
    return w;
  });
}

/**
 * A device client, frozen: { spec, ...fields, wordsPerReport: n, epsilon, randomize(value,
 * words), randomizeValue(value[, cryptoImpl]), ...methods, checked: c }.  `check(value)`
 * returns the value's checked form (a SpecError naming `value`) and `draw(value, x, words)`
 * the report from exactly n words; randomize checks the value, then the words, and
 * randomizeValue checks the value before any word is drawn.
 */
export function deviceClient(spec, c, n, fields, check, draw, methods = {}) {
  return Object.freeze({
    spec,
    ...fields,
    wordsPerReport: n,
    epsilon: spec.epsilon,
    randomize: (value, words) => draw(value, check(value), checkWords(words, n)),
    randomizeValue: (value, cryptoImpl = globalThis.crypto) => {
      const x = check(value); // checked before any word is drawn
      return draw(value, x, randomWords(n, cryptoImpl));
    },
    ...methods,
    checked: c,
  });
}

function unary(c, x, w) {
  const bits = [];
  for (let j = 0; j < c.k; j++) {
    const lane = j >> 6;
    const shift = BigInt(j & 63);
    let u = 0n;
    for (let l = 0; l < c.bits; l++) u |= ((w[l * c.lanes + lane] >> shift) & 1n) << BigInt(l);
    bits.push(Number(u >= (1n << BigInt(c.bits)) - c.set));
  }
  if (c.algorithm === "symmetric-unary/1") bits[x] ^= 1;
  else bits[x] = Number(w[w.length - 1] >> 63n);
  return packBits(bits);
}

function linear(c, x, w) {
  const out = new Array(c.m).fill(0n);
  const mask = (1n << BigInt(c.L)) - 1n;
  let bucket = 0;
  for (let r = 0; r < c.l; r++) {
    const word = Math.floor(r / c.R);
    const shift = BigInt((r % c.R) * c.L);
    const row = (w[word] >> shift) & mask;
    out[word] |= row << shift;
    bucket += parity(row & BigInt(x)) * 2 ** r;
  }
  const y = select(below(w[w.length - 2], c.keep), bucket, Number(w[w.length - 1] >> BigInt(64 - c.l)));
  let word = Math.floor((c.l - 1) / c.R);
  let shift = (((c.l - 1) % c.R) + 1) * c.L;
  if (shift + c.l > 64) [word, shift] = [word + 1, 0];
  out[word] |= BigInt(y) << BigInt(shift);
  return out.map(String);
}

function subset(c, x, w) {
  const include = below(w[0], c.include);
  const chosen = new Set(include ? [x] : []);
  for (let s = 0; s < c.d; s++) {
    if (s === 0 && include) continue;
    const j = c.k - 1 - c.d + s;
    const t = uniform(w[1 + s], j + 1);
    const tValue = t + Number(t >= x);
    const jValue = j + Number(j >= x);
    chosen.add(chosen.has(tValue) ? jValue : tValue);
  }
  return packBits(Array.from({ length: c.k }, (_, v) => Number(chosen.has(v))));
}

/** The first report of a value from exactly c.words words (docs/specs.md). */
function report(c, x, w) {
  switch (c.algorithm) {
    case "symmetric-unary/1":
    case "optimized-unary/1":
      return unary(c, x, w);
    case "local-hashing/1":
      return [String(w[0]), String(w[1]), keepOrUniform(bucketOf(w[0], w[1], x, c.g), w[2], w[3], c.keep, c.g)];
    case "linear-local-hashing/1":
      return linear(c, x, w);
    case "hadamard-response/1": {
      const j = Number(w[0] >> BigInt(64 - c.e));
      return 2 * j + (parity(BigInt(j) & BigInt(x)) ^ below(w[1], c.flip));
    }
    case "subset-selection/1":
      return subset(c, x, w);
    case "longitudinal-grr/1":
      return keepOrUniform(keepOrUniform(x, w[0], w[1], c.keep1, c.k), w[2], w[3], c.keep2, c.k);
    case "longitudinal-unary/1": {
      const prr = unaryRound(x, w.slice(0, c.k), c.p1, c.q1);
      return packBits(prr.map((bit, j) => below(w[c.k + j], select(bit, c.p2, c.q2))));
    }
    default: {
      const prr = keepOrUniform(bucketOf(w[0], w[1], x, c.g), w[2], w[3], c.keep1, c.g);
      return [String(w[0]), String(w[1]), keepOrUniform(prr, w[4], w[5], c.keep2, c.g)];
    }
  }
}

/**
 * The client of one oracle from its spec: { spec, k, algorithm, wordsPerReport, epsilon,
 * randomize(value, words), randomizeValue(value[, cryptoImpl]) }.  `spec` is an oracle spec
 * (schema "deniable.oracle/1") or, for GRR, the question spec of "categorical" with uniform
 * forcing (its report is the value 0..k-1).  A value outside 0..k-1 or the wrong number of
 * words throws a SpecError naming `value` or `words`.  Each call of a longitudinal oracle's
 * randomize is a first report (a fresh permanent response); to keep the permanent
 * responses on the device, use oraclesmemo.js.
 */
export function makeOracle(spec) {
  let c;
  let draw;
  if (spec !== null && typeof spec === "object" && spec.schema !== ORACLE_SCHEMA && spec.algorithm === "keep-or-forced/1") {
    const q = checkSpec(spec); // GRR: k-ary randomized response, a question spec
    if (q.forced !== null) throw new SpecError("thresholds.forced", "must be null (uniform forcing) for k-ary randomized response.");
    c = { k: q.truths, words: q.words, algorithm: q.algorithm, key: spec.key };
    draw = (x, w) => randomizeAnswer(spec, x, w);
  } else {
    c = checkOracleSpec(spec);
    draw = (x, w) => report(c, x, w);
  }
  const fields = { k: c.k, algorithm: c.algorithm, key: c.key };
  return deviceClient(spec, c, c.words, fields, (value) => checkValue(value, c.k), (value, x, words) => draw(x, words));
}
