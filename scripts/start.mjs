// `npm start [dataDir]`: the one command that takes a fresh clone to a terminal chat with mom.
// Installs npm dependencies and builds when needed, makes sure a nats-server exists when NATS_URL
// is unset (apt-get when allowed, else one line saying how), then runs `mom up`.
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const [major, minor] = process.versions.node.split(".").map(Number);
if (major < 20 || (major === 20 && minor < 19)) {
  console.error(`mom needs Node >= 20.19 (this is ${process.versions.node})`);
  process.exit(1);
}

const ok = (cmd, args) => spawnSync(cmd, args, { stdio: "ignore" }).status === 0;
const run = (cmd, args) => spawnSync(cmd, args, { stdio: "inherit", cwd: root }).status ?? 1;

if (run(process.execPath, [join(root, "scripts/ensure.mjs")]) !== 0) process.exit(1);

const hasNats = ok("nats-server", ["--version"]) || ok("/usr/sbin/nats-server", ["--version"]);
if (!process.env.NATS_URL && !hasNats) {
  const isRoot = process.getuid?.() === 0;
  const sudo = isRoot ? [] : ok("sudo", ["-n", "true"]) ? ["sudo", "-n"] : undefined;
  if (!sudo || !ok("apt-get", ["--version"])) {
    console.error("mom: nats-server not found: run `sudo apt-get install -y nats-server`, or set NATS_URL to a NATS server with JetStream");
    process.exit(1);
  }
  console.error("mom: installing nats-server…");
  const [cmd, ...pre] = sudo.length ? sudo : ["env"];
  if (run(cmd, [...pre, "apt-get", "update", "-qq"]) !== 0 || run(cmd, [...pre, "apt-get", "install", "-y", "-qq", "nats-server"]) !== 0) {
    console.error("mom: could not install nats-server: run `sudo apt-get install -y nats-server`, or set NATS_URL");
    process.exit(1);
  }
}

const dataDir = process.argv[2] ?? join(root, "data");
process.exit(run(process.execPath, [join(root, "services/cli/bin/mom.js"), "up", dataDir]));
