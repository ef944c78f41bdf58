// oraclesrappor.js: RAPPOR's randomizer (Erlingsson, Pihur & Korolova 2014) as deniable
// implements it (docs/specs.md, "RAPPOR (schema deniable.rappor-spec/1)"): the Bloom filter
// of a string in a cohort (BLAKE2b, RFC 7693, for the string's digest and the cohort's hash
// seeds), the permanent and the instantaneous response.  Pure functions; a device that keeps
// its cohort and permanent responses is oraclesmemo.js's makeDevice.

import { below, packBits } from "./oracles.js";
import { SpecError, show } from "./spec.js";

export const RAPPOR_SCHEMA = "deniable.rappor-spec/1";
const M64 = (1n << 64n) - 1n;
const IV = [
  0x6a09e667f3bcc908n, 0xbb67ae8584caa73bn, 0x3c6ef372fe94f82bn, 0xa54ff53a5f1d36f1n,
  0x510e527fade682d1n, 0x9b05688c2b3e6c1fn, 0x1f83d9abfb41bd6bn, 0x5be0cd19137e2179n,
];
const SIGMA = [
  [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15], [14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3],
  [11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4], [7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8],
  [9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13], [2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9],
  [12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11], [13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10],
  [6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5], [10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0],
];

const rotr = (x, n) => ((x >> n) | (x << (64n - n))) & M64;

function le64(bytes, at) {
  let out = 0n;
  for (let i = 7; i >= 0; i--) out = (out << 8n) | BigInt(bytes[at + i] ?? 0);
  return out;
}

function compress(h, block, t, last) {
  const v = [...h, ...IV];
  v[12] ^= t & M64;
  v[13] ^= t >> 64n;
  if (last) v[14] ^= M64;
  const m = Array.from({ length: 16 }, (_, i) => le64(block, 8 * i));
  const g = (a, b, c, d, x, y) => {
    v[a] = (v[a] + v[b] + x) & M64;
    v[d] = rotr(v[d] ^ v[a], 32n);
    v[c] = (v[c] + v[d]) & M64;
    v[b] = rotr(v[b] ^ v[c], 24n);
    v[a] = (v[a] + v[b] + y) & M64;
    v[d] = rotr(v[d] ^ v[a], 16n);
    v[c] = (v[c] + v[d]) & M64;
    v[b] = rotr(v[b] ^ v[c], 63n);
  };
  for (let r = 0; r < 12; r++) {
    const s = SIGMA[r % 10];
    g(0, 4, 8, 12, m[s[0]], m[s[1]]);
    g(1, 5, 9, 13, m[s[2]], m[s[3]]);
    g(2, 6, 10, 14, m[s[4]], m[s[5]]);
    g(3, 7, 11, 15, m[s[6]], m[s[7]]);
    g(0, 5, 10, 15, m[s[8]], m[s[9]]);
    g(1, 6, 11, 12, m[s[10]], m[s[11]]);
    g(2, 7, 8, 13, m[s[12]], m[s[13]]);
    g(3, 4, 9, 14, m[s[14]], m[s[15]]);
  }
  for (let i = 0; i < 8; i++) h[i] ^= v[i] ^ v[i + 8];
}

/** BLAKE2b (RFC 7693) of `bytes` (a Uint8Array), `outlen` bytes, no key, a 16-byte person. */
export function blake2b(bytes, outlen, person = new Uint8Array(16)) {
  const h = [...IV];
  h[0] ^= 0x01010000n ^ BigInt(outlen);
  h[6] ^= le64(person, 0);
  h[7] ^= le64(person, 8);
  const blocks = Math.max(1, Math.ceil(bytes.length / 128));
  for (let b = 0; b < blocks; b++) {
    const block = new Uint8Array(128);
    block.set(bytes.subarray(128 * b, 128 * (b + 1)));
    const last = b === blocks - 1;
    compress(h, block, BigInt(last ? bytes.length : 128 * (b + 1)), last);
  }
  const out = new Uint8Array(outlen);
  for (let i = 0; i < outlen; i++) out[i] = Number((h[i >> 3] >> BigInt(8 * (i & 7))) & 0xffn);
  return out;
}

