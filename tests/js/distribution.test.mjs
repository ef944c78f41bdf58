// The output distribution of randomizeAnswer (the words drawn through crypto.getRandomValues,
// here a seeded stand-in) against the exact channel of each design, by Pearson's chi-square.
//
// False-alarm rate: every (design, input) pair is one test at level ALPHA / TESTS
// (Bonferroni), so a correct randomizer fails this file with probability at most ALPHA =
// 0.001 over the seeds.  The seeds are fixed, so the outcome is repeatable.  Reports of
// probability 0 must never occur (checked exactly).  The last test shows the check has
// power: the same sample size against the wrong channel row fails.
import assert from "node:assert/strict";
import { test } from "node:test";
import { randomWords, randomize, randomizeAnswer } from "../../src/deniable/service/static/randomizer.js";
import { channel } from "../../src/deniable/service/static/spec.js";
import { VECTORS, chiSquare, seededCrypto } from "./_helpers.mjs";

const ALPHA = 0.001;
const N = 4000; // reports per (design, input): fixed

// one spec per distinct design (two-group "group-given" cases share their design's spec)
const specs = [];
const keys = new Set();
for (const c of VECTORS.cases) {
  if (keys.has(c.spec.key)) continue;
  keys.add(c.spec.key);
  specs.push([c.id, c.spec]);
}
const TESTS = specs.reduce((s, [, spec]) => s + spec.truths, 0);

function sample(spec, input, n, seed) {
  const rng = seededCrypto(seed);
  const counts = new Array(spec.reports).fill(0);
  for (let i = 0; i < n; i++) counts[randomizeAnswer(spec, input, rng)] += 1;
  return { counts, calls: rng.calls };
}

specs.forEach(([id, spec], s) => {
  test(`distribution of ${id} (${spec.algorithm}): chi-square at ${ALPHA}/${TESTS} per input`, () => {
    const rows = channel(spec);
    for (let input = 0; input < spec.truths; input++) {
      const { counts, calls } = sample(spec, input, N, 1000 * s + input);
      assert.equal(calls, N, "one getRandomValues call per report");
      const r = chiSquare(counts, rows[input]);
      assert.equal(r.impossible, 0, `input ${input}: reports of probability 0 occurred: ${counts}`);
      assert.ok(r.p > ALPHA / TESTS, `input ${input}: counts ${counts} vs ${rows[input]}: chi2 ${r.statistic.toFixed(1)}, df ${r.df}, p ${r.p}`);
    }
  });
});

test("the channel rows are distributions", () => {
  for (const [id, spec] of specs) {
    for (const row of channel(spec)) {
      assert.ok(Math.abs(row.reduce((a, b) => a + b, 0) - 1) < 1e-12, id);
      assert.ok(row.every((p) => p >= 0 && p <= 1), id);
    }
  }
});

test("the chi-square check has power: input 0's reports fail against input 1's channel", () => {
  const spec = VECTORS.cases.find((c) => c.id === "warner-0").spec;
  const { counts } = sample(spec, 0, N, 7);
  const r = chiSquare(counts, channel(spec)[1]);
  assert.ok(r.p < ALPHA / TESTS, `p = ${r.p}`);
});

test("randomWords draws from crypto.getRandomValues, uniform words (real CSPRNG)", () => {
  const words = randomWords(20000); // globalThis.crypto: node's webcrypto
  assert.equal(words.length, 20000);
  assert.ok(words.every((w) => typeof w === "bigint" && w >= 0n && w < 2n ** 64n));
  // the top bit is a fair coin: |ones - n/2| < 5 sigma (false alarm < 6e-7)
  const ones = words.filter((w) => w >> 63n === 1n).length;
  assert.ok(Math.abs(ones - 10000) < 5 * Math.sqrt(5000), `${ones} top bits set`);
  assert.equal(new Set(words).size, words.length, "64-bit words repeat");
  // more than 65536 bytes: several calls (the Web Crypto limit per call)
  let calls = 0;
  const fake = { getRandomValues: (a) => { calls += 1; assert.ok(a.byteLength <= 65536); return a; } };
  randomWords(20000, fake);
  assert.equal(calls, 3);
});

test("randomizeAnswer with the real crypto gives reports in range", () => {
  const spec = VECTORS.cases.find((c) => c.id === "categorical-1").spec;
  for (let i = 0; i < 200; i++) {
    const r = randomizeAnswer(spec, i % spec.truths);
    assert.ok(Number.isInteger(r) && r >= 0 && r < spec.reports);
  }
  assert.throws(() => randomizeAnswer(spec, 0, {}), /getRandomValues/);
});

test("no branch on the answer: the same words give the same work for every answer", () => {
  // every answer consumes exactly words_per_report words, and the keep-or-forced report is
  // the kept answer or the SAME forced category whatever the answer
  const spec = VECTORS.cases.find((c) => c.id === "categorical-2").spec;
  const words = [2n ** 64n - 1n, 12345678901234567890n]; // keep word above the threshold
  const reports = [0, 1, 2].map((x) => randomize(spec, x, words));
  assert.equal(new Set(reports).size, 1, `${reports}`);
});
