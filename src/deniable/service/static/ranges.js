// ranges.js: the device client of the mechanisms of ordered values: the range mechanisms
// (HierarchicalHistogram, HaarHRR: schema deniable.range-spec/1) and Square Wave (schema
// deniable.square-wave-spec/1); docs/ranges.md, docs/distributions.md, the algorithms in
// docs/specs.md.
//
// makeRange(spec) reads a range spec (oracles.range_spec) and returns a client whose
// randomize(value, words) turns a value 0..domain-1 and its words (the level word, then
// exactly the drawn level oracle's words_per_report words) into the report [level, the
// level oracle's report] through the frequency-oracle client oracles.js, bit for bit as
// Python's randomize (tests/js/ranges.test.mjs replays every case of tests/vectors/ranges.json).
// makeSquareWave(spec) reads a Square Wave spec (oracles.square_wave_spec); its
// randomize(value, words) turns a number and two words into the cell.  Words come from
// crypto.getRandomValues (randomizer.js's randomWords) unless given.

import { checkValue, checkWords, deviceClient, makeOracle, uniform } from "./oracles.js";
import { randomWords } from "./randomizer.js";
import { SpecError, fieldInteger, kindOf, show } from "./spec.js";

export const RANGE_SCHEMA = "deniable.range-spec/1";
export const SQUARE_WAVE_SCHEMA = "deniable.square-wave-spec/1";
export const RANGE_MECHANISMS = Object.freeze(["haar-hrr", "hierarchical-histogram"]);

const M64 = (1n << 64n) - 1n;
const GRID = 4096;

function object(value, field, what) {
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw new SpecError(field, `must be ${what}, got ${show(value)}.`);
  return value;
}

function epsilons(spec) {
  const eps = spec.epsilon;
  const implemented = spec.implemented_epsilon;
  if (typeof eps !== "number" || !(eps > 0) || typeof implemented !== "number" || !(implemented <= eps)) {
    throw new SpecError("implemented_epsilon", `must be a number at most \`epsilon\` (${show(eps)}), got ${show(implemented)}.`);
  }
  return eps;
}

/** Check a range spec (the fields the client uses); returns its checked form with the level clients. */
export function checkRangeSpec(spec) {
  object(spec, "spec", "a range spec object");
  if (spec.schema !== RANGE_SCHEMA) throw new SpecError("schema", `must be "${RANGE_SCHEMA}", got ${show(spec.schema)}.`);
  if (!RANGE_MECHANISMS.includes(spec.mechanism)) {
    throw new SpecError("mechanism", `must be one of ${RANGE_MECHANISMS.join(", ")}, got ${show(spec.mechanism)}.`);
  }
  if (spec.algorithm !== `${spec.mechanism}/1`) throw new SpecError("algorithm", `must be "${spec.mechanism}/1", got ${show(spec.algorithm)}.`);
  if (spec.report !== "level-report") throw new SpecError("report", `must be "level-report", got ${show(spec.report)}.`);
  const haar = spec.mechanism === "haar-hrr";
  const c = object(spec.constants, "constants", "an object");
  const b = fieldInteger(c, "branching", "constants.branching", 2, 2 ** 20);
  if (haar && b !== 2) throw new SpecError("constants.branching", `must be 2 for haar-hrr, got ${b}.`);
  const h = fieldInteger(c, "height", "constants.height", 1, 64);
  const domain = fieldInteger(c, "domain", "constants.domain", 2, 2 ** 40);
  if (b ** h !== domain) throw new SpecError("constants.domain", `must be branching ** height = ${b ** h}, got ${domain}.`);
  if (c.levels !== h) throw new SpecError("constants.levels", `must be the height ${h} (one level oracle a tree level), got ${show(c.levels)}.`);
  const eps = epsilons(spec);
  if (!Array.isArray(spec.levels) || spec.levels.length !== h) throw new SpecError("levels", `must be a list of ${h} level oracle specs, got ${show(spec.levels)}.`);
  const oracles = spec.levels.map((levelSpec, l) => {
    let oracle;
    try {
      oracle = makeOracle(levelSpec);
    } catch (e) {
      if (e instanceof SpecError) throw new SpecError(`levels[${l}].${e.field}`, e.message.slice(e.field.length + 3));
      throw e;
    }
    // HierarchicalHistogram: B**(l + 1) nodes; HaarHRR: a Hadamard response over max(2, 2**l)
    const k = haar ? Math.max(2, 2 ** l) : b ** (l + 1);
    if (oracle.k !== k) throw new SpecError(`levels[${l}].k`, `must be ${k} (the nodes of level ${l}), got ${show(oracle.k)}.`);
    if (haar && oracle.algorithm !== "hadamard-response/1") {
      throw new SpecError(`levels[${l}].algorithm`, `must be "hadamard-response/1" for haar-hrr, got ${show(oracle.algorithm)}.`);
    }
    // a level oracle's epsilon above the range spec's would weaken privacy unseen
    const levelEps = levelSpec.implemented_epsilon ?? levelSpec.epsilon;
    if (!(typeof levelEps === "number" && levelEps <= eps * (1 + 1e-14))) {
      throw new SpecError(`levels[${l}].epsilon`, `must be at most the spec's \`epsilon\` = ${eps}, got ${show(levelEps)}.`);
    }
    return oracle;
  });
  const words = oracles.map((o) => 1 + o.wordsPerReport);
  if (!Array.isArray(spec.words_per_report) || spec.words_per_report.length !== h || spec.words_per_report.some((w, l) => w !== words[l])) {
    throw new SpecError("words_per_report", `must be [${words.join(", ")}] (the level word and each level oracle's words), got ${show(spec.words_per_report)}.`);
  }
  return { mechanism: spec.mechanism, key: spec.key, haar, b, h, domain, oracles, words };
}

