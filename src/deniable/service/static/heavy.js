// heavy.js: the heavy-hitter protocols' device client (PEM, Wang et al. 2019; TreeHist,
// Bassily, Nissim, Stemmer & Thakurta 2017; docs/heavy-hitters.md, "Devices and streams"; the
// algorithm in docs/specs.md, "Heavy hitters (schema deniable.heavy-spec/1)").
//
// makeHeavy(spec) reads the spec the library emits (oracles.heavy_spec) and returns a client
// whose randomize(value, words) turns a string and exactly words_per_report BigInt words into
// the device's record [group, row words ..., bucket] (every word a decimal string), bit for
// bit as Python's heavy_device_records does (tests/js/heavy.test.mjs replays every case of
// tests/vectors/heavy.json).  The group comes from the first word and does not depend on the
// string; the string's prefix of its group's length goes through linear-hash OLH.  Words come
// from crypto.getRandomValues (randomizer.js's randomWords) unless given.  A spec with an
// alphabet (strings.alphabet, the bytes a string may contain, sorted, as hex) makes the client
// refuse a string with another byte before any word is drawn; the report rule is unchanged.

import { below, deviceClient, stringBytes, uniform } from "./oracles.js";
import { SpecError, fieldInteger, show } from "./spec.js";

export const HEAVY_SCHEMA = "deniable.heavy-spec/1";
export const HEAVY_ALGORITHM = "prefix-linear-hashing/1";
export const HEAVY_MECHANISMS = Object.freeze(["pem", "treehist"]);

const M64 = (1n << 64n) - 1n;
const TWO53 = 2 ** 53;

/** The prefix lengths the parameters imply: PEM start, start + step, ..., then 8 max_bytes; TreeHist 1..8 max_bytes. */
function impliedLevels(mechanism, params, maxBytes) {
  const top = 8 * maxBytes;
  if (mechanism === "treehist") return Array.from({ length: top }, (_, i) => i + 1);
  const start = fieldInteger(params, "start_bits", "parameters.start_bits", 1, Math.min(16, top));
  const step = fieldInteger(params, "step_bits", "parameters.step_bits", 1, 8);
  const out = [];
  for (let s = start; s < top; s += step) out.push(s);
  out.push(top);
  return out;
}

