// The heavy-hitter device client (heavy.js): every case of tests/vectors/heavy.json replayed
// bit for bit, the groups and the keep rate of seeded reports against the spec, and bad
// input refused by name.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { HEAVY_MECHANISMS, HEAVY_SCHEMA, makeHeavy } from "../../src/deniable/service/static/heavy.js";
import { SpecError } from "../../src/deniable/service/static/spec.js";
import { seededCrypto } from "./_helpers.mjs";

const VECTORS = JSON.parse(readFileSync(new URL("../vectors/heavy.json", import.meta.url), "utf8"));
const CASES = VECTORS.cases;
const specOf = (id) => structuredClone(CASES.find((c) => c.id === id).spec);

test("the vectors file has cases of both protocols, all of schema deniable.heavy-spec/1", () => {
  assert.equal(VECTORS.schema, "deniable.heavy-vectors/1");
  assert.deepEqual([...new Set(CASES.map((c) => c.spec.mechanism))].sort(), [...HEAVY_MECHANISMS].sort());
  for (const c of CASES) assert.equal(c.spec.schema, HEAVY_SCHEMA, c.id);
});

for (const c of CASES) {
  test(`heavy vector ${c.id}: every record bit for bit`, () => {
    const heavy = makeHeavy(c.spec);
    const w = c.spec.words_per_report;
    assert.equal(heavy.wordsPerReport, w);
    assert.equal(c.words.length, w * c.values.length);
    const got = c.values.map((value, i) => heavy.randomize(value, c.words.slice(i * w, (i + 1) * w).map(BigInt)));
    assert.deepEqual(got, c.records);
    assert.deepEqual(c.values.map((value, i) => heavy.prefix(value, Number(got[i][0]))), c.prefixes);
  });
}

test("a changed word changes a record: the replay can fail", () => {
  const c = CASES[0];
  const heavy = makeHeavy(c.spec);
  const w = c.spec.words_per_report;
  const words = c.words.slice(0, w).map(BigInt);
  const keep = BigInt(c.spec.constants.keep) << 11n;
  const changed = [...words];
  changed[w - 2] = words[w - 2] < keep ? (1n << 64n) - 1n : 0n; // keep <-> uniform bucket
  changed[w - 1] = words[w - 1] ^ (1n << 63n); // and another uniform bucket
  assert.notDeepEqual(heavy.randomize(c.values[0], changed), heavy.randomize(c.values[0], words));
});

test("seeded records: groups uniform, kept at the spec's rate, rows masked to the group's prefix", () => {
  // 6,000 records of PEM with 3 groups and g = 8: each group's count within 4.5 sigma of
  // 2,000, and the share whose bucket is the hash of the string within 4.5 sigma of
  // p' = p + (1 - p) / g (p = keep / 2**53); false-alarm rate below 1e-4 a check
  const c = CASES.find((x) => x.id === "pem-0");
  const heavy = makeHeavy(c.spec);
  const crypto = seededCrypto(7);
  const n = 6000;
  const counts = [0, 0, 0];
  let held = 0;
  const keepP = c.spec.constants.keep / 2 ** 53;
  const g = c.spec.constants.buckets;
  for (let i = 0; i < n; i++) {
    const rec = heavy.randomizeValue("hi", crypto).map(BigInt);
    const group = Number(rec[0]);
    counts[group] += 1;
    const bits = c.spec.levels[group];
    const x = (BigInt("0x6869") << 48n) & (((1n << BigInt(bits)) - 1n) << BigInt(64 - bits));
    let bucket = 0;
    for (let r = 0; r < 3; r++) {
      assert.equal(rec[1 + r] & ~(((1n << BigInt(bits)) - 1n) << BigInt(64 - bits)) & ((1n << 64n) - 1n), 0n);
      let acc = rec[1 + r] & x;
      let p = 0;
      for (; acc > 0n; acc >>= 1n) p ^= Number(acc & 1n);
      bucket |= p << r;
    }
    held += Number(Number(rec[4]) === bucket);
  }
  for (const k of counts) assert.ok(Math.abs(k - n / 3) < 4.5 * Math.sqrt((n * 2) / 9), `group count ${k}`);
  const pPrime = keepP + (1 - keepP) / g;
  assert.ok(Math.abs(held / n - pPrime) < 4.5 * Math.sqrt((pPrime * (1 - pPrime)) / n), `kept ${held / n} vs ${pPrime}`);
});

test("bad strings, words and specs are refused by name", () => {
  const heavy = makeHeavy(specOf("pem-0")); // max_bytes = 2
  const words = Array(heavy.wordsPerReport).fill(0n);
  for (const [value, pattern] of [["", /non-empty/], ["abc", /max_bytes = 2/], ["a\u0000", /NUL/], ["\uD800", /lone surrogates/], [7, /must be a string/]]) {
    assert.throws(() => heavy.randomize(value, words), (e) => e instanceof SpecError && e.field === "value" && pattern.test(e.message), String(value));
  }
  assert.throws(() => heavy.randomize("a", words.slice(1)), (e) => e instanceof SpecError && e.field === "words");
  const tamper = [
    ["schema", "deniable.cms-spec/1"],
    ["mechanism", "cms"],
    ["algorithm", "linear-local-hashing/1"],
    ["levels", [8, 16]],
    ["groups", 2],
    ["words_per_report", 5],
  ];
  for (const [field, value] of tamper) {
    assert.throws(() => makeHeavy({ ...specOf("pem-0"), [field]: value }), (e) => e instanceof SpecError && e.field === field, field);
  }
  const more = specOf("pem-0");
  more.constants.keep = 2 ** 53 - 1; // nearly always the true bucket: epsilon far above the stated 2
  assert.throws(() => makeHeavy(more), (e) => e instanceof SpecError && e.field === "constants.keep");
  const rows = specOf("pem-0");
  rows.constants.rows = 2;
  assert.throws(() => makeHeavy(rows), (e) => e instanceof SpecError && e.field === "constants.rows");
});

test("an alphabet: a string with another byte is refused naming its position, never the byte", () => {
  const c = CASES.find((x) => x.spec.strings.alphabet !== undefined);
  assert.ok(c, "a vectors case with an alphabet");
  const heavy = makeHeavy(c.spec);
  const words = Array(heavy.wordsPerReport).fill(0n);
  assert.throws(() => heavy.randomize("hx", words), (e) => e instanceof SpecError && e.field === "value" && /not at byte 1 \(the value is not shown\)/.test(e.message) && !/78|x/.test(e.message.split("got")[1]));
  assert.throws(() => heavy.randomizeValue("\u00e9"), (e) => e instanceof SpecError && /not at byte 1 /.test(e.message));
  assert.equal(heavy.randomize("hi", words).length, 2 + heavy.checked.l * heavy.checked.w);
  for (const [field, value] of [["alphabet", "6168"], ["alphabet", "68616"], ["alphabet", "6861"], ["alphabet", "0061"]]) {
    const spec = specOf(c.id);
    spec.strings[field] = value;
    assert.throws(() => makeHeavy(spec), (e) => e instanceof SpecError && e.field === "strings.alphabet", value);
  }
  const spec = specOf(c.id);
  delete spec.strings.alphabet; // parameters still say it: refused, never read as every byte
  assert.throws(() => makeHeavy(spec), (e) => e instanceof SpecError && e.field === "strings.alphabet");
});