/** The node of x at level l and, for HaarHRR, the bit that flips the report (docs/specs.md). */
function node(c, x, l) {
  if (c.haar) return [x >> (c.h - l), (x >> (c.h - l - 1)) & 1];
  return [Math.floor(x / c.b ** (c.h - 1 - l)), 0];
}

/** The report [level, level report] of value x from its words (the level word first). */
function rangeReport(c, x, words) {
  const first = checkWords(words.slice(0, 1), 1)[0];
  const l = uniform(first, c.h);
  const rest = checkWords(words.slice(1), c.words[l] - 1);
  const [n, flip] = node(c, x, l);
  const report = c.oracles[l].randomize(n, rest);
  return [l, c.haar ? report ^ flip : report];
}

/**
 * The device client of one range mechanism from its spec (schema "deniable.range-spec/1"):
 * { spec, mechanism, key, domain, levels, wordsPerReport, epsilon, randomize(value, words),
 * randomizeValue(value[, cryptoImpl]) }.  `words` is the level word then the drawn level's
 * words (wordsPerReport[level] in all); a value outside 0..domain-1 or the wrong number of
 * words throws a SpecError naming `value` or `words`.
 */
export function makeRange(spec) {
  const c = checkRangeSpec(spec);
  const randomize = (value, words) => {
    const x = checkValue(value, c.domain);
    if (words === null || typeof words !== "object" || typeof words.length !== "number" || words.length === 0) {
      throw new SpecError("words", `must be a list of BigInt 64-bit words (the level word first), got ${show(words)}.`);
    }
    return rangeReport(c, x, Array.from(words));
  };
  return Object.freeze({
    spec,
    mechanism: c.mechanism,
    key: c.key,
    domain: c.domain,
    levels: c.h,
    wordsPerReport: c.words,
    epsilon: spec.epsilon,
    randomize,
    randomizeValue: (value, cryptoImpl = globalThis.crypto) => {
      const x = checkValue(value, c.domain); // checked before any word is drawn
      const [first] = randomWords(1, cryptoImpl);
      return rangeReport(c, x, [first, ...randomWords(c.words[uniform(first, c.h)] - 1, cryptoImpl)]);
    },
    checked: c,
  });
}

/** An exact number of a spec's parameters ("-2", "1/8", or a number) as the double Python holds. */
function exactNumber(x, field) {
  if (typeof x === "number" && Number.isFinite(x)) return x;
  const m = typeof x === "string" ? /^(-?(?:0|[1-9][0-9]*))(?:\/([1-9][0-9]*))?$/.exec(x) : null;
  if (m === null) throw new SpecError(field, `must be an exact number ("-2", "1/8"), got ${show(x)}.`);
  // a double's exact fraction has a power-of-two denominator: both parts convert exactly
  return Number(BigInt(m[1])) / Number(BigInt(m[2] ?? "1"));
}

