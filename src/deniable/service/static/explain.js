// explain.js: what happens to an answer, in plain words and the shares of a picture,
// computed from the spec's thresholds (never from a stored text).  e^epsilon and epsilon
// are rounded up, so neither is understated; an infinite epsilon is said in words, never
// as a finite number.

import { ONE, forcedShares } from "./channel.js";
import { checkSpec } from "./spec.js";

const SMALL_DENOMINATORS = [2, 3, 4, 5, 6, 8, 10, 12, 16, 20];

/** "3 times in 4", "always", "never", "about 27 times in 100" for a probability. */
export function chance(p) {
  if (p <= 0) return "never";
  if (p >= 1) return "always";
  for (const d of SMALL_DENOMINATORS) {
    const n = Math.round(p * d);
    if (n > 0 && n < d && Math.abs(n / d - p) < 1e-9) return `${n} ${n === 1 ? "time" : "times"} in ${d}`;
  }
  const pct = Math.round(p * 100);
  if (pct < 1) return "less than 1 time in 100";
  if (pct > 99) return "more than 99 times in 100";
  return `about ${pct} times in 100`;
}

/** e^epsilon for people: 3 significant digits, rounded up (never understating). */
export function oddsFactor(epsilon) {
  if (!Number.isFinite(epsilon)) throw new RangeError("an infinite epsilon has no odds factor: say so instead.");
  const f = Math.exp(epsilon);
  const digits = f >= 100 ? 0 : f >= 10 ? 1 : 2;
  const scale = 10 ** digits;
  let shown = Math.round(f * scale) / scale;
  if (shown < f * (1 - 1e-12)) shown = Math.ceil(f * scale) / scale;
  return shown.toFixed(digits).replace(/\.?0+$/, "");
}

function epsText(epsilon) {
  return Number.isFinite(epsilon) ? `ε = ${Math.ceil(epsilon * 1000) / 1000}` : "ε is infinite";
}

export function quote(label) {
  return `“${label}”`;
}

/**
 * The names of a question's answers: the labels given, else the spec's, else "no" and
 * "yes" for a yes/no design and "answer 1" .. "answer k" for k answers.
 */
export function answerNames(spec, labels) {
  const c = checkSpec(spec);
  if (labels ?? spec.labels) return labels ?? spec.labels;
  return c.algorithm !== "keep-or-forced/1" ? ["no", "yes"] : Array.from({ length: c.truths }, (_, i) => `answer ${i + 1}`);
}

/**
 * What happens to an answer, in plain words computed from the spec's thresholds.
 *
 * Returns {how: [sentences], reveal: sentence, parts: [{share, kind, label}], summary}:
 * `parts` split the unit interval for the picture (kind "true" = the true answer is sent,
 * "opposite", "forced" = a fixed answer whatever the truth, "random"), in order.
 */
