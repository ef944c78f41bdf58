// sfp.js: the Sequence Fragment Puzzle's device client (Apple Differential Privacy Team 2017,
// "Learning with Privacy at Scale"; docs/heavy-hitters.md, "Sequence Fragment Puzzle"; the
// algorithm in docs/specs.md, "Sequence Fragment Puzzle (schema deniable.sfp-spec/1)").
//
// makeSfp(spec) reads the spec the library emits (oracles.sfp_spec) and returns a client
// whose randomize(value, words) turns a string and exactly words_per_report BigInt words into
// the device's report [position, fragment report, whole-string report], bit for bit as
// Python's sfp_device_reports does (tests/js/sfp.test.mjs replays every case of
// tests/vectors/sfp.json).  The position comes from the first word and does not depend on
// the string; the record "l:p:i.j" (the fragment at the position with the string's puzzle
// piece) goes through the fragment sketch, the string through the whole-string sketch: both
// are count mean sketches, reported by sketches.js from their own specs inside this one.
// Words come from crypto.getRandomValues (randomizer.js's randomWords) unless given.

import { sha256 } from "./digest.js";
import { LONE_SURROGATE, deviceClient, uniform } from "./oracles.js";
import { makeSketch } from "./sketches.js";
import { SpecError, fieldInteger, show, underField } from "./spec.js";

export const SFP_SCHEMA = "deniable.sfp-spec/1";
export const SFP_ALGORITHM = "sequence-fragment-puzzle/1";
export const PUZZLE_HASH = "deniable.sfp/1";

const encoder = new TextEncoder();
const PREFIX = encoder.encode(`${PUZZLE_HASH}\u0000`);

/** A sketch client from the spec's field `name`, its errors named under that field. */
function sketchOf(spec, name) {
  return underField(name, () => makeSketch(spec[name]));
}

/** Check an SFP spec (the fields the client uses, both sketch specs whole); returns its checked form. */
export function checkSfpSpec(spec) {
  if (spec === null || typeof spec !== "object" || Array.isArray(spec)) {
    throw new SpecError("spec", `must be a Sequence Fragment Puzzle spec object, got ${show(spec)}.`);
  }
  if (spec.schema !== SFP_SCHEMA) throw new SpecError("schema", `must be "${SFP_SCHEMA}", got ${show(spec.schema)}.`);
  if (spec.mechanism !== "sfp") throw new SpecError("mechanism", `must be "sfp", got ${show(spec.mechanism)}.`);
  if (spec.algorithm !== SFP_ALGORITHM) throw new SpecError("algorithm", `must be "${SFP_ALGORITHM}", got ${show(spec.algorithm)}.`);
  if (spec.report !== "position-fragment-word") throw new SpecError("report", `must be "position-fragment-word", got ${show(spec.report)}.`);
  if (spec.parameters === null || typeof spec.parameters !== "object") throw new SpecError("parameters", `must be an object, got ${show(spec.parameters)}.`);
  if (spec.puzzle?.hash !== PUZZLE_HASH) throw new SpecError("puzzle.hash", `must be "${PUZZLE_HASH}", got ${show(spec.puzzle?.hash)}.`);
  const bits = fieldInteger(spec.puzzle, "bits", "puzzle.bits", 1, 16);
  if (spec.strings?.encoding !== "utf-8") throw new SpecError("strings.encoding", `must be "utf-8", got ${show(spec.strings?.encoding)}.`);
  const length = fieldInteger(spec.strings, "max_length", "strings.max_length", 1, 64);
  const alphabet = spec.strings.alphabet;
  const chars = alphabet === null ? null : typeof alphabet === "string" ? Array.from(alphabet) : undefined;
  if (chars === undefined || (chars !== null && (chars.length < 1 || chars.length > 256 || new Set(chars).size !== chars.length || LONE_SURROGATE.test(alphabet)))) {
    throw new SpecError("strings.alphabet", `must be null (bytes) or a string of 1 to 256 distinct characters, got ${show(alphabet)}.`);
  }
  const unit = chars === null ? "bytes" : "characters";
  if (spec.strings.unit !== unit) throw new SpecError("strings.unit", `must be "${unit}" for this alphabet, got ${show(spec.strings.unit)}.`);
  for (const [field, want] of [["puzzle_bits", bits], ["max_length", length], ["alphabet", alphabet]]) {
    if (spec.parameters[field] !== want) throw new SpecError(`parameters.${field}`, `must be ${show(want)} (the spec's other fields say so), got ${show(spec.parameters[field])}.`);
  }
  const symbols = chars === null ? 256 : chars.length;
  if (spec.symbols !== symbols) throw new SpecError("symbols", `must be ${symbols} for this alphabet, got ${show(spec.symbols)}.`);
  const positions = Math.ceil(length / 2);
  if (spec.positions !== positions) throw new SpecError("positions", `must be ceil(max_length / 2) = ${positions}, got ${show(spec.positions)}.`);
  const fragment = sketchOf(spec, "fragment_sketch");
  const word = sketchOf(spec, "word_sketch");
  const f = fragment.checked;
  const w = word.checked;
  for (const [field, want, got] of [["sketch", f.mechanism, w.mechanism], ["k", f.k, w.k], ["m", f.m, w.m], ["salt", f.salt, w.salt]]) {
    if (got !== want || spec.parameters[field] !== want) {
      throw new SpecError(`parameters.${field}`, `must be the same in both sketches and the parameters (${show(want)}), got ${show(spec.parameters[field])} and ${show(got)}.`);
    }
  }
  if (f.maxBytes !== 64) throw new SpecError("fragment_sketch.strings.max_bytes", `must be 64 (a record's bound), got ${f.maxBytes}.`);
  const wordBytes = chars === null ? length : 4 * length;
  if (w.maxBytes !== wordBytes) throw new SpecError("word_sketch.strings.max_bytes", `must be ${wordBytes} for max_length ${length}, got ${w.maxBytes}.`);
  // epsilon: the two sketches' (each checked by sketches.js against its flip threshold)
  // are the stated split, and their sum is at most the stated total: never more privacy
  // loss than the spec says
  const eps = spec.epsilon;
  if (spec.fragment_epsilon !== fragment.epsilon) throw new SpecError("fragment_epsilon", `must be the fragment sketch's epsilon ${show(fragment.epsilon)}, got ${show(spec.fragment_epsilon)}.`);
  if (spec.word_epsilon !== word.epsilon) throw new SpecError("word_epsilon", `must be the whole-string sketch's epsilon ${show(word.epsilon)}, got ${show(spec.word_epsilon)}.`);
  if (typeof eps !== "number" || !(eps > 0) || !(fragment.epsilon + word.epsilon <= eps)) {
    throw new SpecError("epsilon", `must be a number at least fragment_epsilon + word_epsilon = ${show(fragment.epsilon + word.epsilon)}, got ${show(eps)}.`);
  }
  if (typeof spec.implemented_epsilon !== "number" || !(spec.implemented_epsilon <= eps)) {
    throw new SpecError("implemented_epsilon", `must be a number at most \`epsilon\` (${show(eps)}), got ${show(spec.implemented_epsilon)}.`);
  }
  const words = 1 + f.words + w.words;
  if (spec.words_per_report !== words) {
    throw new SpecError("words_per_report", `must be 1 + the two sketches' words = ${words}, got ${show(spec.words_per_report)}.`);
  }
  return { key: spec.key, sketch: f.mechanism, bits, length, chars, symbols, positions, fragment, word, words };
}

