// The count mean sketches' client (sketches.js): every cms-<i> and hcms-<i> case of
// tests/vectors/oracles.json replayed bit for bit (each string's column in every row, then
// every report from its words), SHA-256 against node:crypto, the flip rate of seeded reports
// against the spec's threshold, and bad input refused by name.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { CMS_SCHEMA, CMS_SCHEMA_2, SKETCH_MECHANISMS, makeSketch, rowSeeds, sha256 } from "../../src/deniable/service/static/sketches.js";
import { seededCrypto } from "./_helpers.mjs";

const ORACLES = JSON.parse(readFileSync(new URL("../vectors/oracles.json", import.meta.url), "utf8"));
const CASES = ORACLES.cases.filter((c) => "columns" in c);
const specOf = (id) => structuredClone(CASES.find((c) => c.id === id).spec);
const firstOf = (mechanism) => CASES.find((c) => c.spec.mechanism === mechanism);

test("the vectors file has sketch cases of both mechanisms of schema deniable.cms-spec/1, and CMS of spec 2", () => {
  assert.deepEqual([...new Set(CASES.map((c) => c.spec.mechanism))].sort(), [...SKETCH_MECHANISMS].sort());
  for (const c of CASES) assert.ok([CMS_SCHEMA, CMS_SCHEMA_2].includes(c.spec.schema), c.id);
  const two = CASES.filter((c) => c.spec.schema === CMS_SCHEMA_2);
  assert.deepEqual(two.map((c) => c.id), ["cms-4", "cms-5"]);
  for (const c of two) assert.equal(c.spec.mechanism, "cms", c.id);
});

