#!/usr/bin/env node
// Does this nats-server drop a pull request that expires just as a message arrives, without the
// 408 that tells the client? nats.js then counts the pull as pending and the feed sits still until
// it misses two heartbeats. Channel feeds are ordered pull consumers (libs/bus/src/follow.ts), so
// this is the stall docs/scaling.md tells of. Many feeds with 1 s pulls and steady traffic make the
// moment common; the server is started here, on loopback, from NATS_SERVER_BIN or PATH.
//
//   npm run bench -- pull-expiry [--feeds 40] [--seconds 20]
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const { spawnNatsServer } = await import(join(root, "libs/testing/dist/index.js"));
const { connect } = await import("@nats-io/transport-node");
const { jetstream, jetstreamManager } = await import("@nats-io/jetstream");

const { values: o } = parseArgs({ options: { feeds: { type: "string", default: "40" }, seconds: { type: "string", default: "20" }, help: { type: "boolean", short: "h" } } });
if (o.help) {
  console.log("usage: node bench/pull-expiry.mjs [--feeds 40] [--seconds 20]");
  process.exit(0);
}
const FEEDS = Number(o.feeds);
const SECONDS = Number(o.seconds);
if (!Number.isInteger(FEEDS) || FEEDS < 1 || !(SECONDS > 0)) {
  console.error(`--feeds expects a whole number ≥ 1 and --seconds a number > 0, got ${o.feeds} and ${o.seconds}`);
  process.exit(2);
}
const EXPIRES_MS = 1000; // the shortest nats.js allows; its heartbeat is then 500 ms
const LATE_MS = 300;

const nats = await spawnNatsServer();
const nc = await connect({ servers: nats.url });
try {
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: "EXPIRY", subjects: ["expiry.>"] });
  const js = jetstream(nc);
  const sentAt = new Map();
  const r = { stalls: 0, delivered: 0, late: 0, maxDelayMs: 0 };
  for (let i = 0; i < FEEDS; i++) {
    const feed = await (await js.consumers.get("EXPIRY", { filter_subjects: `expiry.${i}` })).consume({ expires: EXPIRES_MS });
    void (async () => {
      for await (const s of feed.status()) if (s.type === "heartbeats_missed") r.stalls++;
    })();
    void (async () => {
      for await (const m of feed) {
        const delay = performance.now() - sentAt.get(m.string());
        r.delivered++;
        if (delay > LATE_MS) r.late++;
        r.maxDelayMs = Math.max(r.maxDelayMs, delay);
      }
    })();
  }
  console.log(`nats-server ${nc.info.version}: ${FEEDS} feeds (ordered pull consumers, ${EXPIRES_MS} ms pulls), one message every 2 ms round-robin, ${SECONDS} s…`);
  let n = 0;
  for (const end = Date.now() + SECONDS * 1000; Date.now() < end; n++) {
    sentAt.set(String(n), performance.now());
    await js.publish(`expiry.${n % FEEDS}`, String(n));
    await new Promise((res) => setTimeout(res, 2));
  }
  await new Promise((res) => setTimeout(res, 3 * EXPIRES_MS));
  console.log(`  ${n} published, ${r.delivered} delivered; ${r.stalls} time(s) a feed missed two heartbeats and pulled again; ${r.late} message(s) later than ${LATE_MS} ms (slowest ${r.maxDelayMs.toFixed(0)} ms)`);
  console.log(r.stalls > 0 ? "  this server drops expiring pulls silently: mom's feeds recover (docs/scaling.md), a newer nats-server does not need them to" : "  no pull was lost");
} finally {
  await nc.close();
  await nats.stop();
}
