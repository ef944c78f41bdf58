// batch.js: a device's reports as the binary report batch a telemetry stream takes
// (format deniable.batch/1, docs/specs.md "Report batches"), and its POST with the device
// token (docs/telemetry.md, "The browser client").
//
// encodeBatch(oracleSpec, reports) builds, byte for byte, what Python's
// deniable.distributed.encode_batch writes for the same reports: a 48-byte header (magic
// "DNRB", version 1, flags 0, SHA-256 of the oracle's key, the number of reports), then
// each report at the oracle's record, little-endian.  Reports are in the form the clients
// give them (oracles.js, oraclesmemo.js, sketches.js): packed bits as hex, [a, b, y] with
// decimal seeds, a list of decimal words, an integer, RAPPOR's [cohort, hex], CMS's
// [row, hex] (the row a uint16, then the packed bits), HCMS's integer 2 (j m + l) + b (an
// int64), PEM's and TreeHist's record [group, row words ..., bucket] (heavy.js: 2 + l W
// uint64 words), a range mechanism's [level, level report] (ranges.js: the level, a uint16
// when the level reports are bytes, else one item of their type, then the level oracle's
// record padded with zeros to the widest level's), Square Wave's cell (a uint16), SFP's
// [position, fragment report, whole-string report] (sfp.js: the position an int64 with HCMS,
// a uint16 with CMS, then each sketch report's record), RAPPOR n-grams' {pairs, ngrams, full}
// (ngram.js: the pairs a byte a position, then each n-gram report's RAPPOR record, then the
// full-string report's).  Every report is
// checked first (a SpecError naming `reports[i]`), so no batch is made of a report the
// server would refuse.  tests/js/batch.test.mjs replays tests/vectors/batches.json, which
// Python's encoder writes (tests/test_batch_vectors.py keeps it from drifting).

import { checkOracleSpec } from "./oracles.js";
import { RAPPOR_SCHEMA, checkRapporSpec } from "./oraclesrappor.js";
import { CMS_SCHEMAS, checkSketchSpec } from "./sketches.js";
import { HEAVY_SCHEMA, checkHeavyRecord, checkHeavySpec } from "./heavy.js";
import { RANGE_SCHEMA, SQUARE_WAVE_SCHEMA, checkRangeSpec, checkSquareWaveSpec } from "./ranges.js";
import { SFP_SCHEMA, checkSfpSpec } from "./sfp.js";
import { NGRAM_SCHEMA, checkNgramSpec } from "./ngram.js";
import { HttpError } from "./session.js";
import { sha256 } from "./digest.js";
import { SPEC_SCHEMA, SpecError, checkSpec, show } from "./spec.js";

export { sha256 };

/** The media type of a binary batch. */
export const BATCH_TYPE = "application/octet-stream";
/** Bytes before the first report. */
export const BATCH_HEADER_SIZE = 48;
const M64 = (1n << 64n) - 1n;

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

/**
 * Writes the RAPPOR record (the cohort as a uint16, then the packed bits) of the cohort
 * `r[first]` and hex `r[first + 1]` of the checked RAPPOR spec `c` at `at`; a bad one
 * throws a SpecError naming `where[first]` or `where[first + 1]`.
 */
