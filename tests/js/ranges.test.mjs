// The range mechanisms' and Square Wave's device client (ranges.js): every case of
// tests/vectors/ranges.json replayed bit for bit, seeded reports against the spec (the level
// draw, Square Wave's mean cell), and bad values and tampered specs refused by field.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { RANGE_MECHANISMS, RANGE_SCHEMA, SQUARE_WAVE_SCHEMA, makeRange, makeSquareWave } from "../../src/deniable/service/static/ranges.js";
import { SpecError } from "../../src/deniable/service/static/spec.js";
import { seededCrypto } from "./_helpers.mjs";

const VECTORS = JSON.parse(readFileSync(new URL("../vectors/ranges.json", import.meta.url), "utf8"));
const CASES = VECTORS.cases;
const RANGES = CASES.filter((c) => c.spec.schema === RANGE_SCHEMA);
const WAVES = CASES.filter((c) => c.spec.schema === SQUARE_WAVE_SCHEMA);
const specOf = (id) => structuredClone(CASES.find((c) => c.id === id).spec);
const refused = (field) => (e) => e instanceof SpecError && e.field === field;

test("the vectors file has both range mechanisms and Square Wave", () => {
  assert.equal(VECTORS.schema, "deniable.range-vectors/1");
  assert.deepEqual([...new Set(RANGES.map((c) => c.spec.mechanism))].sort(), [...RANGE_MECHANISMS].sort());
  assert.ok(WAVES.length >= 2);
});

for (const c of RANGES) {
  test(`range vector ${c.id}: every report bit for bit`, () => {
    const range = makeRange(c.spec);
    assert.deepEqual(range.wordsPerReport, c.spec.words_per_report);
    const got = c.values.map((value, i) => range.randomize(value, c.words[i].map(BigInt)));
    assert.deepEqual(got, c.reports);
  });
}

for (const c of WAVES) {
  test(`square wave vector ${c.id}: every cell bit for bit`, () => {
    const wave = makeSquareWave(c.spec);
    assert.equal(wave.cells, c.spec.constants.cells);
    const got = c.values.map((value, i) => wave.randomize(value, c.words[i].map(BigInt)));
    assert.deepEqual(got, c.reports);
  });
}

test("a changed word changes a report: the replay can fail", () => {
  const c = RANGES[0];
  const range = makeRange(c.spec);
  const words = c.words[2].map(BigInt);
  const changed = [...words];
  changed[0] = words[0] ^ (1n << 63n); // the other level (two levels here)
  assert.notEqual(range.randomize(c.values[2], changed)[0], range.randomize(c.values[2], words)[0]);
  const wave = makeSquareWave(WAVES[0].spec);
  assert.notEqual(wave.randomize(0.5, [0n, 0n]), wave.randomize(0.5, [0n, (1n << 64n) - 1n]));
});

test("seeded range reports: levels uniform; Square Wave's mean cell as its closed form", () => {
  // 4,000 HaarHRR reports over 3 levels: each level's count within 4.5 sigma of n / 3.
  // Square Wave: E[cell | v] = c0 + c1 v with c0 = (beta M (M - 1) / 2 + (alpha - beta)
  // w (w - 1) / 2) / 2**64 and c1 = (alpha - beta) w G / 2**64 (the cell's variance is
  // below M**2 / 4): the mean of 4,000 cells within 4.5 sigma.  False alarms below 1e-4 a check.
  const n = 4000;
  const haar = makeRange(RANGES.find((c) => c.spec.mechanism === "haar-hrr" && c.spec.constants.levels === 3).spec);
  const crypto = seededCrypto(11);
  const counts = [0, 0, 0];
  for (let i = 0; i < n; i++) counts[haar.randomizeValue(5, crypto)[0]] += 1;
  for (const k of counts) assert.ok(Math.abs(k - n / 3) < 4.5 * Math.sqrt((n * 2) / 9), `level count ${k}`);
  const spec = WAVES[0].spec;
  const wave = makeSquareWave(spec);
  const [alpha, beta] = [Number(spec.constants.alpha), Number(spec.constants.beta)];
  const [m, w, g] = [spec.constants.cells, spec.constants.window, spec.constants.grid];
  const c0 = (beta * m * (m - 1)) / 2 / 2 ** 64 + ((alpha - beta) * w * (w - 1)) / 2 / 2 ** 64;
  const c1 = ((alpha - beta) * w * g) / 2 ** 64;
  let sum = 0;
  for (let i = 0; i < n; i++) sum += wave.randomizeValue(0.3, crypto);
  assert.ok(Math.abs(sum / n - (c0 + c1 * 0.3)) < (4.5 * (m / 2)) / Math.sqrt(n), `mean cell ${sum / n}`);
});

