// oraclesmemo.js: a device of the longitudinal oracles (L-GRR, L-SUE, L-OUE, L-OSUE,
// LOLOHA) and of RAPPOR that keeps its permanent responses on the device (docs/telemetry.md,
// "The browser client"; the words of each round in docs/specs.md).
//
// makeDevice(spec, { storage, device }) draws the permanent response (PRR) of a value the
// first time the value is reported and keeps it in `storage` (localStorage in a browser: any
// object with getItem/setItem, or a Map), under the device's name: the memo is keyed as
// Python's MemoStore keys it, by (device, question), so one device holds one memo for every
// stream it reports to.  Every later report of the value is a fresh instantaneous response
// of the kept PRR.  As in Python (oracles/_longitudinal.py's pin), a device holds the PRRs
// of ONE permanent stage across every longitudinal oracle: the question
// "longitudinal/permanent" pins it (algorithm, k or g, the PRR's thresholds), and a spec
// whose PRR differs is refused with a PrivacyError, never given a second PRR of the same
// values; a spec that changes only the instantaneous response keeps the PRRs.  RAPPOR's
// cohort is pinned to the number of cohorts and each PRR to its permanent stage, per
// question (Python's RapporClient).  tests/js/oracles.test.mjs replays every device case
// of the vectors with it.

import { randomWords } from "./randomizer.js";
import { PrivacyError, SpecError, show, kindOf } from "./spec.js";
import { below, bucketOf, checkOracleSpec, checkValue, checkWords, keepOrUniform, packBits, unaryRound } from "./oracles.js";
import { RAPPOR_SCHEMA, bloomBits, checkRapporSpec, cohortOf, rapporInstantaneous, rapporPermanent } from "./oraclesrappor.js";

const LONGITUDINAL = Object.freeze(["longitudinal-grr/1", "longitudinal-unary/1", "loloha/1"]);
/** Where a device's memo lives in the storage: PREFIX + device + "/" + the memo question. */
export const MEMO_PREFIX = "deniable.memo/1/";
/** The device-level pin of every longitudinal oracle (Python's `longitudinal/permanent`). */
export const PIN_QUESTION = "longitudinal/permanent";

/** A storage with getItem/setItem (localStorage), or a Map, as { get, set } of strings. */
function wrapStorage(storage) {
  if (storage && typeof storage.getItem === "function" && typeof storage.setItem === "function") {
    return { get: (key) => storage.getItem(key), set: (key, value) => storage.setItem(key, value) };
  }
  if (storage instanceof Map) return { get: (key) => storage.get(key) ?? null, set: (key, value) => storage.set(key, value) };
  throw new SpecError("storage", `must be a Storage (getItem/setItem: the browser's local storage) or a Map, got ${show(storage)}.`);
}

/** The identity of the permanent stage: what the kept PRRs are pinned to. */
function permanentKey(c) {
  if (c.algorithm === "longitudinal-grr/1") return `longitudinal-grr/1{"k":${c.k},"keep_1":${c.keep1}}`;
  if (c.algorithm === "longitudinal-unary/1") return `longitudinal-unary/1{"k":${c.k},"p1":${c.p1},"q1":${c.q1}}`;
  return `loloha/1{"buckets":${c.g},"keep_1":${c.keep1}}`;
}

function hexBits(hex, k) {
  return Array.from({ length: k }, (_, j) => (parseInt(hex.slice(2 * (j >> 3), 2 * (j >> 3) + 2), 16) >> (j & 7)) & 1);
}

/**
 * The memo of a device in a storage: read(question) gives the entry (null if none; an
 * unreadable one throws), write(entries) stores [question, entry] pairs.
 */
function openMemo(storage, device) {
  if (typeof device !== "string" || device.length === 0) throw new SpecError("device", `must be a non-empty string (the device's name in the storage), got ${show(device)}.`);
  const store = wrapStorage(storage);
  const prefix = `${MEMO_PREFIX}${encodeURIComponent(device)}/`;

  function read(question) {
    const key = prefix + question;
    const raw = store.get(key);
    if (raw === null || raw === undefined) return null;
    let entry;
    try {
      entry = JSON.parse(raw);
    } catch {
      entry = null;
    }
    if (entry === null || typeof entry !== "object" || typeof entry.pin !== "string") {
      // never redrawn: a fresh PRR would reset the privacy the kept one gives
      throw new SpecError("storage", `holds an unreadable memo at ${show(key)} (got ${show(raw)}); it is not redrawn.`);
    }
    return entry;
  }

  function write(entries) {
    for (const [question, entry] of entries) store.set(prefix + question, JSON.stringify(entry));
  }

  return { prefix, read, write };
}

