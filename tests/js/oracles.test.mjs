// Every case of tests/vectors/oracles.json replayed bit for bit by oracles.js (first reports)
// and oraclesmemo.js (a device's rounds through its memo), GRR through the categorical cases
// of randomizers.json, the memo kept on the device and pinned to the permanent stage, and
// bad input refused by name.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { ORACLE_ALGORITHMS, deviceClient, makeOracle } from "../../src/deniable/service/static/oracles.js";
import { makeDevice } from "../../src/deniable/service/static/oraclesmemo.js";
import { RAPPOR_SCHEMA, blake2b, stringDigest } from "../../src/deniable/service/static/oraclesrappor.js";
import { SpecError } from "../../src/deniable/service/static/spec.js";
import { VECTORS, caseWords, seededCrypto } from "./_helpers.mjs";

const ORACLES = JSON.parse(readFileSync(new URL("../vectors/oracles.json", import.meta.url), "utf8"));
// the count mean sketches' cases (with "columns", schemas deniable.cms-spec/1 and /2) are replayed by
// sketches.test.mjs through sketches.js; here only that the file has them
const sketchCases = ORACLES.cases.filter((c) => "columns" in c);
const firstCases = ORACLES.cases.filter((c) => !("prr" in c) && !("columns" in c));
const deviceCases = ORACLES.cases.filter((c) => "prr" in c);
const LONGITUDINAL = ["l-grr", "l-sue", "l-oue", "l-osue", "loloha"];
const specOf = (id) => ORACLES.cases.find((c) => c.id === id).spec;

/** The storage of a test: a Map (the module also takes localStorage). */
const mapStorage = () => new Map();

test("the vectors file has first-report cases of every algorithm and device cases of every longitudinal oracle", () => {
  assert.equal(ORACLES.schema, "deniable.oracle-vectors/1");
  assert.deepEqual([...new Set(firstCases.map((c) => c.spec.algorithm))].sort(), [...ORACLE_ALGORITHMS].sort());
  assert.deepEqual([...new Set(deviceCases.map((c) => c.spec.mechanism))].sort(), [...LONGITUDINAL, "rappor"].sort());
});

test("every oracle of the file has a client: makeOracle (first reports) or makeDevice (RAPPOR) accepts each spec", () => {
  for (const c of ORACLES.cases) {
    if (sketchCases.includes(c)) continue;
    if (c.spec.schema === RAPPOR_SCHEMA) assert.doesNotThrow(() => makeDevice(c.spec, { storage: mapStorage() }), c.id);
    else assert.doesNotThrow(() => makeOracle(c.spec), c.id);
  }
});

for (const c of firstCases) {
  test(`oracle vector ${c.id}: every report, bit for bit`, () => {
    const oracle = makeOracle(c.spec);
    const w = c.spec.words_per_report;
    assert.equal(oracle.wordsPerReport, w);
    assert.equal(c.words.length, w * c.values.length);
    const got = c.values.map((value, i) => oracle.randomize(value, c.words.slice(i * w, (i + 1) * w).map(BigInt)));
    assert.deepEqual(got, c.reports);
  });
}

for (const c of deviceCases) {
  test(`device vector ${c.id}: every round's report and kept permanent response`, () => {
    const device = makeDevice(c.spec, { storage: mapStorage(), device: "vectors" });
    c.values.forEach((value, r) => {
      const words = c.words[r].map(BigInt);
      assert.equal(device.wordsNeeded(value), words.length, `${c.id} round ${r}: words`);
      assert.deepEqual(device.report(value, { words }), c.reports[r], `${c.id} round ${r}`);
      assert.deepEqual(device.held(value), c.prr[r], `${c.id} round ${r}: the kept PRR`);
    });
  });
}

test("GRR: k-ary randomized response from the categorical question spec, every uniform case", () => {
  const grr = VECTORS.cases.filter((c) => c.spec.algorithm === "keep-or-forced/1" && c.spec.thresholds.forced === null);
  assert.ok(grr.length >= 2);
  for (const c of grr) {
    const oracle = makeOracle(c.spec);
    assert.deepEqual(c.truth.map((x, i) => oracle.randomize(x, caseWords(c, i))), c.reports, c.id);
  }
  const forced = VECTORS.cases.find((c) => c.spec.algorithm === "keep-or-forced/1" && c.spec.thresholds.forced !== null);
  assert.throws(() => makeOracle(forced.spec), /`thresholds.forced` must be null/);
});

test("a changed word changes a report: the replay can fail", () => {
  const c = firstCases.find((x) => x.id === "hadamard-0");
  const oracle = makeOracle(c.spec);
  const words = c.words.slice(0, 2).map(BigInt);
  const flipped = [words[0], words[1] < BigInt(c.spec.constants.flip) << 11n ? BigInt(c.spec.constants.flip) << 11n : 0n];
  assert.notEqual(oracle.randomize(c.values[0], flipped), oracle.randomize(c.values[0], words));
});

