// Replay a vectors file (schema deniable.vectors/1) with randomizer.js; print one JSON line:
// {"cases": n, "reports": n, "mismatches": [{id, index, expected, got}...], "errors": [...]}.
// Used by tests/service/test_js.py on cases that Python builds at test time (every example
// design of tests/conftest.py and the demo survey's questions), beyond the committed file.
import { readFileSync } from "node:fs";
import { randomize } from "../../src/deniable/service/static/randomizer.js";
import { caseWords } from "./_helpers.mjs";

const vectors = JSON.parse(readFileSync(process.argv[2], "utf8"));
const out = { cases: 0, reports: 0, mismatches: [], errors: [] };
for (const c of vectors.cases) {
  out.cases += 1;
  const input = c.spec.algorithm === "two-group/2" ? c.type : c.truth;
  try {
    for (let i = 0; i < c.truth.length; i++) {
      const options = "group" in c ? { group: c.group[i] } : {};
      const got = randomize(c.spec, input[i], caseWords(c, i), options);
      out.reports += 1;
      if (got !== c.reports[i] && out.mismatches.length < 20) out.mismatches.push({ id: c.id, index: i, expected: c.reports[i], got });
    }
  } catch (err) {
    out.errors.push({ id: c.id, error: String(err.message) });
  }
}
process.stdout.write(`${JSON.stringify(out)}\n`);