export function explain(spec, labels) {
  const c = checkSpec(spec);
  const N = Number(ONE);
  const names = answerNames(spec, labels);
  const how = [];
  const parts = [];
  let reveal;
  if (c.algorithm === "bernoulli-count/1" && c.words === 1) {
    const [a, b] = c.yes.map((t) => Number(t) / N); // P(yes | no), P(yes | yes)
    const [no, yes] = [quote(names[0]), quote(names[1])];
    if (a === b) {
      how.push(`Your device ignores your answer: it sends ${yes} ${chance(b)} and ${no} otherwise.`);
      parts.push({ share: b, kind: "forced", label: `${names[1]}, whatever your answer` }, { share: 1 - b, kind: "forced-no", label: `${names[0]}, whatever your answer` });
    } else {
      const positive = b > a;
      const core = positive ? b - a : a - b; // the truth (or its opposite) is sent
      const fy = positive ? a : b; // "yes" whatever the truth
      const fn = 1 - core - fy; // "no" whatever the truth
      const kind = positive ? "true" : "opposite";
      const what = positive ? "your true answer" : "the opposite of your true answer";
      let sentence = core >= 1 ? `Your device always sends ${what}` : `${cap(chance(core))} your device sends ${what}`;
      if (core < 1) {
        const pYes = fy / (fy + fn);
        if (Math.abs(fy - fn) < 1e-12) sentence += `; otherwise a fair coin decides between ${yes} and ${no}`;
        else if (fn <= 0) sentence += `; otherwise it sends ${yes}`;
        else if (fy <= 0) sentence += `; otherwise it sends ${no}`;
        else sentence += `; otherwise it sends ${yes} ${chance(pYes)} and ${no} the rest of the time`;
      }
      how.push(`${sentence}.`);
      // symmetric channels (P(report = truth) the same for both answers): say it in all
      if (Math.abs(1 - a - b) < 1e-12 && core < 1) {
        how.push(positive
          ? `In all, your true answer is sent ${chance(b)}; otherwise the opposite.`
          : `In all, the opposite of your true answer is sent ${chance(a)}; otherwise your true answer.`);
      }
      parts.push({ share: core, kind, label: what }, { share: fy, kind: "forced", label: `${names[1]}, whatever your answer` }, { share: fn, kind: "forced-no", label: `${names[0]}, whatever your answer` });
    }
    reveal = Number.isFinite(c.epsilon)
      ? `The most a ${yes} can reveal: it multiplies the odds that your true answer is ${yes} by at most ${oddsFactor(c.epsilon)} (e^ε, ${epsText(c.epsilon)}); a ${no} reveals no more.`
      : `Some reports can reveal your true answer for certain (${epsText(c.epsilon)}): this question gives no limit on what a report reveals.`;
  } else if (c.algorithm === "bernoulli-count/1") {
    const [p0, p1] = c.yes.map((t) => Number(t) / N);
    how.push(`Your device draws ${c.words} cards and sends how many of them are red: a card is red ${cardChance(p1)} if your true answer is ${quote(names[1])}, and ${cardChance(p0)} if it is ${quote(names[0])}.`);
    parts.push({ share: p1, kind: "true", label: `a card is red (true answer ${names[1]})` }, { share: 1 - p1, kind: "forced-no", label: "a card is black" });
    reveal = Number.isFinite(c.epsilon)
      ? `The most a report can reveal: it multiplies the odds that your true answer is ${quote(names[1])} by at most ${oddsFactor(c.epsilon)} (e^ε, ${epsText(c.epsilon)}).`
      : `Some reports can reveal your true answer for certain (${epsText(c.epsilon)}): this question gives no limit on what a report reveals.`;
  } else if (c.algorithm === "keep-or-forced/1") {
    const keep = Number(c.keep) / N;
    const q = forcedShares(c);
    const uniformForced = q.every((v) => Math.abs(v - q[0]) < 1e-12);
    let sentence = keep >= 1 ? "Your device always sends your true answer" : `${cap(chance(keep))} your device sends your true answer`;
    if (keep < 1) {
      sentence += uniformForced
        ? `; otherwise it picks one of the ${c.truths} answers at random, each equally likely`
        : `; otherwise it picks an answer at random: ${q.map((v, y) => `${quote(names[y])} ${chance(v)}`).join(", ")}`;
    }
    how.push(`${sentence}.`);
    if (uniformForced && keep < 1) how.push(`In all, your true answer is sent ${chance(keep + (1 - keep) * q[0])}.`);
    parts.push({ share: keep, kind: "true", label: "your true answer" }, { share: 1 - keep, kind: "random", label: "an answer drawn at random" });
    reveal = Number.isFinite(c.epsilon)
      ? `The most a report can reveal: whatever your device sends, it makes one answer at most ${oddsFactor(c.epsilon)} times as likely as another, in the odds (e^ε, ${epsText(c.epsilon)}).`
      : `Some reports can reveal your true answer for certain (${epsText(c.epsilon)}): this question gives no limit on what a report reveals.`;
  } else {
    const g1 = Number(c.group) / N;
    how.push(`Your device puts you in group 1 ${chance(g1)} and in group 2 otherwise, then answers ${quote(names[1])} or ${quote(names[0])} by that group's rules; the report says the group and the answer.`);
    parts.push({ share: g1, kind: "true", label: "group 1" }, { share: 1 - g1, kind: "random", label: "group 2" });
    reveal = `Some reports can reveal your true answer for certain (${epsText(c.epsilon)}): this design gives no limit on what a report reveals.`;
  }
  return { how, reveal, parts: parts.filter((p) => p.share > 0), epsilon: c.epsilon, summary: [...how, reveal].join(" ") };
}

function cardChance(p) {
  return p >= 1 ? "every time" : p <= 0 ? "never" : chance(p);
}

function cap(text) {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
