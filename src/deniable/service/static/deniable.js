// deniable.js: randomized response on the respondent's own device, the library's public
// face in the browser.  It runs nothing: it re-exports the ES modules beside it (no build
// step, no dependency), which a browser and node (18 or later) both import:
//
//   spec.js        checkSpec(spec) -> a frozen, checked form of the spec (throws SpecError,
//                  PrivacyError); channel(spec), channelEpsilon(spec): the exact report
//                  distribution per input and the epsilon the thresholds implement
//   channel.js     that distribution and epsilon computed from a checked spec
//   randomizer.js  randomize(spec, input, words[, {group}]): pure, BigInt words -> the
//                  report (the part replayed on tests/vectors/randomizers.json);
//                  randomWords(n), randomizeAnswer(spec, input): words from
//                  crypto.getRandomValues; typeOf(spec, answer, latent): two-group designs
//   explain.js     explain(spec, labels): plain words and picture parts; chance, oddsFactor
//   session.js     RespondentSession, InterviewerSession: the pages' logic, with fetch,
//                  storage and crypto given; HttpError, sessionProblem
//   dom.js, respondent.js, interviewer.js, main.js: the pages (main.js is their script)
//
// The true answer lives only in a local variable between the click and the randomization:
// it is never stored, logged or sent.

export { picture } from "./dom.js";
export { chance, explain, oddsFactor } from "./explain.js";
export { randomWords, randomize, randomizeAnswer, typeOf } from "./randomizer.js";
export { HttpError, InterviewerSession, RespondentSession, sessionProblem } from "./session.js";
export { ALGORITHMS, PrivacyError, SPEC_SCHEMA, SpecError, channel, channelEpsilon, checkSpec } from "./spec.js";
