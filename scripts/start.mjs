// `npm start [dataDir]`: the one command that takes a fresh clone to a terminal chat with mom.
// Installs npm dependencies and builds when needed, makes sure a nats-server exists when NATS_URL
// is unset, then runs `mom up`.
import { spawn, spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { supported, tooOldMessage } from "./ensure-node.mjs";
import { ensureBubblewrap, ensureNatsServer } from "./ensure-tools.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
// Before installing or building anything: on an old Node the dependencies install but fail at run
// time (undici, @nats-io/nuid, file-type want >= 22), far from the cause.
if (!supported()) {
  console.error(tooOldMessage("mom"));
  process.exit(1);
}
const run = (args) => spawnSync(process.execPath, args, { stdio: "inherit", cwd: root }).status ?? 1;

if (run([join(root, "scripts/ensure.mjs")]) !== 0) process.exit(1);
if (!(await ensureNatsServer())) process.exit(1);
ensureBubblewrap({ required: false });
console.error("mom: starting (NATS, agent runner, scheduler, terminal chat)…");
// Not spawnSync: this process must outlive a Ctrl-C (which the terminal sends to `mom up` too) until
// `mom up` has stopped, or `mom up` is left behind with no parent, and pass on a SIGTERM or SIGHUP.
const mom = spawn(process.execPath, [join(root, "services/cli/bin/mom.js"), "up", process.argv[2] ?? join(root, "data")], { stdio: "inherit", cwd: root });
process.on("SIGINT", () => {});
for (const signal of ["SIGTERM", "SIGHUP"]) process.on(signal, () => mom.kill(signal));
mom.on("exit", (code, signal) => process.exit(code ?? (signal === "SIGINT" ? 130 : 1)));