test("SHA-256 agrees with node:crypto over every padding boundary and non-ASCII text", () => {
  const lengths = [0, 1, 3, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 1000];
  for (const n of lengths) {
    const bytes = Uint8Array.from({ length: n }, (_, i) => (i * 131 + n) & 0xff);
    const want = createHash("sha256").update(bytes).digest("hex");
    assert.equal(Buffer.from(sha256(bytes)).toString("hex"), want, `${n} bytes`);
  }
  // FIPS 180-4's example "abc"
  assert.equal(Buffer.from(sha256(new TextEncoder().encode("abc"))).toString("hex"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
});

test("the row seeds are SHA-256 of \"deniable.cms/1:<salt>:<j>\", bytes 0..7 and 8..15 little-endian", () => {
  const [[a, b]] = rowSeeds(7, 1);
  const d = createHash("sha256").update("deniable.cms/1:7:0").digest();
  assert.equal(a, d.readBigUInt64LE(0));
  assert.equal(b, d.readBigUInt64LE(8));
});

for (const c of CASES) {
  test(`sketch vector ${c.id}: each string's column in every row, then every report bit for bit`, () => {
    const sketch = makeSketch(c.spec);
    for (const [value, cols] of Object.entries(c.columns)) assert.deepEqual(sketch.columns(value), cols, `${c.id}: ${value}`);
    const w = c.spec.words_per_report;
    assert.equal(sketch.wordsPerReport, w);
    assert.equal(c.words.length, w * c.values.length);
    const got = c.values.map((value, i) => sketch.randomize(value, c.words.slice(i * w, (i + 1) * w).map(BigInt)));
    assert.deepEqual(got, c.reports);
  });
}

test("a changed word changes a report: the replay can fail", () => {
  for (const mechanism of SKETCH_MECHANISMS) {
    const c = firstOf(mechanism);
    const sketch = makeSketch(c.spec);
    const w = c.spec.words_per_report;
    const words = c.words.slice(0, w).map(BigInt);
    const flip = BigInt(c.spec.constants.flip) << 11n;
    const last = words.length - 1; // a flip word: flipped iff word >> 11 < flip
    const changed = [...words.slice(0, last), words[last] < flip ? flip : 0n];
    assert.notDeepEqual(sketch.randomize(c.values[0], changed), sketch.randomize(c.values[0], words), mechanism);
  }
});

test("the report of a string from the library's hash: the column from `columns` is the one-hot bit of CMS", () => {
  // with every flip word at 2**64 - 1 (no flip), the CMS report is the one-hot vector of the
  // row's column: the row from the first word (top bits), the column from the vectors' table
  const c = CASES.find((x) => x.id === "cms-1"); // k = 4 rows, m = 8 columns
  const sketch = makeSketch(c.spec);
  const none = (1n << 64n) - 1n;
  for (const [value, cols] of Object.entries(c.columns)) {
    for (let row = 0; row < 4; row++) {
      const words = [BigInt(row) << 62n, ...Array(8).fill(none)];
      const hex = (1 << cols[row]).toString(16).padStart(2, "0");
      assert.deepEqual(sketch.randomize(value, words), [row, hex], `${value} row ${row}`);
    }
  }
});

test("seeded reports flip at the spec's rate: CMS per bit, HCMS the sign bit", () => {
  // 20,000 reports; the flip count is binomial(N, t / 2**53): |z| < 4.5 fails by chance with
  // probability about 7e-6 (the seeds are fixed, so the test is repeatable)
  for (const mechanism of SKETCH_MECHANISMS) {
    const c = firstOf(mechanism);
    const sketch = makeSketch(c.spec);
    const f = c.spec.constants.flip / 2 ** 53;
    const crypto = seededCrypto(mechanism === "cms" ? 11 : 12);
    const n = 20000;
    let flips = 0;
    let trials = 0;
    for (let i = 0; i < n; i++) {
      const value = c.values[i % c.values.length];
      const cols = sketch.columns(value);
      const r = sketch.randomizeValue(value, crypto);
      if (mechanism === "cms") {
        const [row, hex] = r;
        const bits = BigInt(`0x${hex.match(/../g).reverse().join("")}`); // little-endian bytes
        for (let b = 0; b < c.spec.constants.columns; b++) {
          flips += Number((bits >> BigInt(b)) & 1n) ^ Number(b === cols[row]);
          trials += 1;
        }
      } else {
        const m = c.spec.constants.columns;
        const bit = r & 1;
        const cell = r >> 1;
        const row = Math.floor(cell / m);
        const coef = cell % m;
        let parity = 0;
        for (let v = coef & cols[row]; v > 0; v >>= 1) parity ^= v & 1;
        flips += bit ^ parity;
        trials += 1;
      }
    }
    const z = (flips - trials * f) / Math.sqrt(trials * f * (1 - f));
    assert.ok(Math.abs(z) < 4.5, `${mechanism}: ${flips} flips of ${trials}, expected ${trials * f} (z = ${z})`);
    assert.ok(crypto.calls >= n);
  }
});

test("bad strings are refused by name before any word is drawn", () => {
  const sketch = makeSketch(specOf("cms-1")); // max_bytes = 32
  const crypto = seededCrypto(13);
  const words = Array(9).fill(0n);
  for (const [bad, message] of [
    ["", /^`value` must be a non-empty string, got an empty one\.$/],
    ["x".repeat(33), /^`value` must be at most max_bytes = 32 bytes in UTF-8, got 33 bytes\.$/],
    ["\u00fc".repeat(17), /got 34 bytes/],
    ["a\uD800b", /^`value` must be valid Unicode \(no lone surrogates\)\.$/],
    [3, /^`value` must be a string \(the sketches report strings\), got a number\.$/],
    [null, /^`value` must be a string/],
  ]) {
    assert.throws(() => sketch.randomize(bad, words), { name: "SpecError", message }, String(bad));
    assert.throws(() => sketch.randomizeValue(bad, crypto), { name: "SpecError", message }, String(bad));
  }
  assert.equal(crypto.calls, 0);
  assert.doesNotThrow(() => sketch.randomize("x".repeat(32), words));
  assert.doesNotThrow(() => sketch.randomize("\uD83D\uDE00", words)); // a surrogate pair is fine
  assert.throws(() => sketch.randomize("a", words.slice(1)), /: `words` must be a list of 9 BigInt/);
  assert.throws(() => sketch.randomize("a", [...words.slice(1), 2n ** 64n]), /: `words\[8\]` must be a BigInt/);
});

test("a tampered spec is refused by the field it gets wrong", () => {
  const cases = [
    [(s) => (s.schema = "deniable.oracle/1"), /^`schema` must be "deniable.cms-spec\/1"/],
    [(s) => (s.mechanism = "rappor"), /^`mechanism` must be one of cms, hcms, got "rappor"/],
    [(s) => (s.algorithm = "hadamard-count-mean-sketch/1"), /^`algorithm` must be "count-mean-sketch\/1" for cms/],
    [(s) => (s.report = "row-coefficient-bit"), /^`report` must be "row-bits" for cms/],
    [(s) => (s.hash.family = "deniable.rappor/1"), /^`hash.family` must be "deniable.cms\/1"/],
    [(s) => (s.constants.rows = 0), /^`constants.rows` must be an integer in 1\.\.65536, got 0/],
    [(s) => (s.constants.columns = 9), /^`parameters.m` must be 9 \(the constants say so\), got 8/],
    [(s) => (s.parameters.salt = -1), /^`parameters.salt` must be an integer in 0\.\.4294967295/],
    [(s) => (s.strings.max_bytes = 0), /^`strings.max_bytes` must be an integer in 1\.\.65536/],
    [(s) => (s.words_per_report = 8), /^`words_per_report` must be 9 for cms/],
    [(s) => (s.implemented_epsilon = 5), /^`implemented_epsilon` must be a number at most `epsilon`/],
    [(s) => (s.epsilon = "inf"), /^`implemented_epsilon` must be a number/],
    // a smaller flip threshold flips less: a larger epsilon than stated is refused
    [(s) => (s.constants.flip -= 10 ** 6), /^`constants.flip` must implement at most `epsilon` = 4/],
    [(s) => (s.constants.flip = 2 ** 52), /^`constants.flip` must be an integer in 1\.\./],
  ];
  for (const [tamper, message] of cases) {
    const spec = specOf("cms-1");
    tamper(spec);
    assert.throws(() => makeSketch(spec), { name: "SpecError", message }, String(tamper));
  }
  const hcms = specOf("hcms-2");
  hcms.constants.columns = 6;
  hcms.parameters.m = 6;
  assert.throws(() => makeSketch(hcms), /: `constants.columns` must be a power of two for hcms, got 6/);
  assert.throws(() => makeSketch(null), /: `spec` must be a count-mean-sketch spec object/);
  // every spec of the file passes the check (the library's thresholds)
  for (const c of CASES) assert.doesNotThrow(() => makeSketch(c.spec), c.id);
});

// ---- CMS of spec version 2 (deniable.cms-spec/2): 16-bit flip fields, four a word

test("spec 2: bit i reads 16-bit field i % 4 of flip word i // 4; a changed field changes its bit alone", () => {
  const c = CASES.find((x) => x.id === "cms-5"); // k = 5, m = 17: 1 + 5 words, 3 fields unused
  const sketch = makeSketch(c.spec);
  assert.equal(sketch.wordsPerReport, 6);
  const t = BigInt(c.spec.constants.flip);
  const none = (1n << 64n) - 1n; // every field 0xffff: no flip
  const value = "apple";
  const row = 0;
  const col = c.columns[value][row];
  const base = [0n, none, none, none, none, none];
  const onehot = (bits) => bits.map((b, i) => Number(i === col) ^ b);
  const pack = (bits) => {
    const bytes = [0, 0, 0];
    bits.forEach((b, i) => (bytes[i >> 3] |= b << (i & 7)));
    return bytes.map((x) => x.toString(16).padStart(2, "0")).join("");
  };
  assert.deepEqual(sketch.randomize(value, base), [row, pack(onehot(Array(17).fill(0)))]);
  for (const i of [0, 3, 4, 13, 16]) {
    const words = [...base];
    const word = 1 + Math.floor(i / 4);
    const shift = BigInt(16 * (i % 4));
    // field i = t - 1 (flips), the other fields of the word stay 0xffff
    words[word] = (none & ~(0xffffn << shift)) | ((t - 1n) << shift);
    const flips = Array(17).fill(0);
    flips[i] = 1;
    assert.deepEqual(sketch.randomize(value, words), [row, pack(onehot(flips))], `field ${i}`);
    words[word] = (none & ~(0xffffn << shift)) | (t << shift); // field = t: no flip
    assert.deepEqual(sketch.randomize(value, words), [row, pack(onehot(Array(17).fill(0)))], `field ${i} at t`);
  }
  // the unused fields of the last flip word (17..19) change nothing
  const words = [...base];
  words[5] = 0xffffn; // field 16 = 0xffff, fields 17..19 = 0
  assert.deepEqual(sketch.randomize(value, words), [row, pack(onehot(Array(17).fill(0)))]);
});

test("spec 2: seeded reports flip at t / 2**16 a bit", () => {
  // 20,000 reports of m = 10 bits; the flip count is binomial(N, t / 2**16): |z| < 4.5 fails
  // by chance with probability about 7e-6 (the seed is fixed, so the test is repeatable)
  const c = CASES.find((x) => x.id === "cms-4");
  const sketch = makeSketch(c.spec);
  const f = c.spec.constants.flip / 2 ** 16;
  const crypto = seededCrypto(13);
  let flips = 0;
  let trials = 0;
  for (let i = 0; i < 20000; i++) {
    const value = c.values[i % c.values.length];
    const [row, hex] = sketch.randomizeValue(value, crypto);
    const bits = BigInt(`0x${hex.match(/../g).reverse().join("")}`);
    const col = sketch.columns(value)[row];
    for (let b = 0; b < c.spec.constants.columns; b++) {
      flips += Number((bits >> BigInt(b)) & 1n) ^ Number(b === col);
      trials += 1;
    }
  }
  const z = (flips - trials * f) / Math.sqrt(trials * f * (1 - f));
  assert.ok(Math.abs(z) < 4.5, `${flips} flips of ${trials}, expected ${trials * f} (z = ${z})`);
});

test("spec 2: a tampered spec is refused by the field it gets wrong", () => {
  const cases = [
    [(s) => (s.schema = "deniable.cms-spec/3"), /^`schema` must be "deniable.cms-spec\/1" or "deniable.cms-spec\/2"/],
    [(s) => (s.mechanism = "hcms"), /^`mechanism` must be one of cms for deniable.cms-spec\/2, got "hcms"/],
    [(s) => (s.algorithm = "count-mean-sketch/1"), /^`algorithm` must be "count-mean-sketch\/2" for cms/],
    [(s) => (s.parameters.spec_version = 1), /^`parameters.spec_version` must be 2/],
    [(s) => (s.constants.field_bits = 8), /^`constants.field_bits` must be 16, got 8/],
    [(s) => (s.constants.fields_per_word = 8), /^`constants.fields_per_word` must be 4, got 8/],
    [(s) => (s.words_per_report = 18), /^`words_per_report` must be 6 for cms/],
    // one step down of a 16-bit threshold is a visibly larger epsilon: refused
    [(s) => (s.constants.flip -= 1), /^`constants.flip` must implement at most `epsilon` = 3\.99\d* \(2 ln\(\(2\*\*16 - t\) \/ t\)\)/],
    [(s) => (s.constants.flip = 2 ** 15), /^`constants.flip` must be an integer in 1\.\.32767/],
  ];
  for (const [tamper, message] of cases) {
    const spec = specOf("cms-5");
    tamper(spec);
    assert.throws(() => makeSketch(spec), { name: "SpecError", message }, String(tamper));
  }
  // a spec of schema 1 that names a version is refused (schema 1 is spec version 1)
  const one = specOf("cms-0");
  one.parameters.spec_version = 2;
  assert.throws(() => makeSketch(one), /`parameters.spec_version` must be absent for deniable.cms-spec\/1/);
});
