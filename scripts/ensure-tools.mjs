// Programs mom needs from the system: nats-server (when NATS_URL is unset; `mom up` and the tests
// start their own) and bubblewrap (the default sandbox). Installs Debian's package when allowed
// (root, or passwordless sudo); otherwise says how, in one line.
import { spawnSync } from "node:child_process";

const ok = (cmd, args) => spawnSync(cmd, args, { stdio: "ignore" }).status === 0;

function aptInstall(pkg) {
  const sudo = process.getuid?.() === 0 ? [] : ok("sudo", ["-n", "true"]) ? ["sudo", "-n"] : undefined;
  if (!sudo || !ok("apt-get", ["--version"])) return false;
  console.error(`mom: installing ${pkg}…`);
  const run = (args) => spawnSync(sudo[0] ?? args[0], sudo.length ? [...sudo.slice(1), ...args] : args.slice(1), { stdio: ["ignore", "ignore", "inherit"], env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } }).status === 0;
  return run(["apt-get", "update", "-qq"]) && run(["apt-get", "install", "-y", "-qq", pkg]);
}

export function ensureNatsServer() {
  if (process.env.NATS_URL) return true;
  if (ok("nats-server", ["--version"]) || ok("/usr/sbin/nats-server", ["--version"])) return true;
  if (aptInstall("nats-server")) return true;
  console.error("mom: nats-server not found: run `sudo apt-get install -y nats-server`, or set NATS_URL to a NATS server with JetStream");
  return false;
}

/** `required`: the tests need it; `npm start` only warns (the runner then falls back to the host, loudly). */
export function ensureBubblewrap({ required }) {
  if (ok("bwrap", ["--version"])) return true;
  if (aptInstall("bubblewrap")) return true;
  console.error("mom: bubblewrap (bwrap) not found: run `sudo apt-get install -y bubblewrap`" + (required ? "" : "; until then tools run unsandboxed on this host"));
  return !required;
}
