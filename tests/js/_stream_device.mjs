// A device of a telemetry stream under node, for tests/service/test_js.py (not a test
// file): reads the stream spec the service served and the values (JSON files), randomizes
// each value with stream.js's client (crypto.getRandomValues; the memo in a Map) and
// writes the hex of the binary batch it would post.
import { readFileSync } from "node:fs";
import { makeStreamClient } from "../../src/deniable/service/static/stream.js";

const [specPath, valuesPath] = process.argv.slice(2);
const client = makeStreamClient(JSON.parse(readFileSync(specPath, "utf8")), { storage: new Map() });
const values = JSON.parse(readFileSync(valuesPath, "utf8"));
process.stdout.write(Buffer.from(client.encode(values.map((v) => client.report(v)))).toString("hex"));
