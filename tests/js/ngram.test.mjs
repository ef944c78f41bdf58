// RAPPOR n-gram discovery's device client (ngram.js): every case of
// tests/vectors/rappor_ngram.json replayed bit for bit, the pairs of seeded reports against
// the spec, and bad specs and values refused by name.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { BATCH_HEADER_SIZE, encodeBatch } from "../../src/deniable/service/static/batch.js";
import { NGRAM_SCHEMA, checkNgramSpec, makeNgram } from "../../src/deniable/service/static/ngram.js";
import { STREAM_SCHEMA, makeStreamClient } from "../../src/deniable/service/static/stream.js";
import { SpecError } from "../../src/deniable/service/static/spec.js";
import { seededCrypto } from "./_helpers.mjs";

const VECTORS = JSON.parse(readFileSync(new URL("../vectors/rappor_ngram.json", import.meta.url), "utf8"));
const CASES = VECTORS.cases;
const specOf = (i) => structuredClone(CASES[i].spec);

test("the vectors file has cases with and without a full report, schema deniable.rappor-ngram-spec/1", () => {
  assert.equal(VECTORS.schema, "deniable.rappor-ngram-vectors/1");
  assert.deepEqual(CASES.map((c) => c.spec.full_report === null), [true, false, false]);
  for (const c of CASES) assert.equal(c.spec.schema, NGRAM_SCHEMA, c.id);
});

for (const c of CASES) {
  test(`rappor-ngram vector ${c.id}: every report bit for bit`, () => {
    const ng = makeNgram(c.spec);
    const w = c.spec.words_per_report;
    assert.equal(ng.wordsPerReport, w);
    assert.equal(c.words.length, w * c.values.length);
    const got = c.values.map((value, i) => ng.randomize(value, c.words.slice(i * w, (i + 1) * w).map(BigInt)));
    assert.deepEqual(got, c.reports);
  });
}

test("a changed word changes a report: the replay can fail", () => {
  const c = CASES[1]; // C = 3 pairs, 2 chosen
  const ng = makeNgram(c.spec);
  const w = c.spec.words_per_report;
  const d = c.values.length - 1; // a row of PCG64 words
  const words = c.words.slice(d * w, (d + 1) * w).map(BigInt);
  const base = ng.randomize(c.values[d], words);
  const keys = [...words];
  [keys[1], keys[2], keys[3]] = [words[3], words[1], words[2]]; // the pair keys rotated
  assert.notDeepEqual(ng.randomize(c.values[d], keys).pairs, base.pairs);
  const irr = [...words];
  irr[1 + 3 + 16] ^= 1n << 63n; // the first IRR word of the first n-gram report
  assert.notDeepEqual(ng.randomize(c.values[d], irr).ngrams[0][2], base.ngrams[0][2]);
});

