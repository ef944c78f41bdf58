// Malformed specs, words and inputs throw, and the error names the field.
import assert from "node:assert/strict";
import { test } from "node:test";
import { chance, explain, oddsFactor } from "../../src/deniable/service/static/explain.js";
import { randomize, typeOf } from "../../src/deniable/service/static/randomizer.js";
import { PrivacyError, SpecError, checkSpec, fieldInteger, kindOf, underField } from "../../src/deniable/service/static/spec.js";
import { VECTORS } from "./_helpers.mjs";

const byId = (id) => structuredClone(VECTORS.cases.find((c) => c.id === id).spec);
const warner = () => byId("warner-0");
const categorical = () => byId("categorical-2");
const cdm = () => byId("cdm-0");

function throwsField(spec, field, kind = SpecError) {
  assert.throws(() => checkSpec(spec), (err) => {
    assert.ok(err instanceof kind, `${err.name}: ${err.message}`);
    assert.equal(err.field, field, err.message);
    assert.ok(err.message.includes(`\`${field}\``), err.message);
    return true;
  });
}

test("a valid spec is accepted, and the result is frozen", () => {
  const c = checkSpec(warner());
  assert.ok(Object.isFrozen(c));
  assert.equal(c.algorithm, "bernoulli-count/1");
});

test("not an object, or not JSON data", () => {
  for (const bad of [null, undefined, 3, "spec", [warner()]]) throwsField(bad, "spec");
  const big = warner();
  big.thresholds.yes[0] = 2n ** 51n;
  throwsField(big, "spec");
});

test("schema: missing, wrong, newer (with a message to reload)", () => {
  const s = warner();
  delete s.schema;
  throwsField(s, "schema");
  throwsField({ ...warner(), schema: "deniable.question/0" }, "schema");
  throwsField({ ...warner(), schema: 1 }, "schema");
  assert.throws(() => checkSpec({ ...warner(), schema: "deniable.question/2" }), /newer.*reload/);
});

test("every required field missing is named", () => {
  for (const f of ["mechanism", "parameters", "key", "truths", "reports", "algorithm", "words_per_report", "thresholds", "epsilon"]) {
    const s = warner();
    delete s[f];
    throwsField(s, f);
  }
  const s = cdm();
  delete s.latent;
  throwsField(s, "latent");
});

test("unknown fields are refused, latent on a one-group design too", () => {
  throwsField({ ...warner(), answer: 1 }, "answer");
  throwsField({ ...warner(), latent: cdm().latent }, "latent");
});

test("field types and counts", () => {
  throwsField({ ...warner(), mechanism: "" }, "mechanism");
  throwsField({ ...warner(), parameters: [] }, "parameters");
  throwsField({ ...warner(), key: "kuk{}" }, "key");
  throwsField({ ...warner(), algorithm: "bernoulli-count/2" }, "algorithm");
  throwsField({ ...warner(), truths: 3 }, "truths");
  throwsField({ ...warner(), truths: 2.5 }, "truths");
  throwsField({ ...warner(), reports: 3 }, "reports");
  throwsField({ ...warner(), words_per_report: 0 }, "words_per_report");
  throwsField({ ...warner(), words_per_report: 1e9 }, "words_per_report");
  throwsField({ ...categorical(), words_per_report: 1 }, "words_per_report");
  throwsField({ ...categorical(), reports: 4 }, "reports");
  throwsField({ ...cdm(), reports: 3 }, "reports");
});

test("thresholds: shape, integers, range", () => {
  const cases = [
    [{ yes: [1, 2], no: [1] }, "thresholds.no"],
    [{}, "thresholds.yes"],
    [{ yes: [1] }, "thresholds.yes"],
    [{ yes: [1.5, 2] }, "thresholds.yes[0]"],
    [{ yes: [-1, 2] }, "thresholds.yes[0]"],
    [{ yes: [1, 2 ** 53 + 2] }, "thresholds.yes[1]"],
    [{ yes: [1, "9007199254740993"] }, "thresholds.yes[1]"],
    [{ yes: [1, "0x10"] }, "thresholds.yes[1]"],
    [{ yes: [1, null] }, "thresholds.yes[1]"],
  ];
  for (const [thresholds, field] of cases) throwsField({ ...warner(), thresholds }, field);
  throwsField({ ...warner(), thresholds: [1, 2] }, "thresholds");
  // a digit string is accepted (docs/specs.md), here with the same values
  const s = warner();
  s.thresholds.yes = s.thresholds.yes.map(String);
  checkSpec(s);
});

