// stream.js: a device of a telemetry stream (docs/telemetry.md, "The browser client"): it
// reads the stream spec the service serves (GET /streams/{id}, schema
// "deniable.stream-spec/1"), randomizes each value with the stream's oracle on the device
// (oracles.js; k-ary randomized response, whose spec is a question spec, through
// randomizer.js; the longitudinal oracles and RAPPOR through oraclesmemo.js, their
// permanent responses kept in the device's storage; the count mean sketches, CMS and HCMS,
// through sketches.js, a fresh row and flips every report, nothing kept; the heavy-hitter
// protocols, PEM and TreeHist, through heavy.js, a fresh group and one linear-hash report of
// its prefix every report, nothing kept; the range mechanisms, HierarchicalHistogram and
// HaarHRR, and Square Wave through ranges.js, a fresh level or cell every report, nothing
// kept; the Sequence Fragment Puzzle through sfp.js, a fresh position and both sketch
// reports every report, nothing kept; RAPPOR n-gram discovery through ngram.js, fresh pairs
// and PRRs every report, nothing kept: one collection a report) and posts the
// reports as one binary batch with the device token (batch.js).  The only requests are to
// the service.

import { encodeBatch, postBatch } from "./batch.js";
import { ORACLE_SCHEMA, makeOracle } from "./oracles.js";
import { makeDevice } from "./oraclesmemo.js";
import { RAPPOR_SCHEMA } from "./oraclesrappor.js";
import { CMS_SCHEMA, CMS_SCHEMA_2, CMS_SCHEMAS, makeSketch } from "./sketches.js";
import { HEAVY_SCHEMA, makeHeavy } from "./heavy.js";
import { RANGE_SCHEMA, SQUARE_WAVE_SCHEMA, makeRange, makeSquareWave } from "./ranges.js";
import { SFP_SCHEMA, makeSfp } from "./sfp.js";
import { NGRAM_SCHEMA, makeNgram } from "./ngram.js";
import { HttpError } from "./session.js";
import { randomizeAnswer } from "./randomizer.js";
import { SPEC_SCHEMA, SpecError, checkSpec, show } from "./spec.js";

export const STREAM_SCHEMA = "deniable.stream-spec/1";
const MEMO = Object.freeze(["longitudinal-grr/1", "longitudinal-unary/1", "loloha/1", "rappor/1"]);
// The fields of a stream spec's `answers`, by its oracle's schema (Python's
// service/analysis/_stream_answers.py): the server's answer settings, which a device never uses.
const ANSWER_FIELDS = Object.freeze({
  [HEAVY_SCHEMA]: ["alpha", "top_k"], [SFP_SCHEMA]: ["alpha", "max_candidates"], [RANGE_SCHEMA]: ["quantiles", "ranges"], [SQUARE_WAVE_SCHEMA]: ["quantiles", "ranges"],
  [NGRAM_SCHEMA]: ["alpha", "edge_threshold", "max_candidates"],
});

/**
 * Check a stream spec as the service serves it: its schema, id and oracle (an oracle spec,
 * a RAPPOR spec, a count mean sketch's spec, a heavy-hitter protocol's spec (PEM,
 * TreeHist), a range mechanism's or Square Wave's spec, or k-ary randomized response's question
 * spec, or RAPPOR n-grams'), the optional `candidates` of a stream of strings (RAPPOR, CMS, HCMS: strings
 * for the server's estimate; a device may report any string), and the optional `answers` of
 * a heavy-hitter (PEM, TreeHist, SFP), range or Square Wave stream (the server's answer settings: their fields
 * are checked as Python names them, their values are the server's and left alone).  Returns
 * the spec.
 */
export function checkStreamSpec(spec) {
  if (spec === null || typeof spec !== "object" || Array.isArray(spec)) throw new SpecError("spec", `must be a stream spec object, got ${show(spec)}.`);
  if (spec.schema !== STREAM_SCHEMA) throw new SpecError("schema", `must be "${STREAM_SCHEMA}", got ${show(spec.schema)}.`);
  if (typeof spec.id !== "string" || spec.id.length === 0) throw new SpecError("id", `must be the stream's id (a non-empty string), got ${show(spec.id)}.`);
  const schema = spec.oracle?.schema;
  const schemas = [ORACLE_SCHEMA, RAPPOR_SCHEMA, CMS_SCHEMA, CMS_SCHEMA_2, HEAVY_SCHEMA, RANGE_SCHEMA, SQUARE_WAVE_SCHEMA, SFP_SCHEMA, NGRAM_SCHEMA];
  if (![...schemas, SPEC_SCHEMA].includes(schema)) {
    throw new SpecError("oracle.schema", `must be ${schemas.map((x) => `"${x}"`).join(", ")} or "${SPEC_SCHEMA}" (k-ary randomized response), got ${show(schema)}.`);
  }
  if (schema === SPEC_SCHEMA && checkSpec(spec.oracle).algorithm !== "keep-or-forced/1") {
    throw new SpecError("oracle.algorithm", `must be "keep-or-forced/1" (k-ary randomized response) for a question spec on a stream, got ${show(spec.oracle.algorithm)}.`);
  }
  if ("candidates" in spec) {
    const c = spec.candidates;
    if (schema !== RAPPOR_SCHEMA && !CMS_SCHEMAS.includes(schema)) throw new SpecError("candidates", `are for a stream of strings only (RAPPOR, CMS, HCMS: the strings its reports are decoded against), got them for ${show(spec.oracle.algorithm)}.`);
    if (!Array.isArray(c) || !c.every((s) => typeof s === "string")) throw new SpecError("candidates", `must be a list of strings, got ${show(c)}.`);
  }
  if ("answers" in spec) {
    const fields = Object.hasOwn(ANSWER_FIELDS, schema) ? ANSWER_FIELDS[schema] : null;
    const a = spec.answers;
    if (fields === null) throw new SpecError("answers", `are for heavy-hitter (PEM, TreeHist, SFP, RAPPOR n-gram), range and Square Wave streams only (the server's answer settings), got them for ${show(spec.oracle.algorithm)}.`);
    if (a === null || typeof a !== "object" || Array.isArray(a)) throw new SpecError("answers", `must be an object of ${fields.join(", ")}, got ${show(a)}.`);
    const unknown = Object.keys(a).find((k) => !fields.includes(k));
    if (unknown !== undefined) throw new SpecError("answers", `has an unknown field ${show(unknown)} (this stream's fields: ${fields.join(", ")}).`);
  }
  return spec;
}

