// Helpers of the node tests of the browser modules (not a test file: no ".test." in the name).
import { createCipheriv } from "node:crypto";
import { readFileSync } from "node:fs";

export const STATIC = new URL("../../src/deniable/service/static/", import.meta.url);
export const VECTORS = JSON.parse(readFileSync(new URL("../vectors/randomizers.json", import.meta.url), "utf8"));

/**
 * A seeded stand-in for `crypto`: getRandomValues fills with AES-128-CTR keystream under a
 * key made from the seed, so statistical tests are repeatable (fixed seeds).
 */
export function seededCrypto(seed) {
  const key = Buffer.alloc(16);
  key.writeUInt32LE(seed >>> 0, 0);
  const cipher = createCipheriv("aes-128-ctr", key, Buffer.alloc(16));
  return {
    calls: 0,
    getRandomValues(array) {
      const bytes = new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
      bytes.set(cipher.update(Buffer.alloc(array.byteLength)));
      this.calls += 1;
      return array;
    },
  };
}

/** A stand-in for `crypto` that hands out the given BigInt words in order. */
export function wordsCrypto(words) {
  const queue = [...words];
  return {
    calls: 0,
    getRandomValues(array) {
      if (!(array instanceof BigUint64Array)) throw new TypeError("expected a BigUint64Array");
      for (let i = 0; i < array.length; i++) {
        if (queue.length === 0) throw new Error("the test ran out of words");
        array[i] = queue.shift();
      }
      this.calls += 1;
      return array;
    },
    get left() {
      return queue.length;
    },
  };
}

/** The slot words of report i of a vectors case (docs/specs.md "which word goes where"). */
export function caseWords(c, i) {
  const n = c.truth.length;
  if ("group" in c) return [BigInt(c.words[i])];
  return Array.from({ length: c.spec.words_per_report }, (_, d) => BigInt(c.words[d * n + i]));
}

// ---- the chi-square distribution: P(X >= x) for X ~ chi2(df) -------------------------

function logGamma(z) {
  // Lanczos approximation (g = 7, n = 9), accurate to ~1e-15 for z > 0
  const g = 7;
  const c = [0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
    -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
    1.5056327351493116e-7];
  if (z < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * z)) - logGamma(1 - z);
  z -= 1;
  let x = c[0];
  for (let i = 1; i < g + 2; i++) x += c[i] / (z + i);
  const t = z + g + 0.5;
  return 0.5 * Math.log(2 * Math.PI) + (z + 0.5) * Math.log(t) - t + Math.log(x);
}

/** The regularized upper incomplete gamma function Q(a, x). */
export function gammaQ(a, x) {
  if (x <= 0) return 1;
  const lead = -x + a * Math.log(x) - logGamma(a);
  if (x < a + 1) {
    let sum = 1 / a;
    let term = sum;
    for (let n = 1; n < 10000; n++) {
      term *= x / (a + n);
      sum += term;
      if (Math.abs(term) < Math.abs(sum) * 1e-16) break;
    }
    return 1 - sum * Math.exp(lead);
  }
  // continued fraction (modified Lentz)
  const tiny = 1e-300;
  let b = x + 1 - a;
  let c = 1 / tiny;
  let d = 1 / b;
  let h = d;
  for (let i = 1; i < 10000; i++) {
    const an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (Math.abs(d) < tiny) d = tiny;
    c = b + an / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    const delta = d * c;
    h *= delta;
    if (Math.abs(delta - 1) < 1e-16) break;
  }
  return Math.exp(lead) * h;
}

/**
 * Pearson's chi-square test of observed counts against probabilities.  Cells with an
 * expected count below 5 are pooled into one cell; a cell of probability exactly 0 must be
 * empty (returned as impossible: a report the channel never gives).  Returns
 * {statistic, df, p, impossible}.
 */
export function chiSquare(observed, probs) {
  const n = observed.reduce((s, v) => s + v, 0);
  let impossible = 0;
  const cells = [];
  let poolO = 0;
  let poolE = 0;
  probs.forEach((p, i) => {
    if (p === 0) {
      impossible += observed[i];
      return;
    }
    const e = n * p;
    if (e < 5) {
      poolO += observed[i];
      poolE += e;
    } else cells.push([observed[i], e]);
  });
  if (poolE > 0) cells.push([poolO, poolE]);
  const statistic = cells.reduce((s, [o, e]) => s + (o - e) ** 2 / e, 0);
  const df = cells.length - 1;
  const p = df > 0 ? gammaQ(df / 2, statistic / 2) : 1;
  return { statistic, df, p, impossible };
}
