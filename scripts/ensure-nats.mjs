// A nats-server on PATH is needed when NATS_URL is unset (`mom up` and the tests start their own).
// Installs Debian's package when allowed (root, or passwordless sudo); otherwise says how, in one line.
import { spawnSync } from "node:child_process";

const ok = (cmd, args) => spawnSync(cmd, args, { stdio: "ignore" }).status === 0;

export function ensureNatsServer() {
  if (process.env.NATS_URL) return true;
  if (ok("nats-server", ["--version"]) || ok("/usr/sbin/nats-server", ["--version"])) return true;
  const sudo = process.getuid?.() === 0 ? [] : ok("sudo", ["-n", "true"]) ? ["sudo", "-n"] : undefined;
  if (sudo && ok("apt-get", ["--version"])) {
    console.error("mom: installing nats-server…");
    const run = (args) => spawnSync(sudo[0] ?? args[0], sudo.length ? [...sudo.slice(1), ...args] : args.slice(1), { stdio: ["ignore", "ignore", "inherit"], env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } }).status === 0;
    if (run(["apt-get", "update", "-qq"]) && run(["apt-get", "install", "-y", "-qq", "nats-server"])) return true;
  }
  console.error("mom: nats-server not found: run `sudo apt-get install -y nats-server`, or set NATS_URL to a NATS server with JetStream");
  return false;
}