test("keep-or-forced thresholds: forced list length and order", () => {
  const s = categorical();
  s.thresholds.forced = [s.thresholds.forced[0]];
  throwsField(s, "thresholds.forced");
  const t = categorical();
  t.thresholds.forced = [...t.thresholds.forced].reverse();
  throwsField(t, "thresholds.forced[1]");
  const u = categorical();
  delete u.thresholds.keep;
  throwsField(u, "thresholds.keep");
});

test("two-group: latent table and thresholds", () => {
  const a = cdm();
  a.latent.type[1][0] = 9;
  throwsField(a, "latent.type[1][0]");
  const b = cdm();
  b.latent.name = "liar";
  throwsField(b, "latent.name");
  const c = cdm();
  c.latent.default = 2;
  throwsField(c, "latent.default");
  const d = cdm();
  d.thresholds.yes[1] = d.thresholds.yes[1].slice(1);
  throwsField(d, "thresholds.yes[1]");
  const e = cdm();
  e.latent.types = ["a"];
  throwsField(e, "latent.types");
});

test("epsilon: a tampered threshold or epsilon is refused; understating is a PrivacyError", () => {
  // a threshold moved: the stated epsilon no longer matches what the thresholds implement
  const moved = warner();
  moved.thresholds.yes[1] += 2 ** 40;
  throwsField(moved, "epsilon", PrivacyError);
  // a finite epsilon for a design with a deterministic path
  throwsField({ ...byId("mangat-0"), epsilon: 5 }, "epsilon", PrivacyError);
  // stating less than implemented
  throwsField({ ...warner(), epsilon: 1.0 }, "epsilon", PrivacyError);
  // stating more (not a privacy risk, but not this spec): refused as tampered
  throwsField({ ...warner(), epsilon: 2.0 }, "epsilon");
  // "inf" for a finite channel
  throwsField({ ...warner(), epsilon: "inf" }, "epsilon");
  for (const bad of [-1, NaN, Infinity, "Infinity", null]) throwsField({ ...warner(), epsilon: bad }, "epsilon");
});

test("labels and text", () => {
  throwsField({ ...warner(), labels: ["no"] }, "labels");
  throwsField({ ...warner(), labels: ["no", "no"] }, "labels");
  throwsField({ ...warner(), labels: ["no", ""] }, "labels");
  throwsField({ ...warner(), text: 3 }, "text");
  checkSpec({ ...warner(), labels: ["no", "yes"], text: "Q?" });
});

test("an edited spec is checked again (no stale cache)", () => {
  const s = warner();
  checkSpec(s);
  s.thresholds.yes[0] = 2 ** 53 + 2;
  throwsField(s, "thresholds.yes[0]");
});

test("randomize: bad input, words and group throw naming them", () => {
  const s = warner();
  const field = (fn, name) => assert.throws(fn, (e) => e instanceof SpecError && e.field === name);
  field(() => randomize(s, 2, [0n]), "input");
  field(() => randomize(s, -1, [0n]), "input");
  field(() => randomize(s, "1", [0n]), "input");
  field(() => randomize(s, 1, []), "words");
  field(() => randomize(s, 1, [0n, 1n]), "words");
  field(() => randomize(s, 1, [0]), "words[0]");
  field(() => randomize(s, 1, [2n ** 64n]), "words[0]");
  field(() => randomize(s, 1, [-1n]), "words[0]");
  field(() => randomize(s, 1, [0n], { group: 1 }), "group");
  field(() => randomize(cdm(), 0, [0n], { group: 3 }), "group");
  field(() => randomize({ ...s, epsilon: 0.5 }, 1, [0n]), "epsilon");
  field(() => typeOf(byId("unrelated-unknown-0"), 1), "unrelated");
  field(() => typeOf(s, 1), "algorithm");
  assert.equal(typeOf(cdm(), 1), cdm().latent.type[1][0]); // the default: not a cheater
});

