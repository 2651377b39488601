#!/usr/bin/env node
// web_fetch of a 1 MB page on loopback: the time from URL to the model's text, against reading the
// same bytes with a bare HTTP GET in the same run (the rest is policy, Readability and Markdown).
import { createServer } from "node:http";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const { createWebFetchTool } = await import(join(root, "libs/agent/dist/index.js"));
const { values: o } = parseArgs({ options: { json: { type: "boolean", default: false }, rounds: { type: "string", default: "15" }, help: { type: "boolean", short: "h", default: false } } });
if (o.help) {
  console.log("usage: node bench/web-fetch.mjs [--json] [--rounds 15]");
  process.exit(0);
}
const ROUNDS = Number(o.rounds);
const log = (...a) => o.json || console.error(...a);
const p50 = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// An article of ~1 MB: menus, a long body of paragraphs with links and lists, a footer, scripts.
const paragraph = (i) => `<p>Paragraph ${i} of the guide explains one step of the deployment in plain words, with a <a href="https://example.org/step/${i}">link to step ${i}</a> and some <strong>emphasis</strong> where it matters. It goes on for a while so the page is about as dense as real documentation.</p>`;
const body = [];
for (let i = 0; body.join("").length < 1_000_000; i++) body.push(i % 10 === 9 ? `<h2>Section ${i}</h2><ul><li>one</li><li>two</li></ul>` : paragraph(i));
const PAGE = `<!doctype html><html><head><title>Big guide</title></head><body><nav>${'<a href="/x">menu</a>'.repeat(200)}</nav><article><h1>Big guide</h1>${body.join("\n")}</article><footer>footer</footer><script>${"var x=1;".repeat(1000)}</script></body></html>`;
const server = createServer((_req, res) => res.writeHead(200, { "content-type": "text/html; charset=utf-8", connection: "close" }).end(PAGE));
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const url = `http://127.0.0.1:${server.address().port}/guide`;
const tool = createWebFetchTool({ allow: ["*"], deny: [], privateRanges: ["127.0.0.1/32"], maxBytes: 5 * 1024 * 1024, maxChars: 2_000_000, timeoutMs: 30_000, maxRedirects: 5 });

const fetchTimes = [];
const toolTimes = [];
let details;
for (let i = 0; i < ROUNDS + 2; i++) {
  let t0 = performance.now();
  await (await fetch(url)).arrayBuffer();
  const bare = performance.now() - t0;
  t0 = performance.now();
  const r = await tool.execute("b", { url }, undefined, undefined, undefined);
  const full = performance.now() - t0;
  details = r.details;
  if (i >= 2) fetchTimes.push(bare), toolTimes.push(full);
}
server.close();
const results = {
  pageBytes: Buffer.byteLength(PAGE),
  textChars: details.chars,
  bareGetP50Ms: +p50(fetchTimes).toFixed(1),
  webFetchP50Ms: +p50(toolTimes).toFixed(1),
  ratio: +(p50(toolTimes) / p50(fetchTimes)).toFixed(1),
};
log(`web_fetch bench: a ${(results.pageBytes / 1e6).toFixed(2)} MB HTML page on loopback, ${ROUNDS} rounds`);
log(`  bare GET p50 ${results.bareGetP50Ms} ms; web_fetch (policy, Readability, Markdown) p50 ${results.webFetchP50Ms} ms (x${results.ratio}); text ${results.textChars} characters`);
if (o.json) console.log(JSON.stringify(results, null, 2));
