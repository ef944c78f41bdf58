// stream.js and a stream spec's `answers` (the server's answer settings: top_k and alpha of a
// PEM or TreeHist stream, alpha and max_candidates of an SFP stream, alpha, edge_threshold and max_candidates of a RAPPOR n-gram stream, quantiles and ranges of a range or Square Wave stream): a device
// accepts them and randomizes exactly as without them; their fields are checked as Python
// names them (service/analysis/_stream_answers.py), their values left to the server.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { STREAM_SCHEMA, makeStreamClient } from "../../src/deniable/service/static/stream.js";
import { wordsCrypto } from "./_helpers.mjs";

const ORACLES = JSON.parse(readFileSync(new URL("../vectors/oracles.json", import.meta.url), "utf8"));
const HEAVY = JSON.parse(readFileSync(new URL("../vectors/heavy.json", import.meta.url), "utf8"));
const RANGES = JSON.parse(readFileSync(new URL("../vectors/ranges.json", import.meta.url), "utf8"));
const SFP = JSON.parse(readFileSync(new URL("../vectors/sfp.json", import.meta.url), "utf8"));
const NGRAM = JSON.parse(readFileSync(new URL("../vectors/rappor_ngram.json", import.meta.url), "utf8"));
const caseOf = (id) => [ORACLES, HEAVY, RANGES, SFP, NGRAM].map((v) => v.cases.find((c) => c.id === id)).find((c) => c !== undefined);
const streamSpec = (oracle, extra = {}) => ({
  schema: STREAM_SCHEMA, id: "s", oracle, period: "day",
  window: { kind: "day", epsilon: 50, delta: 0, length: null, tz: "UTC" }, report_epsilon: oracle.epsilon ?? 1, ...extra,
});

const CASES = [
  ["pem-0", { top_k: 4, alpha: null }, ["quantiles"]],
  ["treehist-3", { alpha: 0.01 }, ["ranges"]],
  ["sfp-0", { alpha: 0.05, max_candidates: 64 }, ["top_k"]], // SFP has no top-k rule
  ["rappor-ngram-1", { alpha: 0.01, edge_threshold: 0.05, max_candidates: 500 }, ["top_k"]],
  ["hierarchical-histogram-2", { quantiles: [0.5], ranges: [[0, 1]] }, ["top_k"]],
  ["square-wave-1", { ranges: [] }, ["alpha"]],
];

for (const [id, answers, foreign] of CASES) {
  test(`a ${id} stream with answers: the device reports as without them; a foreign field is refused by name`, () => {
    const c = caseOf(id);
    const words = Array.from({ length: c.spec.schema === "deniable.rappor-ngram-spec/1" ? c.spec.words_per_report : 64 }, (_, i) => BigInt(i * 2654435761 % 4294967296));
    const plain = makeStreamClient(streamSpec(c.spec), { cryptoImpl: wordsCrypto(words) });
    const withAnswers = makeStreamClient(streamSpec(c.spec, { answers }), { cryptoImpl: wordsCrypto(words) });
    const value = c.values[0];
    assert.deepEqual(withAnswers.encode([withAnswers.report(value)]), plain.encode([plain.report(value)]));
    assert.deepEqual(withAnswers.spec.answers, answers);
    const bad = streamSpec(c.spec, { answers: { ...answers, [foreign[0]]: 1 } });
    assert.throws(() => makeStreamClient(bad), new RegExp(`\`answers\` has an unknown field "${foreign[0]}"`));
    assert.throws(() => makeStreamClient(streamSpec(c.spec, { answers: [1] })), /`answers` must be an object of/);
  });
}

test("answers on a stream of another oracle are refused, as Python refuses them", () => {
  const c = caseOf("olh-0");
  assert.throws(() => makeStreamClient(streamSpec(c.spec, { answers: { top_k: 2 } })), /`answers` are for heavy-hitter \(PEM, TreeHist, SFP, RAPPOR n-gram\), range and Square Wave streams only/);
});