function writeRappor(view, at, c, r, first, where) {
  view.setUint16(at, integer(r[first], c.cohorts - 1, `${where}[${first}]`), true);
  new Uint8Array(view.buffer).set(hexBytes(r[first + 1], c.m / 8, c.m, `${where}[${first + 1}]`), at + 2);
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
        writeRappor(view, at, c, r, 0, where);
      },
    };
  }
  if (spec !== null && typeof spec === "object" && CMS_SCHEMAS.includes(spec.schema)) {
    const c = checkSketchSpec(spec);
    if (c.mechanism === "hcms") {
      // one int64: 2 (j m + l) + b, below 2 k m (at most 2**33: a safe integer)
      return { key: c.key, size: 8, write: (view, at, r, where) => view.setBigInt64(at, BigInt(integer(r, 2 * c.k * c.m - 1, where)), true) };
    }
    const bytes = Math.ceil(c.m / 8);
    return {
      key: c.key,
      size: 2 + bytes,
      write(view, at, r, where) {
        if (!Array.isArray(r) || r.length !== 2) throw new SpecError(where, `must be a CMS report [row, hex], got ${show(r)}.`);
        view.setUint16(at, integer(r[0], c.k - 1, `${where}[0]`), true);
        new Uint8Array(view.buffer).set(hexBytes(r[1], bytes, c.m, `${where}[1]`), at + 2);
      },
    };
  }
  if (spec !== null && typeof spec === "object" && spec.schema === HEAVY_SCHEMA) {
    // PEM, TreeHist: 2 + l W uint64 words, the group, the rows, the bucket (each checked)
    const c = checkHeavySpec(spec);
    return {
      key: c.key,
      size: 8 * (2 + c.l * c.w),
      write(view, at, r, where) {
        checkHeavyRecord(c, r, where).forEach((x, i) => view.setBigUint64(at + 8 * i, x, true));
      },
    };
  }
  if (spec !== null && typeof spec === "object" && spec.schema === RANGE_SCHEMA) return rangeRecordOf(spec);
  if (spec !== null && typeof spec === "object" && spec.schema === SFP_SCHEMA) return sfpRecordOf(spec);
  if (spec !== null && typeof spec === "object" && spec.schema === NGRAM_SCHEMA) return ngramRecordOf(spec);
  if (spec !== null && typeof spec === "object" && spec.schema === SQUARE_WAVE_SCHEMA) {
    const c = checkSquareWaveSpec(spec);
    return { key: c.key, size: 2, write: (view, at, r, where) => view.setUint16(at, integer(r, c.cells - 1, where), true) };
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

/** A range mechanism's record: the level as one item (two bytes for byte items), then the level oracle's record padded to the widest. */
function rangeRecordOf(spec) {
  const c = checkRangeSpec(spec);
  const levels = spec.levels.map(recordOf);
  const first = spec.levels[0];
  // the level reports' item: a byte (packed bits), a uint64 word (hashed), a uint32
  // (Hadamard response), a uint16 (k-ary randomized response's category)
  const item = first.schema === SPEC_SCHEMA ? 2 : { "packed-bits": 1, "hash-bucket": 8, "row-bit": 4 }[first.report];
  if (item === undefined) throw new SpecError("levels[0].report", `must be packed-bits, hash-bucket or row-bit for a range mechanism, got ${show(first.report)}.`);
  const head = Math.max(2, item);
  const widest = Math.max(...levels.map((l) => l.size));
  return {
    key: c.key,
    size: head + widest,
    write(view, at, r, where) {
      if (!Array.isArray(r) || r.length !== 2) throw new SpecError(where, `must be a range report [level, level report], got ${show(r)}.`);
      const l = integer(r[0], c.h - 1, `${where}[0]`);
      levels[l].write(view, at + head, r[1], `${where}[1]`); // checked before the level is written
      if (head === 2) view.setUint16(at, l, true);
      else if (head === 4) view.setUint32(at, l, true);
      else view.setBigUint64(at, BigInt(l), true);
    },
  };
}

/** SFP: the position (int64 with HCMS, uint16 with CMS), then each sketch report's record. */
function sfpRecordOf(spec) {
  const c = checkSfpSpec(spec);
  const frag = recordOf(spec.fragment_sketch);
  const word = recordOf(spec.word_sketch);
  const head = c.sketch === "hcms" ? 8 : 2;
  return {
    key: c.key,
    size: head + frag.size + word.size,
    write(view, at, r, where) {
      if (!Array.isArray(r) || r.length !== 3) throw new SpecError(where, `must be an SFP report [position, fragment report, whole-string report], got ${show(r)}.`);
      const l = integer(r[0], c.positions - 1, `${where}[0]`);
      frag.write(view, at + head, r[1], `${where}[1]`);
      word.write(view, at + head + frag.size, r[2], `${where}[2]`);
      if (head === 8) view.setBigInt64(at, BigInt(l), true);
      else view.setUint16(at, l, true);
    },
  };
}

/** RAPPOR n-grams: the position pairs (a byte a position), each n-gram report's RAPPOR record, the full-string report's. */
function ngramRecordOf(spec) {
  const c = checkNgramSpec(spec);
  const gram = recordOf(spec.ngram_report);
  const gramSpec = checkRapporSpec(spec.ngram_report);
  const full = spec.full_report === null ? null : recordOf(spec.full_report);
  const k = 2 * c.pairs;
  return {
    key: c.key,
    size: k + k * gram.size + (full === null ? 0 : full.size),
    write(view, at, r, where) {
      if (r === null || typeof r !== "object" || !Array.isArray(r.pairs) || !Array.isArray(r.ngrams) || r.pairs.length !== c.pairs || r.ngrams.length !== k || (full === null) !== (r.full === null)) {
        throw new SpecError(where, `must be a RAPPOR n-gram report {pairs: ${c.pairs} pairs, ngrams: ${k} reports, full: ${full === null ? "null" : "a report"}}, got ${show(r)}.`);
      }
      const positions = r.pairs.flatMap((pair, i) => {
        if (!Array.isArray(pair) || pair.length !== 2) throw new SpecError(`${where}.pairs[${i}]`, `must be a pair [j1, j2], got ${show(pair)}.`);
        const j1 = integer(pair[0], c.positions - 1, `${where}.pairs[${i}][0]`);
        const j2 = integer(pair[1], c.positions - 1, `${where}.pairs[${i}][1]`);
        if (!(j1 < j2)) throw new SpecError(`${where}.pairs[${i}]`, `must be positions j1 < j2, got ${show(pair)}.`);
        return [j1, j2];
      });
      r.ngrams.forEach((g, i) => {
        if (!Array.isArray(g) || g.length !== 3) throw new SpecError(`${where}.ngrams[${i}]`, `must be an n-gram report [label, cohort, hex], got ${show(g)}.`);
        writeRappor(view, at + k + i * gram.size, gramSpec, g, 1, `${where}.ngrams[${i}]`); // [label, cohort, hex]: named from index 1
      });
      if (full !== null) full.write(view, at + k + k * gram.size, r.full, `${where}.full`);
      positions.forEach((j, i) => view.setUint8(at + i, j));
    },
  };
}

/**
 * The binary batch (deniable.batch/1) of `reports` of the oracle of `oracleSpec` (an
 * oracle spec, schema "deniable.oracle/1", a RAPPOR spec, "deniable.rappor-spec/1", or a
 * count mean sketch's, "deniable.cms-spec/1" or "/2", or a heavy-hitter protocol's,
 * "deniable.heavy-spec/1", or the Sequence Fragment Puzzle's, "deniable.sfp-spec/1", or RAPPOR
 * n-grams', "deniable.rappor-ngram-spec/1", or a range mechanism's, "deniable.range-spec/1", or Square
 * Wave's, "deniable.square-wave-spec/1": the `oracle` of a stream spec), as a
 * Uint8Array.  An empty list, a report of the wrong
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