/** Check a heavy-hitter spec (the fields the client uses); returns its checked form. */
export function checkHeavySpec(spec) {
  if (spec === null || typeof spec !== "object" || Array.isArray(spec)) {
    throw new SpecError("spec", `must be a heavy-hitter spec object, got ${show(spec)}.`);
  }
  if (spec.schema !== HEAVY_SCHEMA) throw new SpecError("schema", `must be "${HEAVY_SCHEMA}", got ${show(spec.schema)}.`);
  if (!HEAVY_MECHANISMS.includes(spec.mechanism)) {
    throw new SpecError("mechanism", `must be one of ${HEAVY_MECHANISMS.join(", ")}, got ${show(spec.mechanism)}.`);
  }
  if (spec.algorithm !== HEAVY_ALGORITHM) throw new SpecError("algorithm", `must be "${HEAVY_ALGORITHM}", got ${show(spec.algorithm)}.`);
  if (spec.report !== "group-linear-hash") throw new SpecError("report", `must be "group-linear-hash", got ${show(spec.report)}.`);
  if (spec.hash?.family !== "linear-gf2/1") throw new SpecError("hash.family", `must be "linear-gf2/1", got ${show(spec.hash?.family)}.`);
  if (spec.strings?.encoding !== "utf-8") throw new SpecError("strings.encoding", `must be "utf-8", got ${show(spec.strings?.encoding)}.`);
  const maxBytes = fieldInteger(spec.strings, "max_bytes", "strings.max_bytes", 1, 64);
  if (spec.parameters === null || typeof spec.parameters !== "object") throw new SpecError("parameters", `must be an object, got ${show(spec.parameters)}.`);
  if (spec.parameters.max_bytes !== maxBytes) {
    throw new SpecError("parameters.max_bytes", `must be ${maxBytes} (strings.max_bytes says so), got ${show(spec.parameters.max_bytes)}.`);
  }
  const levels = impliedLevels(spec.mechanism, spec.parameters, maxBytes);
  if (!Array.isArray(spec.levels) || spec.levels.length !== levels.length || spec.levels.some((b, i) => b !== levels[i])) {
    throw new SpecError("levels", `must be [${levels.join(", ")}] for these parameters, got ${show(spec.levels)}.`);
  }
  if (spec.groups !== levels.length) throw new SpecError("groups", `must be ${levels.length} (one a level), got ${show(spec.groups)}.`);
  const g = fieldInteger(spec.constants, "buckets", "constants.buckets", 2, 2 ** 30);
  if (g & (g - 1)) throw new SpecError("constants.buckets", `must be a power of two, got ${g}.`);
  if (spec.parameters.g !== g) throw new SpecError("parameters.g", `must be ${g} (constants.buckets says so), got ${show(spec.parameters.g)}.`);
  const l = Math.log2(g);
  if (spec.constants.rows !== l) throw new SpecError("constants.rows", `must be log2 buckets = ${l}, got ${show(spec.constants.rows)}.`);
  const w = Math.ceil(maxBytes / 8);
  if (spec.constants.words !== w) throw new SpecError("constants.words", `must be ceil(max_bytes / 8) = ${w}, got ${show(spec.constants.words)}.`);
  if (spec.words_per_report !== l * w + 3) {
    throw new SpecError("words_per_report", `must be rows * words + 3 = ${l * w + 3}, got ${show(spec.words_per_report)}.`);
  }
  const alphabet = checkAlphabet(spec);
  const keep = fieldInteger(spec.constants, "keep", "constants.keep", 0, TWO53);
  const eps = spec.epsilon;
  const implemented = spec.implemented_epsilon;
  if (typeof eps !== "number" || !(eps > 0) || typeof implemented !== "number" || !(implemented <= eps)) {
    throw new SpecError("implemented_epsilon", `must be a number at most \`epsilon\` (${show(eps)}), got ${show(implemented)}.`);
  }
  // the epsilon the keep threshold implements, ln(p' / q') = ln(1 + g t / (2**53 - t)): never
  // above the stated one (a tampered threshold would weaken privacy; 1e-14 relative covers
  // the last place of the two languages' logarithms)
  const realised = keep >= TWO53 ? Infinity : Math.log1p((g * keep) / (TWO53 - keep));
  if (realised > eps * (1 + 1e-14)) {
    throw new SpecError("constants.keep", `must implement at most \`epsilon\` = ${eps} (ln(1 + g t / (2**53 - t))), got ${keep} (epsilon ${realised}).`);
  }
  return { mechanism: spec.mechanism, key: spec.key, levels, groups: levels.length, g, l, w, maxBytes, keep: BigInt(keep), words: l * w + 3, alphabet };
}

/** The spec's alphabet (strings.alphabet, the same as parameters.alphabet): a Set of bytes, or null (every byte). */
function checkAlphabet(spec) {
  const hex = spec.strings.alphabet;
  if (hex === undefined && spec.parameters.alphabet === undefined) return null;
  if (typeof hex !== "string" || !/^([0-9a-f]{2})+$/.test(hex) || spec.parameters.alphabet !== hex) {
    throw new SpecError("strings.alphabet", `must be the hex of the alphabet's bytes, as parameters.alphabet (${show(spec.parameters.alphabet)}), got ${show(hex)}.`);
  }
  const bytes = Array.from({ length: hex.length / 2 }, (_, i) => parseInt(hex.slice(2 * i, 2 * i + 2), 16));
  if (bytes.some((b, i) => b === 0 || (i > 0 && b <= bytes[i - 1]))) {
    throw new SpecError("strings.alphabet", `must hold sorted distinct nonzero bytes, got ${show(hex)}.`);
  }
  return new Set(bytes);
}

/** A string's UTF-8 bytes, checked as the library checks them: non-empty, at most maxBytes, no NUL byte. */
export function heavyString(value, maxBytes, alphabet = null) {
  const raw = stringBytes(value, maxBytes, "heavy hitters", " (an empty one is all padding)");
  if (raw.includes(0)) throw new SpecError("value", "must not contain a NUL byte (it could not be told from the padding).");
  if (alphabet !== null) {
    const at = raw.findIndex((b) => !alphabet.has(b));
    if (at >= 0) throw new SpecError("value", `must hold only bytes of the alphabet (strings.alphabet), got one that is not at byte ${at} (the value is not shown).`);
  }
  return raw;
}

/** The string padded with NUL bytes to 8 W bytes, as W big-endian BigInt words. */
function stringWords(raw, w) {
  const out = [];
  for (let i = 0; i < w; i++) {
    let x = 0n;
    for (let b = 0; b < 8; b++) x = (x << 8n) | BigInt(raw[8 * i + b] ?? 0);
    out.push(x);
  }
  return out;
}