/** The symbol indices of a value (its UTF-8 bytes, or its characters' indices), checked as the library checks them. */
function symbolsOf(c, value) {
  if (typeof value !== "string") throw new SpecError("value", `must be a string (the Sequence Fragment Puzzle reports strings), got ${show(value)}.`);
  if (LONE_SURROGATE.test(value)) throw new SpecError("value", "must be valid Unicode (no lone surrogates).");
  const raw = encoder.encode(value);
  if (raw.length === 0) throw new SpecError("value", "must be a non-empty string, got an empty one.");
  if (c.chars === null) {
    if (raw.length > c.length) throw new SpecError("value", `must be at most max_length = ${c.length} bytes in UTF-8, got ${raw.length}.`);
    return { raw, symbols: Array.from(raw) };
  }
  const chars = Array.from(value);
  if (chars.length > c.length) throw new SpecError("value", `must be at most max_length = ${c.length} characters, got ${chars.length}.`);
  const symbols = chars.map((ch, i) => {
    const at = c.chars.indexOf(ch);
    if (at < 0) throw new SpecError("value", `must use only the alphabet's characters, got one that is not at character ${i}.`);
    return at;
  });
  return { raw, symbols };
}

/** p(s): the top `bits` bits of SHA-256("deniable.sfp/1" || 0x00 || utf-8 s), big-endian. */
export function puzzlePiece(raw, bits) {
  const input = new Uint8Array(PREFIX.length + raw.length);
  input.set(PREFIX);
  input.set(raw, PREFIX.length);
  const d = sha256(input);
  const top = ((d[0] << 24) | (d[1] << 16) | (d[2] << 8) | d[3]) >>> 0;
  return Math.floor(top / 2 ** (32 - bits));
}

/** The record "l:p:i.j" of a checked value at position l. */
function recordAt(c, v, l) {
  const padded = [...v.symbols, ...Array(2 * c.positions - v.symbols.length).fill(c.symbols)];
  return `${l}:${puzzlePiece(v.raw, c.bits)}:${padded[2 * l]}.${padded[2 * l + 1]}`;
}

/** The report of a checked value from exactly c.words words (docs/specs.md). */
function report(c, value, v, words) {
  const l = uniform(words[0], c.positions);
  const wf = c.fragment.wordsPerReport;
  return [l, c.fragment.randomize(recordAt(c, v, l), words.slice(1, 1 + wf)), c.word.randomize(value, words.slice(1 + wf))];
}

/**
 * The device client of one Sequence Fragment Puzzle from its spec (schema
 * "deniable.sfp-spec/1"): { spec, key, positions, wordsPerReport, epsilon, randomize(value,
 * words), randomizeValue(value[, cryptoImpl]), record(value, position) }.  A value that is
 * not a non-empty string of at most max_length symbols of the alphabet, or the wrong number
 * of words, throws a SpecError naming `value` or `words`; the spec's fields are checked by
 * name first.
 */
export function makeSfp(spec) {
  const c = checkSfpSpec(spec);
  /** The record "l:p:i.j" a device with `value` at `position` sends to the fragment sketch. */
  const record = (value, position) => {
    if (!Number.isSafeInteger(position) || position < 0 || position >= c.positions) {
      throw new SpecError("position", `must be in 0..${c.positions - 1}, got ${show(position)}.`);
    }
    return recordAt(c, symbolsOf(c, value), position);
  };
  const draw = (value, v, words) => report(c, value, v, words);
  return deviceClient(spec, c, c.words, { key: c.key, positions: c.positions }, (value) => symbolsOf(c, value), draw, { record });
}