test("bad values and words are refused by name", () => {
  const range = makeRange(specOf("hierarchical-histogram-1")); // domain 8
  const words = [0n, 0n, 0n];
  for (const value of [-1, 8, 2.5, "3", null]) assert.throws(() => range.randomize(value, words), refused("value"), String(value));
  assert.throws(() => range.randomize(1, [0n, 0n]), refused("words"));
  assert.throws(() => range.randomize(1, [0n, 0n, -1n]), refused("words[1]"));
  assert.throws(() => range.randomizeValue(9, seededCrypto(1)), refused("value"));
  const wave = makeSquareWave(specOf("square-wave-1")); // [-2, 6], no clip
  for (const value of [-2.5, 6.01, Number.NaN, Infinity, "1"]) assert.throws(() => wave.randomize(value, [0n, 0n]), refused("value"), String(value));
  assert.throws(() => wave.randomize(1, [0n]), refused("words"));
});

test("tampered specs are refused by field", () => {
  const tamper = [
    ["hierarchical-histogram-0", "schema", "deniable.heavy-spec/1", "schema"],
    ["hierarchical-histogram-0", "mechanism", "cms", "mechanism"],
    ["hierarchical-histogram-0", "algorithm", "haar-hrr/1", "algorithm"],
    ["hierarchical-histogram-0", "words_per_report", [18, 17], "words_per_report"],
    ["hierarchical-histogram-0", "report", "cell", "report"],
    ["square-wave-0", "words_per_report", 3, "words_per_report"],
    ["square-wave-0", "schema", RANGE_SCHEMA, "schema"],
    ["square-wave-0", "report", "level-report", "report"],
  ];
  for (const [id, field, value, named] of tamper) {
    const make = id.startsWith("square") ? makeSquareWave : makeRange;
    assert.throws(() => make({ ...specOf(id), [field]: value }), refused(named), `${id} ${field}`);
  }
  const deeper = [
    ["hierarchical-histogram-0", (s) => (s.constants.domain = 32), "constants.domain"],
    ["hierarchical-histogram-0", (s) => (s.constants.levels = 3), "constants.levels"],
    ["hierarchical-histogram-0", (s) => s.levels.pop(), "levels"],
    ["hierarchical-histogram-0", (s) => (s.levels[1] = s.levels[0]), "levels[1].k"],
    ["hierarchical-histogram-0", (s) => (s.levels[0].algorithm = "nope/1"), "levels[0].algorithm"],
    ["hierarchical-histogram-1", (s) => Object.assign(s, { epsilon: 0.5, implemented_epsilon: 0.5 }), "levels[0].epsilon"], // a level above the range's epsilon
    ["haar-hrr-4", (s) => (s.constants.branching = 4), "constants.branching"],
    ["square-wave-0", (s) => (s.constants.cells += 1), "constants.alpha"], // the weights no longer sum to 2**64
    ["square-wave-0", (s) => (s.constants.cells = 4096), "constants.cells"],
    ["square-wave-0", (s) => (s.constants.alpha = String(BigInt(s.constants.alpha) + 1n)), "constants.alpha"],
    ["square-wave-0", (s) => Object.assign(s, { epsilon: 0.5, implemented_epsilon: 0.5 }), "constants.alpha"], // the weights implement 1, not 0.5
    ["square-wave-0", (s) => (s.parameters.lower = "1/0"), "parameters.lower"],
    ["square-wave-0", (s) => (s.parameters.clip = "no"), "parameters.clip"],
    ["square-wave-0", (s) => (s.constants.grid = 1024), "constants.grid"],
  ];
  for (const [id, change, named] of deeper) {
    const spec = specOf(id);
    change(spec);
    const make = id.startsWith("square") ? makeSquareWave : makeRange;
    assert.throws(() => make(spec), refused(named), `${id} ${named}`);
  }
});

test("a clipping spec moves an outside value to the nearer bound", () => {
  const spec = specOf("square-wave-1");
  spec.parameters.clip = true;
  const wave = makeSquareWave(spec);
  const words = [123n << 40n, 987654321n << 30n];
  assert.equal(wave.randomize(-7, words), wave.randomize(-2, words));
  assert.equal(wave.randomize(60, words), wave.randomize(6, words));
});