test("seeded reports: each of the C (C - 1) ordered choices of 2 of 3 pairs equally likely whatever the string", () => {
  // 3,000 reports a string: each of the 6 ordered choices within 4.5 sigma of 500
  // (sigma = sqrt(3000 * 1/6 * 5/6) = 20.4); false-alarm rate below 1e-4 a check
  const ng = makeNgram(specOf(1));
  for (const value of ["a", "cbacba"]) {
    const crypto = seededCrypto(11);
    const counts = new Map();
    for (let i = 0; i < 3000; i++) {
      const key = JSON.stringify(ng.randomizeValue(value, crypto).pairs);
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    assert.equal(counts.size, 6, value);
    for (const n of counts.values()) assert.ok(Math.abs(n - 500) < 4.5 * 20.4, `${value}: ${[...counts.values()]}`);
  }
});

test("bad values are refused by name, before any word is drawn", () => {
  const ng = makeNgram(specOf(0)); // alphabet "abc", length 4
  const crypto = seededCrypto(1);
  assert.throws(() => ng.randomizeValue("abcab", crypto), (e) => e instanceof SpecError && e.field === "value" && /1\.\.4 characters/.test(e.message));
  assert.throws(() => ng.randomizeValue("abd", crypto), (e) => e instanceof SpecError && /alphabet/.test(e.message));
  assert.throws(() => ng.randomizeValue("", crypto), (e) => e instanceof SpecError && e.field === "value");
  assert.throws(() => ng.randomizeValue(3, crypto), (e) => e instanceof SpecError && e.field === "value");
  assert.equal(crypto.calls, 0);
  assert.throws(() => ng.randomize("a", [0n]), (e) => e instanceof SpecError && e.field === "words");
});

test("a tampered spec is refused naming the field", () => {
  const cases = [
    [(s) => (s.schema = "deniable.rappor-spec/1"), "schema"],
    [(s) => (s.mechanism = "rappor"), "mechanism"],
    [(s) => (s.algorithm = "rappor-ngram/2"), "algorithm"],
    [(s) => (s.positions = 4), "positions"],
    [(s) => (s.position_pairs = 6), "position_pairs"],
    [(s) => (s.parameters.pairs = 4), "parameters.pairs"],
    [(s) => (s.parameters.length = 5), "parameters.length"],
    [(s) => (s.parameters.alphabet = "aab"), "parameters.alphabet"],
    [(s) => (s.parameters.pad = "a"), "parameters.alphabet"],
    [(s) => (s.strings.max_length = 4), "strings.max_length"],
    [(s) => (s.words.full = 0), "words.full"],
    [(s) => (s.words_per_report += 1), "words_per_report"],
    [(s) => (s.ngram_report.constants.bits = 12), "ngram_report.constants.bits"],
    [(s) => (s.full_report.schema = "x"), "full_report.schema"],
    [(s) => (s.epsilon = 1), "epsilon"],
  ];
  for (const [tamper, field] of cases) {
    const spec = specOf(1);
    tamper(spec);
    assert.throws(() => checkNgramSpec(spec), (e) => e instanceof SpecError && e.field === field, field);
  }
  assert.throws(() => checkNgramSpec(null), (e) => e instanceof SpecError && e.field === "spec");
});

test("a stream of RAPPOR n-grams: the client reports from the stream spec and encodes the batch at the documented size", () => {
  for (const c of CASES) {
    const spec = { schema: STREAM_SCHEMA, id: "words", oracle: c.spec, period: "day", window: { kind: "day", epsilon: 50, delta: 0, length: null, tz: "UTC" }, report_epsilon: c.spec.epsilon };
    const client = makeStreamClient(spec, { token: "t", cryptoImpl: seededCrypto(3), fetchImpl: async () => ({ status: 201, json: async () => ({}) }) });
    const value = c.values[c.values.length - 1];
    const reports = [client.report(value), client.report(value)];
    const k = 2 * c.spec.parameters.pairs;
    for (const r of reports) {
      assert.equal(r.pairs.length, c.spec.parameters.pairs);
      assert.equal(r.ngrams.length, k);
      assert.ok(r.pairs.every(([a, b]) => a >= 0 && a < b && b < c.spec.positions));
    }
    // the record: a byte a position, then each RAPPOR record (cohort uint16, m / 8 bytes)
    const m = c.spec.ngram_report.constants.bits;
    const full = c.spec.full_report === null ? 0 : 2 + c.spec.full_report.constants.bits / 8;
    const size = k + k * (2 + m / 8) + full;
    assert.equal(client.encode(reports).length, BATCH_HEADER_SIZE + 2 * size, c.id);
  }
});

test("bad n-gram reports are refused by name before any byte is made", () => {
  const spec = CASES[1].spec; // G = 3, pairs 2, a full report
  const good = CASES[1].reports[0];
  const bad = (change) => [good, { ...structuredClone(good), ...change }];
  assert.throws(() => encodeBatch(spec, bad({ pairs: [[0, 1]] })), /`reports\[1\]` must be a RAPPOR n-gram report/);
  assert.throws(() => encodeBatch(spec, bad({ full: null })), /`reports\[1\]` must be a RAPPOR n-gram report/);
  assert.throws(() => encodeBatch(spec, bad({ pairs: [[0, 3], [0, 1]] })), /`reports\[1\].pairs\[0\]\[1\]` must be an integer in 0\.\.2, got 3/);
  assert.throws(() => encodeBatch(spec, bad({ pairs: [[1, 0], [0, 1]] })), /`reports\[1\].pairs\[0\]` must be positions j1 < j2/);
  const grams = structuredClone(good.ngrams);
  grams[2][1] = 4; // 4 cohorts
  assert.throws(() => encodeBatch(spec, bad({ ngrams: grams })), /`reports\[1\].ngrams\[2\]\[1\]` must be an integer in 0\.\.3, got 4/); // the cohort is [1] of [label, cohort, hex]
  assert.throws(() => encodeBatch(spec, bad({ full: [0, "00"] })), /`reports\[1\].full\[1\]` must be 2 bytes/);
});