const utf8 = (s) => new TextEncoder().encode(s);
const PERSON = (() => {
  const p = new Uint8Array(16);
  p.set(utf8("deniable-rappor"));
  return p;
})();

/** x(s): the top 33 bits of the string's 8-byte BLAKE2b digest (person "deniable-rappor"). */
export function stringDigest(value) {
  const d = blake2b(utf8(value), 8, PERSON);
  let x = 0n;
  for (const byte of d) x = (x << 8n) | BigInt(byte);
  return x >> 31n;
}

function integer(c, field, min, max) {
  const v = c[field];
  if (!Number.isSafeInteger(v) || v < min || v > max) {
    throw new SpecError(`constants.${field}`, `must be an integer in ${min}..${max}, got ${show(v)}.`);
  }
  return v;
}

/** Check a RAPPOR spec (the fields the client uses); returns its checked form. */
export function checkRapporSpec(spec) {
  if (spec === null || typeof spec !== "object" || spec.schema !== RAPPOR_SCHEMA) {
    throw new SpecError("schema", `must be "${RAPPOR_SCHEMA}", got ${show(spec?.schema)}.`);
  }
  if (spec.algorithm !== "rappor/1") throw new SpecError("algorithm", `must be "rappor/1", got ${show(spec.algorithm)}.`);
  if (spec.report !== "cohort-bits") throw new SpecError("report", `must be "cohort-bits", got ${show(spec.report)}.`);
  if (spec.hash?.family !== "deniable.rappor/1") throw new SpecError("hash.family", `must be "deniable.rappor/1", got ${show(spec.hash?.family)}.`);
  const k = spec.constants ?? {};
  const m = integer(k, "bits", 8, 65536);
  if (m % 8) throw new SpecError("constants.bits", `must be a multiple of 8, got ${m}.`);
  const c = { algorithm: "rappor/1", m, h: integer(k, "hashes", 1, m), cohorts: integer(k, "cohorts", 1, 65536), key: spec.key };
  for (const f of ["f", "p", "q"]) c[f] = BigInt(integer(k, f, 0, 2 ** 53));
  if (!(c.p < c.q)) throw new SpecError("constants.p", `must be below \`constants.q\` (${c.q}), got ${c.p}.`);
  c.pin = `rappor/1{"bits":${m},"cohorts":${c.cohorts},"f":${c.f},"hash":"deniable.rappor/1","hashes":${c.h}}`;
  c.seeds = new Map(); // cohort -> its h hash seeds [a, b]
  return c;
}

/** A device's cohort from one word: ((word >> 32) * cohorts) >> 32. */
export function cohortOf(c, word) {
  return Number(((word >> 32n) * BigInt(c.cohorts)) >> 32n);
}

/** The m Bloom bits (0/1) of a string in a cohort. */
export function bloomBits(c, cohort, value) {
  if (!c.seeds.has(cohort)) {
    const seeds = [];
    for (let i = 0; i < c.h; i++) {
      const d = blake2b(utf8(`deniable.rappor/1:${cohort}:${i}`), 16);
      seeds.push([le64(d, 0), le64(d, 8)]);
    }
    c.seeds.set(cohort, seeds);
  }
  const x = stringDigest(value);
  const bits = new Array(c.m).fill(0);
  for (const [a, b] of c.seeds.get(cohort)) bits[Number(((((a * x + b) & M64) >> 32n) * BigInt(c.m)) >> 32n)] = 1;
  return bits;
}

/** The PRR of Bloom bits from m words: bit j is the coin (word & 1) if below(word, f), else B_j. */
export function rapporPermanent(c, bloom, words) {
  return bloom.map((bit, j) => {
    const keep = 1 - below(words[j], c.f);
    return Number(words[j] & 1n) + keep * (bit - Number(words[j] & 1n));
  });
}

/** The IRR of PRR bits from m words, packed: bit j set if below(word, q) where the PRR is 1, p where 0. */
export function rapporInstantaneous(c, prr, words) {
  return packBits(prr.map((bit, j) => below(words[j], c.p + BigInt(bit) * (c.q - c.p))));
}
