// Every case of tests/vectors/randomizers.json, replayed bit for bit by randomizer.js.
import assert from "node:assert/strict";
import { test } from "node:test";
import { randomize, typeOf } from "../../src/deniable/service/static/randomizer.js";
import { ALGORITHMS, SPEC_SCHEMA, channelEpsilon, checkSpec } from "../../src/deniable/service/static/spec.js";
import { VECTORS, caseWords } from "./_helpers.mjs";

test("the vectors file is the schema this module reads, with cases of every algorithm", () => {
  assert.equal(VECTORS.schema, "deniable.vectors/1");
  assert.ok(VECTORS.cases.length >= 50, `only ${VECTORS.cases.length} cases`);
  const seen = new Set(VECTORS.cases.map((c) => c.spec.algorithm));
  assert.deepEqual([...seen].sort(), [...ALGORITHMS].sort());
  for (const c of VECTORS.cases) assert.equal(c.spec.schema, SPEC_SCHEMA, c.id);
});

for (const c of VECTORS.cases) {
  test(`vector ${c.id}: every report, bit for bit`, () => {
    checkSpec(c.spec); // a valid spec, its epsilon consistent with its thresholds
    const n = c.truth.length;
    const twoGroup = c.spec.algorithm === "two-group/2";
    const input = twoGroup ? c.type : c.truth;
    const expectedWords = ("group" in c ? 1 : c.spec.words_per_report) * n;
    assert.equal(c.words.length, expectedWords, "words in the case");
    const got = [];
    for (let i = 0; i < n; i++) {
      const options = "group" in c ? { group: c.group[i] } : {};
      got.push(randomize(c.spec, input[i], caseWords(c, i), options));
    }
    assert.deepEqual(got, c.reports);
    if (twoGroup) {
      // the type the page would compute from (truth, latent) is the case's type
      for (let i = 0; i < n; i++) assert.equal(typeOf(c.spec, c.truth[i], c.latent[i]), c.type[i]);
    }
  });
}

test("epsilon implemented by the thresholds matches the stated one (finite and infinite)", () => {
  for (const c of VECTORS.cases) {
    const eps = channelEpsilon(c.spec);
    if (c.spec.epsilon === "inf") assert.equal(eps, Infinity, c.id);
    else assert.ok(Math.abs(eps - c.spec.epsilon) <= 1e-9 * Math.max(1, eps), `${c.id}: ${eps} vs ${c.spec.epsilon}`);
  }
});

test("a changed word changes the report: the replay can fail", () => {
  const c = VECTORS.cases.find((x) => x.id === "warner-0");
  const words = caseWords(c, 0);
  const first = randomize(c.spec, c.truth[0], words);
  // the word on the other side of the answer's threshold gives the other report
  const t = BigInt(c.spec.thresholds.yes[c.truth[0]]);
  const flipped = words[0] < t << 11n ? t << 11n : (t << 11n) - 1n;
  assert.notEqual(randomize(c.spec, c.truth[0], [flipped]), first);
});
