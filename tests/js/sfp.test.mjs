// The Sequence Fragment Puzzle's device client (sfp.js): every case of tests/vectors/sfp.json
// replayed bit for bit, the positions of seeded reports against the spec, and bad specs
// and values refused by name.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { BATCH_HEADER_SIZE, encodeBatch } from "../../src/deniable/service/static/batch.js";
import { SFP_SCHEMA, checkSfpSpec, makeSfp } from "../../src/deniable/service/static/sfp.js";
import { STREAM_SCHEMA, makeStreamClient } from "../../src/deniable/service/static/stream.js";
import { SpecError } from "../../src/deniable/service/static/spec.js";
import { seededCrypto } from "./_helpers.mjs";

const VECTORS = JSON.parse(readFileSync(new URL("../vectors/sfp.json", import.meta.url), "utf8"));
const CASES = VECTORS.cases;
const specOf = (i) => structuredClone(CASES[i].spec);

test("the vectors file has cases of both sketches and both alphabets, schema deniable.sfp-spec/1", () => {
  assert.equal(VECTORS.schema, "deniable.sfp-vectors/1");
  assert.deepEqual([...new Set(CASES.map((c) => c.spec.fragment_sketch.mechanism))].sort(), ["cms", "hcms"]);
  assert.deepEqual([...new Set(CASES.map((c) => c.spec.strings.unit))].sort(), ["bytes", "characters"]);
  for (const c of CASES) assert.equal(c.spec.schema, SFP_SCHEMA, c.id);
});

for (const c of CASES) {
  test(`sfp vector ${c.id}: every report and record bit for bit`, () => {
    const sfp = makeSfp(c.spec);
    const w = c.spec.words_per_report;
    assert.equal(sfp.wordsPerReport, w);
    assert.equal(c.words.length, w * c.values.length);
    const got = c.values.map((value, i) => sfp.randomize(value, c.words.slice(i * w, (i + 1) * w).map(BigInt)));
    assert.deepEqual(got, c.reports);
    assert.deepEqual(c.values.map((value, i) => sfp.record(value, got[i][0])), c.fragments);
  });
}

test("a changed word changes a report: the replay can fail", () => {
  const c = CASES[0];
  const sfp = makeSfp(c.spec);
  const w = c.spec.words_per_report;
  const words = c.words.slice(0, w).map(BigInt);
  const changed = [...words];
  changed[0] = words[0] ^ (1n << 63n); // the other position (P = 2)
  assert.notDeepEqual(sfp.randomize(c.values[0], changed)[0], sfp.randomize(c.values[0], words)[0]);
});

test("seeded reports: positions uniform over 0..P-1 whatever the string", () => {
  // 3,000 reports of a P = 3 case per string: each position's count within 4.5 sigma of
  // 1,000 (sigma = sqrt(3000 * 1/3 * 2/3) = 25.8); false-alarm rate below 1e-4 a check
  const c = CASES[2];
  const sfp = makeSfp(c.spec);
  assert.equal(sfp.positions, 3);
  for (const value of ["x", "\u00fc\u00fcxyz"]) {
    const crypto = seededCrypto(11);
    const counts = [0, 0, 0];
    for (let i = 0; i < 3000; i++) counts[sfp.randomizeValue(value, crypto)[0]] += 1;
    for (const n of counts) assert.ok(Math.abs(n - 1000) < 4.5 * 25.8, `${value}: ${counts}`);
  }
});

test("bad values are refused by name, before any word is drawn", () => {
  const sfp = makeSfp(specOf(0)); // alphabet "abc", max_length 4
  const crypto = seededCrypto(1);
  assert.throws(() => sfp.randomizeValue("abcab", crypto), (e) => e instanceof SpecError && e.field === "value" && /max_length = 4/.test(e.message));
  assert.throws(() => sfp.randomizeValue("abd", crypto), (e) => e instanceof SpecError && /alphabet/.test(e.message));
  assert.throws(() => sfp.randomizeValue("", crypto), (e) => e instanceof SpecError && /non-empty/.test(e.message));
  assert.throws(() => sfp.randomizeValue(3, crypto), (e) => e instanceof SpecError && e.field === "value");
  assert.equal(crypto.calls, 0);
  const bytes = makeSfp(specOf(1)); // bytes, max_length 3
  assert.throws(() => bytes.randomizeValue("\u2713a", crypto), (e) => e instanceof SpecError && /3 bytes/.test(e.message));
  assert.throws(() => sfp.randomize("a", [0n]), (e) => e instanceof SpecError && e.field === "words");
});