test("plain words: chances, odds rounded up, infinite epsilon never finite", () => {
  assert.equal(chance(0.75), "3 times in 4");
  assert.equal(chance(0.5), "1 time in 2");
  assert.equal(chance(1), "always");
  assert.equal(chance(0.2689), "about 27 times in 100");
  assert.equal(oddsFactor(Math.log(3)), "3");
  assert.equal(oddsFactor(1), "2.72");
  assert.equal(oddsFactor(0.5108256237659907), "1.67");
  assert.ok(Number(oddsFactor(1.0001)) >= Math.exp(1.0001));
  assert.throws(() => oddsFactor(Infinity), RangeError);

  const two = explain(byId("two-coin-0"), ["no", "yes"]);
  assert.match(two.summary, /1 time in 2 your device sends your true answer; otherwise a fair coin decides/);
  assert.match(two.summary, /In all, your true answer is sent 3 times in 4/);
  assert.match(two.reveal, /“yes” by at most 3 \(e\^ε, ε = 1\.099\)/);
  const cat = explain(byId("categorical-0"));
  assert.match(cat.summary, /one of the 4 answers at random/);
  assert.match(cat.reveal, /at most 5 times as likely/);
  for (const c of VECTORS.cases) {
    const e = explain(c.spec);
    assert.ok(Math.abs(e.parts.reduce((a, p) => a + p.share, 0) - 1) < 1e-9, c.id);
    if (c.spec.epsilon === "inf") {
      assert.match(e.reveal, /ε is infinite/, c.id);
      assert.doesNotMatch(e.summary, /at most|ε = /, c.id);
    } else {
      assert.match(e.reveal, /at most [0-9.]+ .*ε = [0-9.]+/, c.id);
    }
  }
});

test("keep-or-forced epsilon in closed form equals the largest column log ratio of the channel", async () => {
  // epsilonOf no longer builds the k x k channel; on every small k, keep and forcing it gives
  // the number the channel's columns give, to the bit
  const { channelOf, epsilonOf, ONE } = await import("../../src/deniable/service/static/channel.js");
  const fromChannel = (c) => {
    const rows = channelOf(c);
    let eps = 0;
    for (let y = 0; y < rows[0].length; y++) {
      const col = rows.map((r) => r[y]);
      const hi = Math.max(...col);
      const lo = Math.min(...col);
      if (hi > 0) eps = Math.max(eps, lo === 0 ? Infinity : Math.log(hi / lo));
    }
    return eps;
  };
  let compared = 0;
  for (let k = 2; k <= 40; k++) {
    for (const keep of [0n, 1n, ONE / 3n, ONE / 2n, ONE - 12345n, ONE - 1n, ONE]) {
      const uniform = { algorithm: "keep-or-forced/1", truths: k, keep, forced: null };
      // cuts with a repeated one (a category never forced) and uneven steps
      const cuts = Array.from({ length: k - 1 }, (_, j) => (ONE * BigInt(j * j + (j % 3 === 0 ? 0 : 1))) / BigInt((k - 1) * (k - 1) + 1));
      const given = { algorithm: "keep-or-forced/1", truths: k, keep, forced: cuts };
      for (const c of [uniform, given]) {
        assert.equal(epsilonOf(c), fromChannel(c), `k=${k} keep=${keep} forced=${c.forced === null ? "uniform" : "cuts"}`);
        compared += 1;
      }
    }
  }
  assert.equal(compared, 39 * 7 * 2);
});

test("a wrong kind of value is named with its article, never shown", () => {
  const cases = [
    [{}, "an object"], [new Map(), "an object"], [undefined, "undefined"], [null, "null"],
    [[1], "an array"], [Infinity, "a non-finite number"], [3, "a number"], ["x", "a string"],
    [true, "a boolean"], [3n, "a bigint"], [() => 0, "a function"], [Symbol("s"), "a symbol"],
  ];
  for (const [value, words] of cases) assert.equal(kindOf(value), words);
});

test("fieldInteger: the field's integer in min..max, else a SpecError naming the path given", () => {
  assert.equal(fieldInteger({ k: 3 }, "k", "parameters.k", 1, 3), 3);
  assert.throws(() => fieldInteger({ k: 4 }, "k", "parameters.k", 1, 3), /^SpecError: `parameters.k` must be an integer in 1\.\.3, got 4\.$/);
  assert.throws(() => fieldInteger({ k: 1.5 }, "k", "k", 1, 3), /`k` must be an integer in 1\.\.3, got 1\.5/);
  assert.throws(() => fieldInteger(undefined, "k", "k", 0, 1), /`k` must be an integer in 0\.\.1, got undefined/);
});

test("underField: a SpecError thrown inside is named under the field, other errors pass unchanged", () => {
  assert.equal(underField("inner", () => 7), 7);
  const err = (() => {
    try {
      underField("fragment_sketch", () => fieldInteger({ m: 0 }, "m", "parameters.m", 1, 8));
    } catch (e) {
      return e;
    }
  })();
  assert.ok(err instanceof SpecError);
  assert.equal(err.field, "fragment_sketch.parameters.m");
  assert.equal(err.message, "`fragment_sketch.parameters.m` must be an integer in 1..8, got 0.");
  const plain = new TypeError("x");
  assert.throws(() => underField("a", () => { throw plain; }), (e) => e === plain);
});
