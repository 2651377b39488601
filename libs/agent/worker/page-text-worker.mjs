// Turns one fetched HTML page into readable text for web_fetch, in a worker thread: parsing and
// Readability can take a hostile page minutes of CPU (a 30 KB page of 2,000 nested <div>s took
// a minute), which on the runner's event loop would stall every channel it serves. Plain
// JavaScript next to the package (not in src/) so that one file serves the built runner and the
// tests; it loads the built page-text.js.
import { parentPort, workerData } from "node:worker_threads";
import { pageText } from "../dist/web/page-text.js";

try {
  parentPort.postMessage({ ok: true, result: pageText({ ...workerData, body: Buffer.from(workerData.body) }) });
} catch (err) {
  parentPort.postMessage({ ok: false, error: err instanceof Error ? err.message : String(err) });
}