test("the memo survives the device object (a restart) and a new instantaneous response", () => {
  const c = deviceCases.find((x) => x.id === "l-grr-0-device");
  const storage = mapStorage();
  const first = makeDevice(c.spec, { storage, device: "app", cryptoImpl: seededCrypto(1) });
  first.report(3);
  const kept = first.held(3);
  // a restart: another object over the same storage replays the PRR, drawing 2 words only
  const again = makeDevice(c.spec, { storage, device: "app", cryptoImpl: seededCrypto(2) });
  assert.equal(again.held(3), kept);
  assert.equal(again.wordsNeeded(3), 2);
  // another spec with the same PRR and another IRR (l-grr-1 has k = 4; build one from -0)
  const irr = structuredClone(c.spec);
  irr.constants.keep_2 = Math.floor(irr.constants.keep_2 / 2);
  const other = makeDevice(irr, { storage, device: "app" });
  assert.equal(other.held(3), kept);
  assert.equal(other.wordsNeeded(3), 2);
});

test("a spec with another permanent stage is refused for a device that keeps a PRR, never redrawn", () => {
  for (const id of ["l-grr-0-device", "l-sue-0-device", "loloha-0-device"]) {
    const spec = specOf(id);
    const storage = mapStorage();
    const device = makeDevice(spec, { storage, device: "app", cryptoImpl: seededCrypto(3) });
    device.report(1);
    const before = new Map(storage);
    const changed = structuredClone(spec);
    const field = "keep_1" in changed.constants ? "keep_1" : "p1";
    changed.constants[field] -= 1;
    const other = makeDevice(changed, { storage, device: "app", cryptoImpl: seededCrypto(4) });
    assert.throws(() => other.report(1), { name: "PrivacyError", message: /another permanent stage/ }, id);
    assert.throws(() => other.report(2), { name: "PrivacyError" }, `${id}: a new value too`);
    assert.deepEqual(storage, before, `${id}: nothing stored changed`);
    // another device (another storage name) keeps its own memo
    assert.doesNotThrow(() => makeDevice(changed, { storage, device: "other", cryptoImpl: seededCrypto(5) }).report(1));
  }
});

test("a localStorage-like storage works, and an unreadable memo is refused, not redrawn", () => {
  const map = new Map();
  const local = { getItem: (k) => (map.has(k) ? map.get(k) : null), setItem: (k, v) => map.set(k, String(v)) };
  const spec = specOf("l-osue-0-device");
  const device = makeDevice(spec, { storage: local, device: "s", cryptoImpl: seededCrypto(6) });
  device.report(2);
  const key = [...map.keys()].find((k) => k.endsWith("/longitudinal/prr/2"));
  assert.ok(key, [...map.keys()].join(", "));
  map.set(key, "{not json");
  assert.throws(() => device.report(2), { name: "SpecError", message: /`storage` holds an unreadable memo/ });
  assert.equal(map.get(key), "{not json");
});

test("bad input: a value outside the domain, wrong words, a non-longitudinal spec, no storage", () => {
  const oracle = makeOracle(specOf("olh-0"));
  for (const bad of [-1, 5, 1.5, "1", null]) {
    assert.throws(() => oracle.randomize(bad, [0n, 0n, 0n, 0n]), { name: "SpecError", message: /^`value` must be an integer in 0\.\.4, got / });
  }
  assert.throws(() => oracle.randomize(1, [0n, 0n, 0n]), /: `words` must be a list of 4 BigInt/);
  assert.throws(() => oracle.randomize(1, [0n, 0n, 0n, 2n ** 64n]), /: `words\[3\]` must be a BigInt/);
  const device = makeDevice(specOf("loloha-1-device"), { storage: mapStorage() });
  assert.throws(() => device.report(6), /: `value` must be an integer in 0\.\.5, got one outside \(values are not shown in errors\)\.$/);
  assert.throws(() => makeDevice(specOf("olh-0"), { storage: mapStorage() }), /: `algorithm` must be a longitudinal oracle/);
  assert.throws(() => makeDevice(specOf("l-grr-0"), {}), /: `storage` must be a Storage/);
  const tampered = { ...specOf("sue-0"), words_per_report: 3 };
  assert.throws(() => makeOracle(tampered), /: `words_per_report` must be 2/);
  assert.throws(() => makeOracle({ ...specOf("sue-0"), algorithm: "rappor/1" }), /: `algorithm` must be one of/);
});

test("the default words come from crypto.getRandomValues: reports vary, values stay in range", () => {
  const oracle = makeOracle(specOf("l-grr-0"));
  const crypto = seededCrypto(7);
  const reports = Array.from({ length: 200 }, () => oracle.randomizeValue(1, crypto));
  assert.ok(reports.every((r) => Number.isInteger(r) && r >= 0 && r < 5));
  assert.ok(new Set(reports).size > 1);
  assert.ok(crypto.calls >= 200);
});

