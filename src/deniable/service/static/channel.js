// channel.js: the exact report distribution that a checked spec's thresholds implement,
// and its epsilon (docs/specs.md).  Pure arithmetic on the checked form that spec.js builds
// (thresholds as BigInt); it imports nothing.  spec.js uses it to check a spec's stated
// epsilon, explain.js for the shares of the picture, randomizer.js for bitLength.

/** Thresholds live in [0, 2**53]: below(word, t) <=> (word >> 11) < t. */
export const ONE = 2n ** 53n;

/** The number of binary digits of a positive integer (a number or a BigInt). */
export function bitLength(n) {
  return n.toString(2).length;
}

/** The probabilities the categories of uniform(word, k) take: 1 / k when k is a power of
 * two, else the floor and the ceiling of 2**b / k values over 2**b (multiply-shift gives
 * each category one of the two), computed as uniformShares computes them. */
function uniformShareValues(k) {
  const e = bitLength(k) - 1;
  if (2 ** e === k) return [1 / k];
  const span = 1n << BigInt(64 - bitLength(k));
  const low = span / BigInt(k);
  return [Number(low) / Number(span), Number(low + 1n) / Number(span)];
}

/** Probability of each category of uniform(word, k) (multiply-shift, docs/specs.md). */
function uniformShares(k) {
  const e = bitLength(k) - 1;
  if (2 ** e === k) return new Array(k).fill(1 / k);
  const b = BigInt(64 - bitLength(k));
  const span = 1n << b;
  const K = BigInt(k);
  const ceilDiv = (a) => (a + K - 1n) / K;
  const shares = [];
  for (let y = 0n; y < K; y++) {
    const n = ceilDiv((y + 1n) * span) - ceilDiv(y * span); // values v with floor(v k / 2**b) = y
    shares.push(Number(n) / Number(span));
  }
  return shares;
}

export function forcedShares(c) {
  if (c.forced === null) return uniformShares(c.truths);
  const cuts = [0n, ...c.forced, ONE];
  return cuts.slice(1).map((hi, y) => Number(hi - cuts[y]) / Number(ONE));
}

function binomialPmf(p, n) {
  const pmf = [];
  let coef = 1;
  for (let c = 0; c <= n; c++) {
    pmf.push(coef * p ** c * (1 - p) ** (n - c));
    coef = (coef * (n - c)) / (c + 1);
  }
  return pmf;
}

/** The exact channel of a checked spec: rows per input, columns per report (numbers). */
export function channelOf(c) {
  const N = Number(ONE);
  if (c.algorithm === "bernoulli-count/1") {
    return c.yes.map((t) => binomialPmf(Number(t) / N, c.words));
  }
  if (c.algorithm === "keep-or-forced/1") {
    const keep = Number(c.keep) / N;
    const q = forcedShares(c);
    return q.map((_, x) => q.map((qy, y) => (1 - keep) * qy + (y === x ? keep : 0)));
  }
  const g1 = Number(c.group) / N;
  const rows = [];
  for (let type = 0; type < c.truths; type++) {
    const y1 = Number(c.yes[0][type]) / N;
    const y2 = Number(c.yes[1][type]) / N;
    rows.push([g1 * (1 - y1), g1 * y1, (1 - g1) * (1 - y2), (1 - g1) * y2]);
  }
  return rows;
}

/** log(max / min) of two non-negative exact ratios given as BigInt numerators. */
function logRatio(a, b) {
  if (a === b) return 0;
  if (a === 0n || b === 0n) return Infinity;
  return Math.abs(Math.log(Number(a) / Number(b)));
}

/** The epsilon the thresholds implement (closed forms, so a big words_per_report is cheap). */
export function epsilonOf(c) {
  if (c.algorithm === "bernoulli-count/1") {
    // P(count | x) is binomial(w, t_x): the log ratio is linear in the count, so the worst
    // report is all-below or all-above: w * max(|ln t1/t0|, |ln (1-t1)/(1-t0)|)
    const [a, b] = c.yes;
    const worst = Math.max(logRatio(a, b), logRatio(ONE - a, ONE - b));
    return worst === 0 ? 0 : c.words * worst;
  }
  if (c.algorithm === "keep-or-forced/1") {
    // column y holds (1 - keep) q_y off the diagonal and (1 - keep) q_y + keep on it, so
    // its log ratio is ln(1 + keep / ((1 - keep) q_y)), largest at the smallest q_y: O(k)
    // over the spec's cuts, O(1) for uniform forcing, whose shares take one or two values
    // (k up to 2**24: no k x k channel is built)
    const keep = Number(c.keep) / Number(ONE);
    const column = (qy) => {
      const lo = (1 - keep) * qy;
      const hi = lo + keep;
      if (hi === 0) return 0;
      return lo === 0 ? Infinity : Math.log(hi / lo);
    };
    const shares = c.forced === null ? uniformShareValues(c.truths) : forcedShares(c);
    return shares.reduce((eps, qy) => Math.max(eps, column(qy)), 0);
  }
  const rows = channelOf(c);
  let eps = 0;
  for (let y = 0; y < rows[0].length; y++) {
    const column = rows.map((r) => r[y]);
    const hi = Math.max(...column);
    const lo = Math.min(...column);
    if (hi === 0) continue;
    eps = Math.max(eps, lo === 0 ? Infinity : Math.log(hi / lo));
  }
  return eps;
}

