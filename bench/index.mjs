#!/usr/bin/env node
// `npm run bench [-- NAME] [options]`: bus-overhead (default), scale, history, sandbox, pull-expiry, elections, node-versions, ingress, code-mode, web-fetch, background-jobs or console; options go to the bench.
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { ensureNatsServer } from "../scripts/ensure-tools.mjs";

const benches = { "bus-overhead": "bus-overhead.mjs", scale: "scale.mjs", history: "history.mjs", sandbox: "sandbox-overhead.mjs", "pull-expiry": "pull-expiry.mjs", elections: "nats-elections.mjs", "node-versions": "node-versions.mjs", ingress: "ingress-inbound.mjs", "code-mode": "code-mode.mjs", "web-fetch": "web-fetch.mjs", "background-jobs": "background-jobs.mjs", console: "console-load.mjs" };
const [first, ...rest] = process.argv.slice(2);
const named = first !== undefined && first in benches;
const file = benches[named ? first : "bus-overhead"];
const args = named ? rest : process.argv.slice(2);
// The nats-server `npm start` and the tests use (2.10 or newer, fetched when the system's is older),
// unless NATS_SERVER_BIN names another: the figures are those of the server mom runs on.
if (!(await ensureNatsServer())) process.exit(1);
const r = spawnSync(process.execPath, ["--expose-gc", join(dirname(fileURLToPath(import.meta.url)), file), ...args], { stdio: "inherit" });
process.exit(r.status ?? 1);