test("a kept PRR out of range or of another stage in the storage is refused, not used", () => {
  const spec = specOf("l-grr-1-device");
  const storage = mapStorage();
  const device = makeDevice(spec, { storage, device: "s", cryptoImpl: seededCrypto(8) });
  device.report(0);
  const key = [...storage.keys()].find((k) => k.endsWith("/longitudinal/prr/0"));
  const entry = JSON.parse(storage.get(key));
  storage.set(key, JSON.stringify({ ...entry, prr: 4 })); // k = 4: values 0..3
  assert.throws(() => device.report(0), /`storage` holds an unreadable memo/);
  storage.set(key, JSON.stringify({ ...entry, pin: "longitudinal-grr/1{}" }));
  assert.throws(() => device.held(0), /`storage` holds an unreadable memo/);
});

test("a tampered constant is refused by name before any report", () => {
  const linear = structuredClone(specOf("olh-linear-2"));
  linear.constants.report_words += 1;
  assert.throws(() => makeOracle(linear), /: `constants.report_words` must be 2/);
  const sue = structuredClone(specOf("sue-0"));
  sue.constants.set = 2 ** sue.constants.bits + 1;
  assert.throws(() => makeOracle(sue), /: `constants.set` must be an integer in 0\.\.4/);
  const eps = { ...specOf("olh-0"), implemented_epsilon: specOf("olh-0").epsilon * 2 };
  assert.throws(() => makeOracle(eps), /: `implemented_epsilon` must be a number at most `epsilon`/);
  assert.throws(() => makeOracle({ ...specOf("olh-0"), report: "value" }), /: `report` must be "hash-bucket"/);
});

test("BLAKE2b agrees with node's blake2b512 over block boundaries; the string digest is 33 bits", async () => {
  const { createHash } = await import("node:crypto");
  for (const text of ["", "abc", "x".repeat(127), "x".repeat(128), "x".repeat(129), "\u00fc".repeat(300)]) {
    const mine = Buffer.from(blake2b(new TextEncoder().encode(text), 64)).toString("hex");
    assert.equal(mine, createHash("blake2b512").update(text, "utf8").digest("hex"), `${text.length} characters`);
  }
  assert.ok(stringDigest("apple") < 2n ** 33n);
});

test("RAPPOR: the cohort and PRRs are kept; another permanent stage is refused, another IRR keeps them", () => {
  const c = deviceCases.find((x) => x.id === "rappor-0-device");
  const storage = mapStorage();
  const device = makeDevice(c.spec, { storage, device: "app", cryptoImpl: seededCrypto(9) });
  assert.equal(device.wordsNeeded("x"), 1 + 2 * 16);
  device.report("x");
  const cohort = device.cohort();
  const prr = device.held("x");
  assert.equal(device.wordsNeeded("x"), 16);
  const irr = structuredClone(c.spec);
  irr.constants.q -= 1; // only the IRR changes
  const same = makeDevice(irr, { storage, device: "app", cryptoImpl: seededCrypto(10) });
  same.report("x");
  assert.equal(same.cohort(), cohort);
  assert.equal(same.held("x"), prr);
  const before = new Map(storage);
  const other = structuredClone(c.spec);
  other.constants.f += 1;
  assert.throws(() => makeDevice(other, { storage, device: "app" }).report("x"), { name: "PrivacyError" });
  assert.deepEqual(storage, before);
  assert.throws(() => device.report(3), /: `value` must be a string \(RAPPOR reports strings\), got a number\.$/);
});

test("deviceClient: the fields, the value checked before the words, and before any word is drawn", () => {
  const seen = [];
  const check = (value) => {
    seen.push(["check", value]);
    if (value < 0) throw new SpecError("value", "must be >= 0.");
    return value * 10;
  };
  const draw = (value, x, words) => [value, x, words.map(String)];
  const client = deviceClient({ epsilon: 2 }, { c: 1 }, 2, { key: "k" }, check, draw, { extra: () => "e" });
  assert.ok(Object.isFrozen(client));
  assert.deepEqual([client.key, client.wordsPerReport, client.epsilon, client.checked, client.extra()], ["k", 2, 2, { c: 1 }, "e"]);
  assert.deepEqual(client.randomize(3, [1n, 2n]), [3, 30, ["1", "2"]]);
  assert.throws(() => client.randomize(-1, [1n]), /`value` must be >= 0/); // the value first, then the words
  assert.throws(() => client.randomize(1, [1n]), /`words` must be a list of 2 BigInt/);
  const crypto = { getRandomValues: () => assert.fail("no word may be drawn for a bad value") };
  assert.throws(() => client.randomizeValue(-1, crypto), /`value` must be >= 0/);
  const counting = { getRandomValues: (a) => a.fill(7n) };
  assert.equal(client.randomizeValue(4, counting)[2].length, 2);
});
