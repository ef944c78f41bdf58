// batch.js: a device's reports as the binary report batch a telemetry stream takes
// (format deniable.batch/1, docs/specs.md "Report batches"), and its POST with the device
// token (docs/telemetry.md, "The browser client").
//
// encodeBatch(oracleSpec, reports) builds, byte for byte, what Python's
// deniable.distributed.encode_batch writes for the same reports: a 48-byte header (magic
// "DNRB", version 1, flags 0, SHA-256 of the oracle's key, the number of reports), then
// each report at the oracle's record, little-endian.  Reports are in the form the clients
// give them (oracles.js, oraclesmemo.js): packed bits as hex, [a, b, y] with decimal
// seeds, a list of decimal words, an integer, RAPPOR's [cohort, hex].  Every report is
// checked first (a SpecError naming `reports[i]`), so no batch is made of a report the
// server would refuse.  tests/js/batch.test.mjs replays tests/vectors/batches.json, which
// Python's encoder writes (tests/test_batch_vectors.py keeps it from drifting).

import { checkOracleSpec } from "./oracles.js";
import { RAPPOR_SCHEMA, checkRapporSpec } from "./oraclesrappor.js";
import { HttpError } from "./session.js";
import { SPEC_SCHEMA, SpecError, checkSpec, show } from "./spec.js";

/** The media type of a binary batch. */
export const BATCH_TYPE = "application/octet-stream";
/** Bytes before the first report. */
export const BATCH_HEADER_SIZE = 48;
const M64 = (1n << 64n) - 1n;
const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

/** SHA-256 (FIPS 180-4) of a Uint8Array: 32 bytes.  Pure, so it works where crypto.subtle
 * does not (a page served over plain HTTP). */
export function sha256(bytes) {
  const h = new Uint32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
  const padded = new Uint8Array(Math.ceil((bytes.length + 9) / 64) * 64);
  padded.set(bytes);
  padded[bytes.length] = 0x80;
  const view = new DataView(padded.buffer);
  view.setBigUint64(padded.length - 8, BigInt(bytes.length) * 8n);
  const w = new Uint32Array(64);
  const rotr = (x, n) => (x >>> n) | (x << (32 - n));
  for (let at = 0; at < padded.length; at += 64) {
    for (let t = 0; t < 16; t++) w[t] = view.getUint32(at + 4 * t);
    for (let t = 16; t < 64; t++) {
      const s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >>> 3);
      const s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >>> 10);
      w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    let [a, b, c, d, e, f, g, hh] = h;
    for (let t = 0; t < 64; t++) {
      const t1 = (hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[t] + w[t]) >>> 0;
      const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) >>> 0;
      [hh, g, f, e, d, c, b, a] = [g, f, e, (d + t1) >>> 0, c, b, a, (t1 + t2) >>> 0];
    }
    [a, b, c, d, e, f, g, hh].forEach((x, i) => { h[i] = h[i] + x; });
  }
  const out = new Uint8Array(32);
  const outView = new DataView(out.buffer);
  h.forEach((x, i) => outView.setUint32(4 * i, x));
  return out;
}

/** A packed-bits hex string of `bytes` bytes whose padding bits past `bits` are 0. */
function hexBytes(report, bytes, bits, where) {
  if (typeof report !== "string" || report.length !== 2 * bytes || !/^[0-9a-f]*$/.test(report)) {
    throw new SpecError(where, `must be ${bytes} bytes of packed bits as lower-case hex (${2 * bytes} digits), got ${show(report)}.`);
  }
  const out = Uint8Array.from({ length: bytes }, (_, i) => parseInt(report.slice(2 * i, 2 * i + 2), 16));
  if (bits % 8 && out[bytes - 1] >> (bits % 8)) throw new SpecError(where, `has a padding bit set past bit ${bits - 1}: ${show(report)}.`);
  return out;
}

/** A 64-bit word given as a decimal string or a BigInt. */
function word(x, where) {
  const ok = typeof x === "bigint" || (typeof x === "string" && /^(0|[1-9][0-9]*)$/.test(x));
  const v = ok ? BigInt(x) : -1n;
  if (v < 0n || v > M64) throw new SpecError(where, `must be a 64-bit word (a decimal string or a BigInt in [0, 2**64)), got ${show(x)}.`);
  return v;
}

function integer(x, max, where) {
  if (!Number.isSafeInteger(x) || x < 0 || x > max) throw new SpecError(where, `must be an integer in 0..${max}, got ${show(x)}.`);
  return x;
}