/** The device, checked; `stream` is the option of an earlier client, refused by name. */
function deviceName(options) {
  if ("stream" in options) {
    throw new SpecError("stream", `is no longer an option: the memo is kept per device, as Python's MemoStore keeps it (one permanent stage per device across streams); pass \`device\` (default "default"), got stream ${show(options.stream)}.`);
  }
  return options.device ?? "default";
}

/**
 * A device of one longitudinal oracle, its permanent responses kept in `storage`.
 *
 * report(value[, { words }]): the value's report; the words are drawn from
 * crypto.getRandomValues unless given (then exactly wordsNeeded(value) BigInt words: the
 * PRR's words first when the value is new, then the instantaneous response's two words, or
 * k for the unary ones; LOLOHA draws its hash seeds, four words, in its first round).
 * held(value): the PRR kept for the value (null if none).  The memo is written before the
 * report is returned, so no report leaves the device from a PRR that was not kept.
 */
export function makeDevice(spec, options = {}) {
  const { storage, cryptoImpl = globalThis.crypto } = options;
  const device = deviceName(options);
  if (spec !== null && typeof spec === "object" && spec.schema === RAPPOR_SCHEMA) return rapporDevice(spec, storage, device, cryptoImpl);
  const c = checkOracleSpec(spec);
  if (!LONGITUDINAL.includes(c.algorithm)) {
    throw new SpecError("algorithm", `must be a longitudinal oracle (${LONGITUDINAL.join(", ")}) to keep a memo, got ${show(c.algorithm)}.`);
  }
  const pin = permanentKey(c);
  const { prefix, read, write } = openMemo(storage, device);

  /** Refuse a device pinned to another permanent stage (Python's _pin), nothing stored. */
  function checkPin() {
    const stage = read(PIN_QUESTION);
    if (stage !== null && stage.pin !== pin) {
      throw new PrivacyError("spec", `has another permanent stage (${pin}) than the one device ${show(device)} keeps (${stage.pin}): a second permanent response of the same values is refused; only the instantaneous response may change.`);
    }
  }
  const loloha = c.algorithm === "loloha/1";
  const unary = c.algorithm === "longitudinal-unary/1";

  /** A kept PRR, checked: a hex string of k packed bits (unary), else an integer in range. */
  function keptPrr(entry, q) {
    const m = loloha ? c.g : c.k;
    const ok = unary ? typeof entry.prr === "string" && /^[0-9a-f]*$/.test(entry.prr) && entry.prr.length === 2 * Math.ceil(c.k / 8) : Number.isSafeInteger(entry.prr) && entry.prr >= 0 && entry.prr < m;
    if (!ok || entry.pin !== pin) {
      throw new SpecError("storage", `holds an unreadable memo at ${show(prefix + q)} (got ${show(entry)}); it is not redrawn.`);
    }
    return entry.prr;
  }

  function seeds() {
    const s = read("loloha/seed");
    return s === null ? null : [BigInt(s.a), BigInt(s.b)];
  }

  /** The memo question of a value's PRR (LOLOHA: of its bucket under the device's seeds). */
  function question(x, s) {
    return loloha ? `loloha/prr/${bucketOf(s[0], s[1], x, c.g)}` : `longitudinal/prr/${x}`;
  }

  function wordsNeeded(value) {
    const x = checkValue(value, c.k);
    checkPin();
    const irr = unary ? c.k : 2;
    const s = loloha ? seeds() : null;
    if (loloha && s === null) return 4 + 2 + irr;
    const prr = read(question(x, s)) === null ? (unary ? c.k : 2) : 0;
    return prr + irr;
  }

  function held(value) {
    const x = checkValue(value, c.k);
    const s = loloha ? seeds() : null;
    if (loloha && s === null) return null;
    const q = question(x, s);
    const entry = read(q);
    return entry === null ? null : keptPrr(entry, q);
  }

  function report(value, { words } = {}) {
    const x = checkValue(value, c.k);
    const n = wordsNeeded(x);
    const w = words === undefined ? randomWords(n, cryptoImpl) : checkWords(words, n);
    let i = 0;
    const writes = [[PIN_QUESTION, { pin }]];
    let s = loloha ? seeds() : null;
    if (loloha && s === null) {
      const top = w.slice(0, 4).map((word) => word >> 32n); // a low, a high, b low, b high
      s = [top[0] | (top[1] << 32n), top[2] | (top[3] << 32n)];
      i = 4;
      writes.push(["loloha/seed", { pin: "loloha-seed/multiply-add-shift/1", a: String(s[0]), b: String(s[1]) }]);
    }
    const q = question(x, s);
    const kept = read(q);
    let prr;
    if (kept !== null) {
      prr = keptPrr(kept, q);
    } else if (unary) {
      prr = packBits(unaryRound(x, w.slice(0, c.k), c.p1, c.q1));
      i = c.k;
    } else {
      const input = loloha ? bucketOf(s[0], s[1], x, c.g) : x;
      prr = keepOrUniform(input, w[i], w[i + 1], c.keep1, loloha ? c.g : c.k);
      i += 2;
    }
    if (kept === null) writes.push([q, { pin, prr }]);
    let out;
    if (unary) {
      const bits = hexBits(prr, c.k);
      out = packBits(bits.map((bit, j) => below(w[i + j], c.q2 + BigInt(bit) * (c.p2 - c.q2))));
    } else {
      const y = keepOrUniform(prr, w[i], w[i + 1], c.keep2, loloha ? c.g : c.k);
      out = loloha ? [String(s[0]), String(s[1]), y] : y;
    }
    write(writes);
    return out;
  }

  return Object.freeze({ spec, device, k: c.k, algorithm: c.algorithm, permanentKey: pin, wordsNeeded, held, report });
}

