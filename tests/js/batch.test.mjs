// A telemetry device in the browser: batch.js builds, byte for byte, the binary batches
// Python's encode_batch writes (tests/vectors/batches.json, kept from drifting by
// tests/test_batch_vectors.py) and posts them with the device token; stream.js makes a
// device of a stream spec, RAPPOR included; the memo is kept per device (Python's key),
// survives a reload of the storage, and pins one permanent stage per device across streams.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { BATCH_HEADER_SIZE, encodeBatch, postBatch, sha256 } from "../../src/deniable/service/static/batch.js";
import { MEMO_PREFIX, PIN_QUESTION, makeDevice } from "../../src/deniable/service/static/oraclesmemo.js";
import { STREAM_SCHEMA, fetchStream, makeStreamClient } from "../../src/deniable/service/static/stream.js";
import { FakeStorage } from "./_fakes.mjs";
import { VECTORS, caseWords, seededCrypto, wordsCrypto } from "./_helpers.mjs";

const ORACLES = JSON.parse(readFileSync(new URL("../vectors/oracles.json", import.meta.url), "utf8"));
const BATCHES = JSON.parse(readFileSync(new URL("../vectors/batches.json", import.meta.url), "utf8"));
const HEAVY = JSON.parse(readFileSync(new URL("../vectors/heavy.json", import.meta.url), "utf8"));
const RANGES = JSON.parse(readFileSync(new URL("../vectors/ranges.json", import.meta.url), "utf8"));
const SFP = JSON.parse(readFileSync(new URL("../vectors/sfp.json", import.meta.url), "utf8"));
const NGRAM = JSON.parse(readFileSync(new URL("../vectors/rappor_ngram.json", import.meta.url), "utf8"));
const caseOf = (id) => [ORACLES, HEAVY, RANGES, SFP, NGRAM].map((v) => v.cases.find((c) => c.id === id)).find((c) => c !== undefined);
const hex = (bytes) => Buffer.from(bytes).toString("hex");
const streamSpec = (id, oracle, extra = {}) => ({
  schema: STREAM_SCHEMA, id, oracle, period: "day",
  window: { kind: "day", epsilon: 50, delta: 0, length: null, tz: "UTC" }, report_epsilon: oracle.epsilon ?? 1, ...extra,
});

/** A fetch that records each request and answers `status` with `data`. */
function fakeFetch(status = 201, data = { stream: "app", reports: 1 }) {
  const requests = [];
  const fetch = async (url, init = {}) => {
    requests.push({ url, ...init });
    return { ok: status < 300, status, json: async () => data };
  };
  return { fetch, requests };
}