/** The mask of a prefix of `bits` bits over W words (left-aligned). */
function prefixMask(bits, w) {
  return Array.from({ length: w }, (_, i) => {
    const inWord = Math.max(0, Math.min(64, bits - 64 * i));
    return inWord === 0 ? 0n : (M64 << BigInt(64 - inWord)) & M64;
  });
}

function parity(x) {
  let p = 0n;
  for (let v = x; v > 0n; v >>= 1n) p ^= v & 1n;
  return Number(p);
}

/** The record of a string's words x from exactly c.words words (docs/specs.md). */
function record(c, x, words) {
  const group = uniform(words[0], c.groups);
  const mask = prefixMask(c.levels[group], c.w);
  const rows = [];
  let bucket = 0;
  for (let r = 0; r < c.l; r++) {
    let acc = 0n;
    for (let i = 0; i < c.w; i++) {
      const a = words[1 + r * c.w + i] & mask[i];
      rows.push(a);
      acc ^= a & x[i] & mask[i];
    }
    bucket += parity(acc) * 2 ** r;
  }
  const keep = below(words[c.words - 2], c.keep);
  const other = Number(words[c.words - 1] >> BigInt(64 - c.l));
  const y = other + keep * (bucket - other); // no branch
  return [String(group), ...rows.map(String), String(y)];
}

/** A 64-bit word given as a decimal string or a BigInt (-1n when it is neither). */
function wordOf(x) {
  const ok = typeof x === "bigint" || (typeof x === "string" && /^(0|[1-9][0-9]*)$/.test(x));
  const v = ok ? BigInt(x) : -1n;
  return v <= M64 ? v : -1n;
}

/**
 * A record [group, row words ..., bucket] (decimal strings or BigInts) checked against the
 * checked spec `c` as the server checks it (distributed/_batch_heavy.py): 2 + l W words,
 * the group in 0..G-1, no row bit past its group's prefix length, the bucket below g.
 * Returns the words as BigInts; a bad one throws a SpecError naming `where`.
 */
export function checkHeavyRecord(c, r, where) {
  const width = 2 + c.l * c.w;
  if (!Array.isArray(r) || r.length !== width) throw new SpecError(where, `must be a heavy-hitter record of ${width} words [group, row words ..., bucket], got ${show(r)}.`);
  const words = r.map((x, i) => {
    const v = wordOf(x);
    if (v < 0n) throw new SpecError(`${where}[${i}]`, `must be a 64-bit word (a decimal string or a BigInt in [0, 2**64)), got ${show(x)}.`);
    return v;
  });
  if (words[0] >= BigInt(c.groups)) throw new SpecError(`${where}[0]`, `must be a group in 0..${c.groups - 1}, got ${words[0]}.`);
  const bits = c.levels[Number(words[0])];
  const mask = prefixMask(bits, c.w);
  for (let i = 1; i < width - 1; i++) {
    if (words[i] & ~mask[(i - 1) % c.w] & M64) throw new SpecError(`${where}[${i}]`, `has a bit past its group's prefix of ${bits} bits.`);
  }
  if (words[width - 1] >= BigInt(c.g)) throw new SpecError(`${where}[${width - 1}]`, `must be a bucket in 0..${c.g - 1}, got ${words[width - 1]}.`);
  return words;
}

/**
 * The device client of one heavy-hitter protocol from its spec (schema
 * "deniable.heavy-spec/1"): { spec, mechanism, key, levels, groups, wordsPerReport, epsilon,
 * randomize(value, words), randomizeValue(value[, cryptoImpl]), prefix(value, group) }.  A value that is not a
 * non-empty string of at most max_bytes UTF-8 bytes without NUL, or the wrong number of
 * words, throws a SpecError naming `value` or `words`; the spec's fields are checked by name
 * first.
 */
export function makeHeavy(spec) {
  const c = checkHeavySpec(spec);
  const encode = (value) => stringWords(heavyString(value, c.maxBytes, c.alphabet), c.w);
  /** The prefix a device of `group` reports: ceil(bits / 8) bytes as hex, the bits past it 0. */
  const prefix = (value, group) => {
    const bits = c.levels[group];
    if (bits === undefined) throw new SpecError("group", `must be a group in 0..${c.groups - 1}, got ${show(group)}.`);
    const mask = prefixMask(bits, c.w);
    const words = encode(value).map((x, i) => (x & mask[i]).toString(16).padStart(16, "0"));
    return words.join("").slice(0, 2 * Math.ceil(bits / 8));
  };
  const fields = { mechanism: c.mechanism, key: c.key, levels: c.levels, groups: c.groups };
  return deviceClient(spec, c, c.words, fields, encode, (value, x, words) => record(c, x, words), { prefix });
}