/**
 * A RAPPOR device (makeDevice with a spec of schema "deniable.rappor-spec/1"): its cohort,
 * drawn from one word in its first round and pinned to the number of cohorts, and the PRR
 * of each string value (m words) kept, pinned to m, h, cohorts, f and the hash family;
 * every report is [cohort, the m IRR bits packed as hex] from m fresh words.  A kept cohort
 * or PRR of another stage is refused with a PrivacyError (Python's RapporClient).
 */
function rapporDevice(spec, storage, device, cryptoImpl) {
  const c = checkRapporSpec(spec);
  const { prefix, read, write } = openMemo(storage, device);
  const cohortPin = `rappor-cohort{"cohorts":${c.cohorts}}`; // Python's Rappor.cohort_key
  const hexLength = c.m / 4;
  const checkString = (value) => {
    if (typeof value !== "string") throw new SpecError("value", `must be a string (RAPPOR reports strings), got ${kindOf(value)}.`);
    return value;
  };
  const prrQuestion = (value) => `rappor/prr/${encodeURIComponent(value)}`;

  function kept(question, pin, valid) {
    const entry = read(question);
    if (entry === null) return null;
    if (entry.pin !== pin) {
      throw new PrivacyError("spec", `has another permanent stage (${pin}) than the one device ${show(device)} keeps for ${show(question)} (${entry.pin}): a second cohort or permanent response is refused; only p and q (the instantaneous response) may change.`);
    }
    if (!valid(entry)) throw new SpecError("storage", `holds an unreadable memo at ${show(prefix + question)} (got ${show(entry)}); it is not redrawn.`);
    return entry;
  }
  const cohort = () => kept("rappor/cohort", cohortPin, (e) => Number.isSafeInteger(e.cohort) && e.cohort >= 0 && e.cohort < c.cohorts)?.cohort ?? null;
  const held = (value) => kept(prrQuestion(checkString(value)), c.pin, (e) => typeof e.prr === "string" && /^[0-9a-f]*$/.test(e.prr) && e.prr.length === hexLength)?.prr ?? null;

  function wordsNeeded(value) {
    checkString(value);
    return (cohort() === null ? 1 : 0) + (held(value) === null ? c.m : 0) + c.m;
  }

  function report(value, { words } = {}) {
    const n = wordsNeeded(value);
    const w = words === undefined ? randomWords(n, cryptoImpl) : checkWords(words, n);
    const writes = [];
    let i = 0;
    let coh = cohort();
    if (coh === null) {
      coh = cohortOf(c, w[i++]);
      writes.push(["rappor/cohort", { pin: cohortPin, cohort: coh }]);
    }
    let prr = held(value);
    if (prr === null) {
      prr = packBits(rapporPermanent(c, bloomBits(c, coh, value), w.slice(i, i + c.m)));
      i += c.m;
      writes.push([prrQuestion(value), { pin: c.pin, prr }]);
    }
    const out = [coh, rapporInstantaneous(c, hexBits(prr, c.m), w.slice(i, i + c.m))];
    write(writes);
    return out;
  }

  return Object.freeze({ spec, device, algorithm: c.algorithm, permanentKey: c.pin, wordsNeeded, held, cohort, report });
}