/** The record of one report: { size, write(view, at, report, where) } of the oracle. */
function recordOf(spec) {
  if (spec !== null && typeof spec === "object" && spec.schema === RAPPOR_SCHEMA) {
    const c = checkRapporSpec(spec);
    return {
      key: spec.key,
      size: 2 + c.m / 8,
      write(view, at, r, where) {
        if (!Array.isArray(r) || r.length !== 2) throw new SpecError(where, `must be a RAPPOR report [cohort, hex], got ${show(r)}.`);
        view.setUint16(at, integer(r[0], c.cohorts - 1, `${where}[0]`), true);
        new Uint8Array(view.buffer).set(hexBytes(r[1], c.m / 8, c.m, `${where}[1]`), at + 2);
      },
    };
  }
  if (spec !== null && typeof spec === "object" && spec.schema === SPEC_SCHEMA) {
    // k-ary randomized response's question spec: one uint16 a report (k <= 65,536), else uint32
    const c = checkSpec(spec);
    if (c.algorithm !== "keep-or-forced/1") {
      throw new SpecError("oracle.algorithm", `must be k-ary randomized response ("keep-or-forced/1") for a question spec in a batch, got ${show(c.algorithm)}.`);
    }
    const wide = c.truths > 65536;
    return {
      key: spec.key,
      size: wide ? 4 : 2,
      write(view, at, r, where) {
        const x = integer(r, c.reports - 1, where);
        if (wide) view.setUint32(at, x, true);
        else view.setUint16(at, x, true);
      },
    };
  }
  const c = checkOracleSpec(spec);
  const kind = spec.report;
  if (kind === "packed-bits") {
    const bytes = Math.ceil(c.k / 8);
    return { key: c.key, size: bytes, write: (view, at, r, where) => new Uint8Array(view.buffer).set(hexBytes(r, bytes, c.k, where), at) };
  }
  if (kind === "hash-bucket") {
    return {
      key: c.key,
      size: 24,
      write(view, at, r, where) {
        if (!Array.isArray(r) || r.length !== 3) throw new SpecError(where, `must be a hashed report [a, b, y], got ${show(r)}.`);
        view.setBigUint64(at, word(r[0], `${where}[0]`), true);
        view.setBigUint64(at + 8, word(r[1], `${where}[1]`), true);
        view.setBigUint64(at + 16, BigInt(integer(r[2], c.g - 1, `${where}[2]`)), true);
      },
    };
  }
  if (kind === "linear-hash") {
    return {
      key: c.key,
      size: 8 * c.m,
      write(view, at, r, where) {
        if (!Array.isArray(r) || r.length !== c.m) throw new SpecError(where, `must be a list of ${c.m} 64-bit words, got ${show(r)}.`);
        r.forEach((x, i) => view.setBigUint64(at + 8 * i, word(x, `${where}[${i}]`), true));
      },
    };
  }
  if (kind === "row-bit") return { key: c.key, size: 4, write: (view, at, r, where) => view.setUint32(at, integer(r, 2 * c.rows - 1, where), true) };
  // "value" (L-GRR): one int64
  return { key: c.key, size: 8, write: (view, at, r, where) => view.setBigInt64(at, BigInt(integer(r, c.k - 1, where)), true) };
}

/**
 * The binary batch (deniable.batch/1) of `reports` of the oracle of `oracleSpec` (an
 * oracle spec, schema "deniable.oracle/1", or a RAPPOR spec, "deniable.rappor-spec/1":
 * the `oracle` of a stream spec), as a Uint8Array.  An empty list, a report of the wrong
 * form or out of the oracle's range throws a SpecError naming `reports` or `reports[i]`.
 */
export function encodeBatch(oracleSpec, reports) {
  const rec = recordOf(oracleSpec);
  if (typeof rec.key !== "string" || rec.key.length === 0) throw new SpecError("key", `must be the oracle's key (a non-empty string), got ${show(rec.key)}.`);
  if (!Array.isArray(reports) || reports.length === 0) {
    throw new SpecError("reports", `must be a non-empty list of reports (the server refuses an empty batch), got ${show(reports)}.`);
  }
  const out = new Uint8Array(BATCH_HEADER_SIZE + reports.length * rec.size);
  const view = new DataView(out.buffer);
  out.set([0x44, 0x4e, 0x52, 0x42]); // "DNRB"
  view.setUint16(4, 1, true); // version
  view.setUint16(6, 0, true); // flags: none
  out.set(sha256(new TextEncoder().encode(rec.key)), 8);
  view.setBigUint64(40, BigInt(reports.length), true);
  reports.forEach((r, i) => rec.write(view, BATCH_HEADER_SIZE + i * rec.size, r, `reports[${i}]`));
  return out;
}

/**
 * POST a batch body to `${base}/streams/${stream}/batches` with the device token; resolves
 * to the server's answer (201: { stream, day, reports, epsilon, window }).  Any other
 * status rejects with an HttpError carrying the status and the server's error (429: the
 * device's budget window is spent; nothing was stored).  `fetchImpl` is the page's fetch
 * unless given; the request goes to the service only.
 */
export async function postBatch(stream, body, { token, base = "", fetchImpl = globalThis.fetch } = {}) {
  if (typeof stream !== "string" || stream.length === 0) throw new SpecError("stream", `must be the stream's id, got ${show(stream)}.`);
  if (typeof token !== "string" || token.length === 0) throw new SpecError("token", `must be the device token of the stream (POST /api/streams/{id}/devices), got ${show(token)}.`);
  if (!(body instanceof Uint8Array) || body.length < BATCH_HEADER_SIZE) throw new SpecError("body", "must be a batch from encodeBatch (a Uint8Array).");
  const response = await fetchImpl(`${base}/streams/${encodeURIComponent(stream)}/batches`, {
    method: "POST",
    headers: { "Content-Type": BATCH_TYPE, Authorization: `Bearer ${token}` },
    body,
  });
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = null;
  }
  if (response.status !== 201) {
    throw new HttpError(response.status, data?.error ?? `the batch was refused (HTTP ${response.status}).`, data);
  }
  return data;
}