/** Check a Square Wave spec (the fields the client uses); returns its checked form. */
export function checkSquareWaveSpec(spec) {
  object(spec, "spec", "a Square Wave spec object");
  if (spec.schema !== SQUARE_WAVE_SCHEMA) throw new SpecError("schema", `must be "${SQUARE_WAVE_SCHEMA}", got ${show(spec.schema)}.`);
  if (spec.mechanism !== "square-wave") throw new SpecError("mechanism", `must be "square-wave", got ${show(spec.mechanism)}.`);
  if (spec.algorithm !== "square-wave/1") throw new SpecError("algorithm", `must be "square-wave/1", got ${show(spec.algorithm)}.`);
  if (spec.report !== "cell") throw new SpecError("report", `must be "cell", got ${show(spec.report)}.`);
  if (spec.words_per_report !== 2) throw new SpecError("words_per_report", `must be 2, got ${show(spec.words_per_report)}.`);
  const p = object(spec.parameters, "parameters", "an object");
  const lower = exactNumber(p.lower, "parameters.lower");
  const upper = exactNumber(p.upper, "parameters.upper");
  if (!(lower < upper)) throw new SpecError("parameters.upper", `must be above \`lower\` = ${lower}, got ${upper}.`);
  if (typeof p.clip !== "boolean") throw new SpecError("parameters.clip", `must be a boolean, got ${show(p.clip)}.`);
  const c = object(spec.constants, "constants", "an object");
  if (c.grid !== GRID) throw new SpecError("constants.grid", `must be ${GRID}, got ${show(c.grid)}.`);
  // the width of the high-weight run of cells is cells - grid (the spec also states it as
  // its own field, which Python's square_wave_from_spec checks; the client needs only this)
  const w = fieldInteger(c, "cells", "constants.cells", GRID + 1, 5 * GRID) - GRID; // b <= 2: at most 5 G cells
  const weight = (name) => {
    const x = c[name];
    if (typeof x !== "string" || !/^[1-9][0-9]*$/.test(x) || BigInt(x) > M64) throw new SpecError(`constants.${name}`, `must be a positive 64-bit integer as a decimal string, got ${show(x)}.`);
    return BigInt(x);
  };
  const alpha = weight("alpha");
  const beta = weight("beta");
  if (alpha * BigInt(w) + beta * BigInt(GRID) !== 1n << 64n) {
    throw new SpecError("constants.alpha", `must make the cells' weights sum to 2**64 ((cells - grid) alpha + grid beta), got ${c.alpha}.`);
  }
  const eps = epsilons(spec);
  // the epsilon the weights implement, ln(alpha / beta): never above the stated one
  const realised = Math.log(Number(alpha) / Number(beta));
  if (!(alpha >= beta) || realised > eps * (1 + 1e-14)) {
    throw new SpecError("constants.alpha", `must implement at most \`epsilon\` = ${eps} (ln(alpha / beta)), got epsilon ${realised}.`);
  }
  return { key: spec.key, lower, upper, clip: p.clip, w: BigInt(w), cells: GRID + w, alpha, beta };
}

/** A number checked as the library checks it: finite; in [lower, upper] unless clipped. */
function checkNumber(c, value) {
  if (typeof value !== "number" || !Number.isFinite(value)) throw new SpecError("value", `must be a finite number, got ${kindOf(value)}.`);
  if (!c.clip && (value < c.lower || value > c.upper)) {
    throw new SpecError("value", `must be in [${c.lower}, ${c.upper}] (the spec does not clip), got one outside (values are not shown in errors).`);
  }
  return value;
}

/** The cell of a number from two words (docs/specs.md, square-wave/1). */
function cell(c, value, words) {
  const v = Math.min(Math.max((value - c.lower) / (c.upper - c.lower), 0), 1);
  const x = v * GRID;
  const whole = Math.floor(x);
  const frac = BigInt(Math.floor((x - whole) * 2 ** 53));
  const s = BigInt(whole) + BigInt(Number(words[0] >> 11n < frac));
  const point = words[1];
  const low = s * c.beta;
  if (point < low) return Number(point / c.beta);
  if (point - low < c.w * c.alpha) return Number(s + (point - low) / c.alpha);
  return Number(s + c.w + (point - low - c.w * c.alpha) / c.beta);
}

/**
 * The device client of Square Wave from its spec (schema "deniable.square-wave-spec/1"):
 * { spec, key, cells, wordsPerReport, epsilon, randomize(value, words),
 * randomizeValue(value[, cryptoImpl]) }.  A value that is not a finite number in [lower,
 * upper] (when the spec does not clip) or the wrong number of words throws a SpecError
 * naming `value` or `words`.
 */
export function makeSquareWave(spec) {
  const c = checkSquareWaveSpec(spec);
  return deviceClient(spec, c, 2, { key: c.key, cells: c.cells }, (value) => checkNumber(c, value), (value, v, words) => cell(c, v, words));
}