/** GET `${base}/streams/${id}`: the stream spec devices read, checked. */
export async function fetchStream(id, { base = "", fetchImpl = globalThis.fetch } = {}) {
  if (typeof id !== "string" || id.length === 0) throw new SpecError("stream", `must be the stream's id, got ${show(id)}.`);
  const response = await fetchImpl(`${base}/streams/${encodeURIComponent(id)}`, { method: "GET" });
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = null;
  }
  if (response.status !== 200) throw new HttpError(response.status, data?.error ?? `stream ${show(id)} could not be read (HTTP ${response.status}).`, data);
  return checkStreamSpec(data);
}

/**
 * The client of one device in a stream: { id, spec, candidates, report(value), encode(reports),
 * send(reports), reportAndSend(values) }.  report(value) randomizes a value (0..k-1; RAPPOR,
 * CMS, HCMS, PEM, TreeHist, SFP, RAPPOR n-grams: a string; a range mechanism: 0..domain-1; Square Wave: a
 * number in [lower, upper]) into its report; the longitudinal oracles and RAPPOR keep their permanent
 * responses in `storage` (the page's localStorage unless given; a Map in tests) under
 * `device` (default "default": one memo per device, as Python keys it, whatever the
 * stream).  send(reports) posts one binary batch with `token` and resolves to the server's
 * answer; an HttpError carries a refusal (429: the device's budget window is spent).
 */
export function makeStreamClient(streamSpec, options = {}) {
  const spec = checkStreamSpec(streamSpec);
  const { token, base = "", fetchImpl = globalThis.fetch, cryptoImpl = globalThis.crypto } = options;
  const memo = MEMO.includes(spec.oracle.algorithm);
  let randomize;
  if (memo) {
    const storage = options.storage ?? globalThis.localStorage;
    const device = makeDevice(spec.oracle, { storage, cryptoImpl, ...("device" in options ? { device: options.device } : {}) });
    randomize = (value) => device.report(value);
  } else if (CMS_SCHEMAS.includes(spec.oracle.schema)) {
    const sketch = makeSketch(spec.oracle);
    randomize = (value) => sketch.randomizeValue(value, cryptoImpl);
  } else if (spec.oracle.schema === HEAVY_SCHEMA) {
    const heavy = makeHeavy(spec.oracle);
    randomize = (value) => heavy.randomizeValue(value, cryptoImpl);
  } else if (spec.oracle.schema === SFP_SCHEMA) {
    const sfp = makeSfp(spec.oracle);
    randomize = (value) => sfp.randomizeValue(value, cryptoImpl);
  } else if (spec.oracle.schema === NGRAM_SCHEMA) {
    const ngram = makeNgram(spec.oracle);
    randomize = (value) => ngram.randomizeValue(value, cryptoImpl);
  } else if (spec.oracle.schema === RANGE_SCHEMA || spec.oracle.schema === SQUARE_WAVE_SCHEMA) {
    const ordered = spec.oracle.schema === RANGE_SCHEMA ? makeRange(spec.oracle) : makeSquareWave(spec.oracle);
    randomize = (value) => ordered.randomizeValue(value, cryptoImpl);
  } else if (spec.oracle.schema === SPEC_SCHEMA) {
    randomize = (value) => randomizeAnswer(spec.oracle, value, cryptoImpl);
  } else {
    const oracle = makeOracle(spec.oracle);
    randomize = (value) => oracle.randomizeValue(value, cryptoImpl);
  }
  const encode = (reports) => encodeBatch(spec.oracle, reports);
  const send = (reports) => postBatch(spec.id, encode(reports), { token, base, fetchImpl });
  return Object.freeze({
    id: spec.id,
    spec,
    candidates: spec.candidates ?? null,
    report: randomize,
    encode,
    send,
    /** Each value's report, then one batch of them (the memo is written before). */
    reportAndSend: (values) => send(Array.from(values, randomize)),
  });
}