test("SHA-256 agrees with node's over the padding boundaries", () => {
  for (const n of [0, 1, 55, 56, 63, 64, 65, 119, 1000]) {
    const data = Uint8Array.from({ length: n }, (_, i) => (i * 7 + n) & 255);
    assert.equal(hex(sha256(data)), createHash("sha256").update(data).digest("hex"), `${n} bytes`);
  }
  assert.equal(hex(sha256(new TextEncoder().encode("abc"))), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"); // FIPS 180-2, B.1
});

test("every batch vector: encodeBatch writes Python's bytes, for every stream oracle, RAPPOR, the sketches, PEM/TreeHist, the range mechanisms and Square Wave", () => {
  assert.equal(BATCHES.schema, "deniable.batch-vectors/1");
  const algorithms = new Set();
  for (const v of BATCHES.cases) {
    const spec = caseOf(v.case).spec;
    algorithms.add(spec.algorithm);
    assert.equal(hex(encodeBatch(spec, v.reports)), v.body, v.case);
  }
  assert.deepEqual([...algorithms].sort(), ["count-mean-sketch/1", "count-mean-sketch/2", "haar-hrr/1", "hadamard-count-mean-sketch/1", "hadamard-response/1", "hierarchical-histogram/1", "linear-local-hashing/1", "local-hashing/1", "loloha/1", "longitudinal-grr/1", "longitudinal-unary/1", "optimized-unary/1", "prefix-linear-hashing/1", "rappor-ngram/1", "rappor/1", "sequence-fragment-puzzle/1", "square-wave/1", "subset-selection/1", "symmetric-unary/1"]);
});

test("the header is the documented one (magic, version, flags, key digest, count), derived here", () => {
  const c = caseOf("hadamard-0");
  const body = encodeBatch(c.spec, [1, 2, 9]);
  const view = new DataView(body.buffer);
  assert.equal(Buffer.from(body.subarray(0, 4)).toString("latin1"), "DNRB");
  assert.deepEqual([view.getUint16(4, true), view.getUint16(6, true)], [1, 0]);
  assert.equal(hex(body.subarray(8, 40)), createHash("sha256").update(c.spec.key, "utf8").digest("hex"));
  assert.equal(view.getBigUint64(40, true), 3n);
  assert.deepEqual([0, 1, 2].map((i) => view.getUint32(BATCH_HEADER_SIZE + 4 * i, true)), [1, 2, 9]);
  assert.equal(body.length, BATCH_HEADER_SIZE + 12);
});

test("bad reports are refused by name before any byte is made", () => {
  const sue = caseOf("sue-0").spec; // k = 5: one byte, bits 5..7 padding
  assert.throws(() => encodeBatch(sue, []), /^SpecError: `reports` must be a non-empty list/);
  assert.throws(() => encodeBatch(sue, ["01", "20"]), /`reports\[1\]` has a padding bit set past bit 4/);
  assert.throws(() => encodeBatch(sue, ["1"]), /`reports\[0\]` must be 1 bytes of packed bits/);
  const olh = caseOf("olh-0").spec; // g = 3
  assert.throws(() => encodeBatch(olh, [["1", "2", 3]]), /`reports\[0\]\[2\]` must be an integer in 0\.\.2, got 3/);
  assert.throws(() => encodeBatch(olh, [["1", String(2n ** 64n), 0]]), /`reports\[0\]\[1\]` must be a 64-bit word/);
  const lgrr = caseOf("l-grr-0").spec; // k = 5
  assert.throws(() => encodeBatch(lgrr, [0, 5]), /`reports\[1\]` must be an integer in 0\.\.4, got 5/);
  const rappor = caseOf("rappor-0-device").spec; // 4 cohorts, m = 16
  assert.throws(() => encodeBatch(rappor, [[4, "0000"]]), /`reports\[0\]\[0\]` must be an integer in 0\.\.3, got 4/);
  assert.throws(() => encodeBatch(rappor, [[0, "00"]]), /`reports\[0\]\[1\]` must be 2 bytes/);
  const hh = caseOf("hierarchical-histogram-0").spec; // 2 levels of OUE, k = 4 and 16
  assert.throws(() => encodeBatch(hh, [[2, "00"]]), /`reports\[0\]\[0\]` must be an integer in 0\.\.1, got 2/);
  assert.throws(() => encodeBatch(hh, [[0, "0000"]]), /`reports\[0\]\[1\]` must be 1 bytes of packed bits/); // level 0 has 4 values
  assert.throws(() => encodeBatch(hh, [[0, "10"]]), /`reports\[0\]\[1\]` has a padding bit set past bit 3/);
  assert.throws(() => encodeBatch(hh, [3]), /`reports\[0\]` must be a range report \[level, level report\]/);
  const haar = caseOf("haar-hrr-4").spec; // level 2: a Hadamard response over 4 values
  assert.throws(() => encodeBatch(haar, [[2, 8]]), /`reports\[0\]\[1\]` must be an integer in 0\.\.7, got 8/);
  const wave = caseOf("square-wave-0").spec;
  assert.throws(() => encodeBatch(wave, [wave.constants.cells]), /`reports\[0\]` must be an integer in 0\.\.6193, got 6194/);
});

test("postBatch sends the bytes with the device token to the stream's batches; a refusal is an HttpError", async () => {
  const spec = caseOf("l-grr-0").spec;
  const body = encodeBatch(spec, [0, 4]);
  const ok = fakeFetch(201, { stream: "s 1", reports: 2 });
  assert.deepEqual(await postBatch("s 1", body, { token: "tok", base: "https://x", fetchImpl: ok.fetch }), { stream: "s 1", reports: 2 });
  const [r] = ok.requests;
  assert.equal(r.url, "https://x/streams/s%201/batches");
  assert.equal(r.method, "POST");
  assert.deepEqual(r.headers, { "Content-Type": "application/octet-stream", Authorization: "Bearer tok" });
  assert.equal(r.body, body);
  const spent = fakeFetch(429, { error: "window spent" });
  await assert.rejects(postBatch("s", body, { token: "tok", fetchImpl: spent.fetch }), { name: "HttpError", status: 429, message: "window spent" });
  await assert.rejects(postBatch("s", body, { fetchImpl: ok.fetch }), /`token` must be the device token/);
});

test("a RAPPOR stream: the client reads the spec and its candidates, reports as the vectors, posts one batch", async () => {
  const c = caseOf("rappor-0-device");
  const spec = streamSpec("words", c.spec, { candidates: ["apple", "banana"] });
  const served = fakeFetch(200, spec);
  const got = await fetchStream("words", { base: "", fetchImpl: served.fetch });
  assert.equal(served.requests[0].url, "/streams/words");
  const post = fakeFetch(201, { stream: "words", reports: c.values.length });
  const words = c.words.flat().map(BigInt);
  const client = makeStreamClient(got, { token: "dev", storage: new FakeStorage(), cryptoImpl: wordsCrypto(words), fetchImpl: post.fetch });
  assert.deepEqual(client.candidates, ["apple", "banana"]);
  await client.reportAndSend(c.values);
  const sent = post.requests[0];
  assert.equal(sent.url, "/streams/words/batches");
  // the reports of the vectors, round by round through the device's memo, in one batch
  assert.equal(hex(sent.body), hex(encodeBatch(c.spec, c.reports)));
  const view = new DataView(sent.body.buffer);
  assert.equal(view.getUint16(BATCH_HEADER_SIZE, true), c.reports[0][0]);
  assert.throws(() => makeStreamClient({ ...spec, candidates: [1] }), /`candidates` must be a list of strings/);
  assert.throws(() => makeStreamClient(streamSpec("x", caseOf("olh-0").spec, { candidates: ["a"] })), /`candidates` are for a stream of strings only/);
  assert.throws(() => makeStreamClient({ ...spec, schema: "x" }), /`schema` must be "deniable.stream-spec\/1"/);
});

for (const id of ["cms-0", "hcms-2", "cms-4"]) {  // cms-4: a CMS of spec 2
  test(`a ${id.split("-")[0]} stream: the client reports the vectors' strings through sketches.js and posts Python's batch byte for byte`, async () => {
    const c = caseOf(id);
    const vector = BATCHES.cases.find((v) => v.case === id); // reports 0, 1 and the last four
    const n = c.values.length;
    const picked = [0, 1, n - 4, n - 3, n - 2, n - 1];
    const w = c.spec.words_per_report;
    const words = picked.flatMap((i) => c.words.slice(i * w, (i + 1) * w)).map(BigInt);
    const spec = streamSpec("words", c.spec, { candidates: ["apple", "pear"] });
    const post = fakeFetch(201, { stream: "words", reports: 6 });
    const client = makeStreamClient(spec, { token: "dev", cryptoImpl: wordsCrypto(words), fetchImpl: post.fetch });
    assert.deepEqual(client.candidates, ["apple", "pear"]);
    await client.reportAndSend(picked.map((i) => c.values[i]));
    assert.equal(post.requests[0].url, "/streams/words/batches");
    assert.equal(hex(post.requests[0].body), vector.body);
    // a string the sketch refuses is refused before any word is drawn, naming `value`
    const fresh = makeStreamClient(spec, { cryptoImpl: wordsCrypto([]) });
    assert.throws(() => fresh.report(""), /`value` must be a non-empty string/);
    assert.throws(() => fresh.report(7), /`value` must be a string/);
  });
}

test("bad sketch reports are refused by name before any byte is made", () => {
  const cms = caseOf("cms-0").spec; // k = 3, m = 10: 2 bytes, bits 10..15 padding
  assert.throws(() => encodeBatch(cms, [[3, "0000"]]), /`reports\[0\]\[0\]` must be an integer in 0\.\.2, got 3/);
  assert.throws(() => encodeBatch(cms, [[0, "0004"]]), /`reports\[0\]\[1\]` has a padding bit set past bit 9/);
  assert.throws(() => encodeBatch(cms, [[0, "00"]]), /`reports\[0\]\[1\]` must be 2 bytes/);
  assert.throws(() => encodeBatch(cms, ["0000"]), /`reports\[0\]` must be a CMS report \[row, hex\]/);
  const hcms = caseOf("hcms-2").spec; // k = 3, m = 8: reports 0..47
  assert.throws(() => encodeBatch(hcms, [0, 48]), /`reports\[1\]` must be an integer in 0\.\.47, got 48/);
  const tampered = structuredClone(cms);
  tampered.constants.flip -= 1000;
  assert.throws(() => encodeBatch(tampered, [[0, "0000"]]), /`constants.flip` must implement at most `epsilon`/);
});

test("a bad n-gram report's cohort or bits are named by their index in [label, cohort, hex]", () => {
  const c = caseOf("rappor-ngram-0"); // cohorts = 8, m = 32: 4 bytes
  const good = c.reports[0];
  const bad = (i, g) => ({ ...good, ngrams: good.ngrams.map((x, j) => (j === i ? g : x)) });
  assert.throws(() => encodeBatch(c.spec, [good, bad(1, ["1:__", 8, "ffffffff"])]), /`reports\[1\]\.ngrams\[1\]\[1\]` must be an integer in 0\.\.7, got 8/);
  assert.throws(() => encodeBatch(c.spec, [bad(0, ["0:a_", 0, "ff"])]), /`reports\[0\]\.ngrams\[0\]\[2\]` must be 4 bytes/);
  assert.throws(() => encodeBatch(c.spec, [bad(0, ["0:a_", 0])]), /`reports\[0\]\.ngrams\[0\]` must be an n-gram report \[label, cohort, hex\]/);
});

test("a k-ary randomized response stream: the question spec's reports as the vectors, one uint16 each", async () => {
  const c = VECTORS.cases.find((x) => x.id === "categorical-1"); // k = 5, uniform forcing
  const n = 12;
  const words = Array.from({ length: n }, (_, i) => caseWords(c, i)).flat();
  const post = fakeFetch();
  const client = makeStreamClient(streamSpec("g", c.spec), { token: "t", cryptoImpl: wordsCrypto(words), fetchImpl: post.fetch });
  await client.reportAndSend(c.truth.slice(0, n));
  const body = post.requests[0].body;
  // the layout derived here: the header, then each report of the vectors as a little-endian uint16
  const view = new DataView(body.buffer);
  assert.equal(body.length, BATCH_HEADER_SIZE + 2 * n);
  assert.equal(hex(body.subarray(8, 40)), createHash("sha256").update(c.spec.key, "utf8").digest("hex"));
  assert.deepEqual(Array.from({ length: n }, (_, i) => view.getUint16(BATCH_HEADER_SIZE + 2 * i, true)), c.reports.slice(0, n));
  // a report out of range or another question design is refused
  assert.throws(() => encodeBatch(c.spec, [5]), /`reports\[0\]` must be an integer in 0\.\.4/);
  const binary = VECTORS.cases.find((x) => x.spec.algorithm === "bernoulli-count/1").spec;
  assert.throws(() => makeStreamClient(streamSpec("w", binary)), /`oracle.algorithm` must be "keep-or-forced\/1"/);
  assert.throws(() => encodeBatch(binary, [1]), /`oracle.algorithm` must be k-ary randomized response/);
  const fresh = makeStreamClient(streamSpec("g", c.spec), { cryptoImpl: seededCrypto(1) });
  assert.throws(() => fresh.report(7), /must be a true answer in 0\.\.4, got one outside \(answers are not shown in errors\)/);
});

test("a stream of a first-report oracle posts reports in range; no storage is needed", async () => {
  const c = caseOf("olh-1");
  const post = fakeFetch();
  const client = makeStreamClient(streamSpec("o", c.spec), { token: "t", cryptoImpl: seededCrypto(3), fetchImpl: post.fetch });
  await client.reportAndSend([0, 5, 15]);
  const body = post.requests[0].body;
  assert.equal(body.length, BATCH_HEADER_SIZE + 3 * 24);
  const view = new DataView(body.buffer);
  for (let i = 0; i < 3; i++) assert.ok(view.getBigUint64(BATCH_HEADER_SIZE + 24 * i + 16, true) < BigInt(c.spec.constants.buckets));
});

for (const id of ["l-sue-0-device", "loloha-0-device", "rappor-1-device"]) {
  test(`${id}: a restart (the storage reloaded from its text) replays the same permanent responses`, () => {
    const c = caseOf(id);
    const half = Math.floor(c.values.length / 2);
    let storage = new FakeStorage();
    const run = (from, to) => {
      const device = makeDevice(c.spec, { storage, device: "phone" });
      for (let r = from; r < to; r++) {
        assert.deepEqual(device.report(c.values[r], { words: c.words[r].map(BigInt) }), c.reports[r], `${id} round ${r}`);
        assert.deepEqual(device.held(c.values[r]), c.prr[r], `${id} round ${r}: PRR`);
      }
    };
    run(0, half);
    const text = JSON.stringify([...storage.map]); // what localStorage keeps across a restart
    storage = new FakeStorage();
    for (const [k, v] of JSON.parse(text)) storage.setItem(k, v);
    run(half, c.values.length); // the kept PRRs (and cohort, seeds) are used: the vectors' words fit exactly
    assert.ok([...storage.map.keys()].every((k) => k.startsWith(`${MEMO_PREFIX}phone/`)));
  });
}

test("the memo is per device, as Python keys it: one permanent stage across streams, PRRs shared", () => {
  const grr = caseOf("l-grr-0-device").spec;
  const storage = new FakeStorage();
  const a = makeStreamClient(streamSpec("a", grr), { storage, cryptoImpl: seededCrypto(11) });
  a.report(3);
  assert.equal(JSON.parse(storage.getItem(`${MEMO_PREFIX}default/${PIN_QUESTION}`)).pin, makeDevice(grr, { storage }).permanentKey);
  // another stream with the same permanent stage reads the same PRR of 3 (one PRR per device and value)
  const b = makeDevice(grr, { storage, cryptoImpl: seededCrypto(12) });
  assert.equal(b.wordsNeeded(3), 2);
  // another stream of another stage (L-OSUE) on the same device is refused, nothing stored changes
  const before = new Map(storage.map);
  const other = makeStreamClient(streamSpec("b", caseOf("l-osue-0-device").spec), { storage, cryptoImpl: seededCrypto(13) });
  assert.throws(() => other.report(1), { name: "PrivacyError", message: /another permanent stage .* device "default" keeps/ });
  assert.deepEqual(storage.map, before);
  // RAPPOR keeps its own questions (Python's RapporClient): it coexists with the pin
  const rappor = makeStreamClient(streamSpec("r", caseOf("rappor-0-device").spec), { storage, cryptoImpl: seededCrypto(14) });
  assert.doesNotThrow(() => rappor.report("apple"));
  // another number of cohorts would draw a second cohort: refused
  const cohorts = structuredClone(caseOf("rappor-0-device").spec);
  cohorts.constants.cohorts += 1;
  assert.throws(() => makeDevice(cohorts, { storage }).report("pear"), { name: "PrivacyError", message: /rappor\/cohort/ });
  // the option of the per-stream client is refused by name, never silently given a fresh memo
  assert.throws(() => makeDevice(grr, { storage, stream: "a" }), /^SpecError: `stream` is no longer an option/);
  assert.throws(() => makeDevice(grr, { storage, device: "" }), /`device` must be a non-empty string/);
  assert.throws(() => makeStreamClient(streamSpec("a", grr), {}), /`storage` must be a Storage/);
});

test("bad heavy-hitter records are refused by name before any byte is made", () => {
  const spec = HEAVY.cases.find((c) => c.id === "pem-0").spec; // groups 8, 12, 16 bits; g = 8
  const good = HEAVY.cases.find((c) => c.id === "pem-0").records[0];
  assert.equal(encodeBatch(spec, [good]).length, BATCH_HEADER_SIZE + 8 * 5);
  assert.throws(() => encodeBatch(spec, [good.slice(1)]), /`reports\[0\]` must be a heavy-hitter record of 5 words/);
  assert.throws(() => encodeBatch(spec, [["3", ...good.slice(1)]]), /`reports\[0\]\[0\]` must be a group in 0\.\.2, got 3/);
  assert.throws(() => encodeBatch(spec, [["0", "1", ...good.slice(2)]]), /`reports\[0\]\[1\]` has a bit past its group's prefix of 8 bits/);
  assert.throws(() => encodeBatch(spec, [[...good.slice(0, 4), "8"]]), /`reports\[0\]\[4\]` must be a bucket in 0\.\.7, got 8/);
  assert.throws(() => encodeBatch(spec, [[...good.slice(0, 4), String(2n ** 64n)]]), /`reports\[0\]\[4\]` must be a 64-bit word/);
});

for (const id of ["pem-0", "treehist-3"]) {
  test(`a ${id.split("-")[0]} stream: the client reports the vectors' strings through heavy.js and posts Python's batch byte for byte`, async () => {
    const c = caseOf(id);
    const vector = BATCHES.cases.find((v) => v.case === id); // records 0, 1 and the last four
    const n = c.values.length;
    const picked = [0, 1, n - 4, n - 3, n - 2, n - 1];
    const w = c.spec.words_per_report;
    const words = picked.flatMap((i) => c.words.slice(i * w, (i + 1) * w)).map(BigInt);
    const spec = streamSpec("found", c.spec);
    const post = fakeFetch(201, { stream: "found", reports: 6 });
    const client = makeStreamClient(spec, { token: "dev", cryptoImpl: wordsCrypto(words), fetchImpl: post.fetch });
    assert.equal(client.candidates, null);
    await client.reportAndSend(picked.map((i) => c.values[i]));
    assert.equal(post.requests[0].url, "/streams/found/batches");
    assert.equal(hex(post.requests[0].body), vector.body);
    const fresh = makeStreamClient(spec, { cryptoImpl: wordsCrypto([]) });
    assert.throws(() => fresh.report(""), /`value` must be a non-empty string/);
    assert.throws(() => makeStreamClient({ ...spec, candidates: ["a"] }), /`candidates` are for a stream of strings only/);
  });
}

for (const id of ["hierarchical-histogram-2", "haar-hrr-5", "square-wave-1"]) {
  test(`a ${id} stream: the client reports the vectors' values through ranges.js and posts Python's batch byte for byte`, async () => {
    const c = caseOf(id);
    const vector = BATCHES.cases.find((v) => v.case === id); // reports 0, 1 and the last four
    const n = c.values.length;
    const picked = [0, 1, n - 4, n - 3, n - 2, n - 1];
    const words = picked.flatMap((i) => c.words[i]).map(BigInt); // the level word first, then its level's
    const spec = streamSpec("load", c.spec);
    const post = fakeFetch(201, { stream: "load", reports: 6 });
    const client = makeStreamClient(spec, { token: "dev", cryptoImpl: wordsCrypto(words), fetchImpl: post.fetch });
    await client.reportAndSend(picked.map((i) => c.values[i]));
    assert.equal(hex(post.requests[0].body), vector.body);
    const fresh = makeStreamClient(spec, { cryptoImpl: wordsCrypto([]) });
    assert.throws(() => fresh.report(Number.NaN), /`value` must be/); // refused before any word is drawn
    assert.throws(() => makeStreamClient({ ...spec, candidates: ["a"] }), /`candidates` are for a stream of strings only/);
  });
}