test("a tampered spec is refused naming the field", () => {
  const cases = [
    [(s) => (s.schema = "deniable.heavy-spec/1"), "schema"],
    [(s) => (s.positions = 3), "positions"],
    [(s) => (s.symbols = 4), "symbols"],
    [(s) => (s.puzzle.bits = 0), "puzzle.bits"],
    [(s) => (s.strings.alphabet = "aab"), "strings.alphabet"],
    [(s) => (s.words_per_report += 1), "words_per_report"],
    [(s) => (s.fragment_sketch.constants.flip = 1), "fragment_sketch.constants.flip"],
    [(s) => (s.word_sketch.parameters.k = 4), "word_sketch.parameters.k"],
    [(s) => (s.epsilon = 3), "epsilon"],
    [(s) => (s.fragment_epsilon = 1), "fragment_epsilon"],
    [(s) => (s.parameters.salt = 1), "parameters.salt"],
  ];
  for (const [tamper, field] of cases) {
    const spec = specOf(0);
    tamper(spec);
    assert.throws(() => checkSfpSpec(spec), (e) => e instanceof SpecError && e.field === field, field);
  }
  assert.throws(() => checkSfpSpec(null), (e) => e instanceof SpecError && e.field === "spec");
});

test("a stream of SFP: the client reports from the stream spec and encodes the batch at the documented size", () => {
  for (const c of CASES) {
    const spec = { schema: STREAM_SCHEMA, id: "words", oracle: c.spec, period: "day", window: { kind: "day", epsilon: 50, delta: 0, length: null, tz: "UTC" }, report_epsilon: c.spec.epsilon };
    const client = makeStreamClient(spec, { token: "t", cryptoImpl: seededCrypto(3), fetchImpl: async () => ({ status: 201, json: async () => ({}) }) });
    const value = c.values[0];
    const reports = [client.report(value), client.report(value)];
    for (const r of reports) {
      assert.equal(r.length, 3);
      assert.ok(r[0] >= 0 && r[0] < c.spec.positions);
    }
    const body = client.encode(reports);
    // the record: position (int64 with HCMS, uint16 with CMS), then each sketch's record
    const m = c.spec.fragment_sketch.constants.columns;
    const size = c.spec.fragment_sketch.mechanism === "hcms" ? 8 * 3 : 2 + 2 * (2 + Math.ceil(m / 8));
    assert.equal(body.length, BATCH_HEADER_SIZE + 2 * size, c.id);
  }
});

test("bad SFP reports are refused by name before any byte is made", () => {
  const hcms = CASES[0].spec; // P = 2, k = 8, m = 64
  const good = CASES[0].reports[0];
  assert.throws(() => encodeBatch(hcms, [good, [2, good[1], good[2]]]), /`reports\[1\]\[0\]` must be an integer in 0\.\.1, got 2/);
  assert.throws(() => encodeBatch(hcms, [[0, 2 * 8 * 64, good[2]]]), /`reports\[0\]\[1\]` must be an integer in 0\.\.1023/);
  assert.throws(() => encodeBatch(hcms, [[0, good[1]]]), /`reports\[0\]` must be an SFP report/);
  const cms = CASES[1].spec; // CMS, m = 32: 4 bytes of bits
  const r = CASES[1].reports[0];
  assert.throws(() => encodeBatch(cms, [[r[0], r[1], [r[2][0], "00"]]]), /`reports\[0\]\[2\]\[1\]` must be 4 bytes/);
  assert.throws(() => encodeBatch(cms, [[r[0], [4, r[1][1]], r[2]]]), /`reports\[0\]\[1\]\[0\]` must be an integer in 0\.\.3, got 4/);
});
