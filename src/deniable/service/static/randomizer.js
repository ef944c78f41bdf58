// randomizer.js: the randomizer core, the part every client must reproduce bit for bit.
//
// randomize(spec, input, words) turns a true answer (a respondent type for a two-group
// design) and 64-bit words into the report exactly as deniable's Python randomizers do:
// the same thresholds, the same words in the same slots, the same comparisons
// (docs/specs.md).  tests/js/ replays every case of tests/vectors/randomizers.json with it.
// No step branches on the answer, and randomWords takes its words from
// crypto.getRandomValues only.

import { bitLength } from "./channel.js";
import { SpecError, checkSpec, show, kindOf } from "./spec.js";

const WORD_LIMIT = 2n ** 64n;

function checkWords(words, n) {
  if (words === null || typeof words !== "object" || typeof words.length !== "number" || words.length !== n) {
    throw new SpecError("words", `must be a list of ${n} BigInt 64-bit words, got ${words === null || words === undefined ? words : `${words.length ?? "no"} words`}.`);
  }
  const out = [];
  for (let i = 0; i < n; i++) {
    const w = words[i];
    if (typeof w !== "bigint" || w < 0n || w >= WORD_LIMIT) {
      throw new SpecError(`words[${i}]`, `must be a BigInt in [0, 2**64), got ${show(w)} (${typeof w}).`);
    }
    out.push(w);
  }
  return out;
}

// below(word, t) = (word >> 11) < t, as 0 or 1: a comparison turned into a number, no branch
function below(word, t) {
  return Number(word >> 11n < t);
}

// uniform(word, k): multiply-shift onto 0..k-1 (docs/specs.md)
function uniform(word, k) {
  const e = bitLength(k) - 1;
  if (2 ** e === k) return Number(word >> BigInt(64 - e));
  const b = BigInt(64 - bitLength(k));
  return Number(((word >> (64n - b)) * BigInt(k)) >> b);
}

/**
 * Randomize one true answer from its spec and the given random words (pure).
 *
 * input: the true answer, 0 .. truths-1 (two-group designs: the respondent type, see
 * typeOf).  words: spec.words_per_report BigInt words in [0, 2**64), slot 0 first (a
 * two-group design with options.group given takes 1 word, the answer word).  Returns the
 * report, 0 .. reports-1.
 *
 * No step branches on the input: the input only ever INDEXES a threshold list or enters
 * arithmetic (keep-or-forced computes the forced category for every answer and selects
 * other + keep * (input - other)); every word is consumed whatever the input.
 */
export function randomize(spec, input, words, options = {}) {
  const c = checkSpec(spec);
  if (!Number.isSafeInteger(input) || input < 0 || input >= c.truths) {
    const what = c.algorithm === "two-group/2" ? "respondent type" : "true answer";
    throw new SpecError("input", `must be a ${what} in 0..${c.truths - 1}, got ${Number.isSafeInteger(input) ? "one outside" : kindOf(input)} (answers are not shown in errors).`);
  }
  const givenGroup = options && options.group !== undefined;
  if (givenGroup && c.algorithm !== "two-group/2") {
    throw new SpecError("group", `is only for two-group designs, not ${c.algorithm}.`);
  }
  if (givenGroup && options.group !== 1 && options.group !== 2) {
    throw new SpecError("group", `must be 1 or 2, got ${show(options.group)}.`);
  }
  const w = checkWords(words, givenGroup ? 1 : c.words);

  if (c.algorithm === "bernoulli-count/1") {
    const t = c.yes[input]; // indexing by the answer selects its threshold
    let report = 0;
    for (const word of w) report += below(word, t);
    return report;
  }
  if (c.algorithm === "keep-or-forced/1") {
    const keep = below(w[0], c.keep);
    let other;
    if (c.forced === null) {
      other = uniform(w[1], c.truths);
    } else {
      const v = w[1] >> 11n;
      other = 0;
      for (const cut of c.forced) other += Number(cut <= v); // categories whose cut is passed
    }
    return other + keep * (input - other); // keep ? input : other, by arithmetic
  }
  // two-group/2: slot 0 the group word (unless the group is given), slot 1 the answer word
  const group = givenGroup ? options.group : 2 - below(w[0], c.group); // below -> group 1
  const answerWord = givenGroup ? w[0] : w[1];
  const answer = below(answerWord, c.yes[group - 1][input]);
  return 2 * (group - 1) + answer;
}

/** Two-group designs: the respondent type of a true answer and latent indicator. */
export function typeOf(spec, answer, latent) {
  const c = checkSpec(spec);
  if (c.algorithm !== "two-group/2") throw new SpecError("algorithm", `has no respondent types: ${c.algorithm} takes the answer itself.`);
  if (answer !== 0 && answer !== 1) throw new SpecError("answer", `must be 0 or 1, got ${Number.isInteger(answer) ? "another integer" : kindOf(answer)} (answers are not shown in errors).`);
  const l = latent === undefined || latent === null ? c.latent.default : latent;
  if (l !== 0 && l !== 1) {
    throw new SpecError(c.latent.name, `must be 0 or 1 (the ${c.latent.name} indicator has no default), got ${show(latent)}.`);
  }
  return c.latent.type[answer][l];
}

/** Fresh uniform 64-bit words from crypto.getRandomValues (65536 bytes per call at most). */
export function randomWords(n, cryptoImpl = globalThis.crypto) {
  if (!cryptoImpl || typeof cryptoImpl.getRandomValues !== "function") {
    throw new Error("no crypto.getRandomValues: this device cannot randomize safely.");
  }
  const words = new BigUint64Array(n);
  for (let i = 0; i < n; i += 8192) cryptoImpl.getRandomValues(words.subarray(i, Math.min(n, i + 8192)));
  return Array.from(words);
}

/** Randomize a true answer with fresh words from crypto.getRandomValues. */
export function randomizeAnswer(spec, input, cryptoImpl = globalThis.crypto) {
  const c = checkSpec(spec);
  return randomize(spec, input, randomWords(c.words, cryptoImpl));
}
