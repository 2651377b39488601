// Programs mom needs from the system: nats-server (when NATS_URL is unset; `mom up` and the tests
// start their own; 2.10 or newer, fetched when the system's is older), bubblewrap (the default
// sandbox), and kustomize for the manifest tests.
// Installs Debian's package when allowed (root, or passwordless sudo); otherwise says how, in one line.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

const ok = (cmd, args) => spawnSync(cmd, args, { stdio: "ignore" }).status === 0;

function aptInstall(pkg) {
  const sudo = process.getuid?.() === 0 ? [] : ok("sudo", ["-n", "true"]) ? ["sudo", "-n"] : undefined;
  if (!sudo || !ok("apt-get", ["--version"])) return false;
  console.error(`mom: installing ${pkg}…`);
  const run = (args) => spawnSync(sudo[0] ?? args[0], sudo.length ? [...sudo.slice(1), ...args] : args.slice(1), { stdio: ["ignore", "ignore", "inherit"], env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } }).status === 0;
  return run(["apt-get", "update", "-qq"]) && run(["apt-get", "install", "-y", "-qq", pkg]);
}

/**
 * A nats-server for `mom up` and the tests when NATS_URL is unset, named in NATS_SERVER_BIN for the
 * processes started from here (a NATS_SERVER_BIN already set is the user's choice and is kept).
 * A server older than 2.10 (Debian 12 ships 2.9.10) can lose a channel feed's pull request as it
 * expires (docs/scaling.md), so without a newer one Debian trixie's package is unpacked into the
 * cache; the system's old one is the last resort, with a warning. Call it after the build.
 */
export async function ensureNatsServer() {
  if (process.env.NATS_URL || process.env.NATS_SERVER_BIN) return true;
  // Which releases are good enough is libs/bus's call (it warns about the others at connect).
  const { serverCaveat } = await import("../libs/bus/dist/server-caveat.js");
  const cached = join(cacheDir("tools", "nats-server"), "usr/sbin/nats-server");
  const installed = () => ["nats-server", "/usr/sbin/nats-server", "/usr/local/bin/nats-server", cached].map((bin) => ({ bin, version: natsVersion(bin) })).filter((c) => c.version);
  let found = installed();
  let use = found.find((c) => !serverCaveat(c.version));
  if (!use && unpackDebianPackage("nats-server", "trixie")) use = installed().find((c) => !serverCaveat(c.version));
  if (!use && found.length === 0 && aptInstall("nats-server")) found = installed();
  use ??= found[0];
  if (!use) {
    console.error("mom: nats-server not found: run `sudo apt-get install -y nats-server`, or set NATS_URL to a NATS server with JetStream");
    return false;
  }
  const caveat = serverCaveat(use.version);
  if (caveat) console.error(`mom: ${caveat}`);
  process.env.NATS_SERVER_BIN = use.bin;
  return true;
}

/** A nats-server binary's version ("2.10.27"), or undefined when it does not run. */
function natsVersion(bin) {
  const r = spawnSync(bin, ["--version"], { encoding: "utf8" });
  return (r.status === 0 && /\d+\.\d+\.\d+/.exec(r.stdout)?.[0]) || undefined;
}

/** `required`: the tests need it; `npm start` only warns (the runner then falls back to the host, loudly). */
export function ensureBubblewrap({ required }) {
  if (ok("bwrap", ["--version"])) return true;
  if (aptInstall("bubblewrap")) return true;
  console.error("mom: bubblewrap (bwrap) not found: run `sudo apt-get install -y bubblewrap`" + (required ? "" : "; until then tools run unsandboxed on this host"));
  return !required;
}

/** Where mom keeps tools and images it fetched for its own tests, between runs on one machine. */
export function cacheDir(...parts) {
  return join(process.env.XDG_CACHE_HOME || join(homedir(), ".cache"), "mom", ...parts);
}

const kustomizeCache = () => cacheDir("tools", "kustomize");

/** A kustomize to render k8s/ with: on PATH, else the one ensureKustomize() unpacked. */
export function findKustomize() {
  if (ok("kustomize", ["version"])) return "kustomize";
  const cached = join(kustomizeCache(), "usr/bin/kustomize");
  return existsSync(cached) ? cached : undefined;
}

/** The Debian mirror apt already uses (never a host name written into the project). */
export function debianMirror() {
  const texts = [];
  for (const f of ["/etc/apt/sources.list", ...listDir("/etc/apt/sources.list.d").map((n) => join("/etc/apt/sources.list.d", n))]) {
    try { texts.push(readFileSync(f, "utf8")); } catch { /* unreadable: next */ }
  }
  const urls = texts.join("\n").match(/\bhttps?:\/\/\S+/g) ?? [];
  return urls.map((u) => u.replace(/\/+$/, "")).find((u) => /\/debian$/.test(u));
}

function listDir(dir) {
  try { return readdirSync(dir); } catch { return []; }
}

/**
 * Unpacks Debian package `pkg` of `suite` into the cache (apt with a sources file and lists of its
 * own: the system's apt setup is left alone; no root needed) and returns the folder, or undefined
 * after saying why in one line. For tools Debian stable lacks or has too old.
 */
function unpackDebianPackage(pkg, suite) {
  const dir = cacheDir("tools", pkg);
  const mirror = debianMirror();
  if (!mirror || !ok("apt-get", ["--version"]) || !ok("dpkg", ["--version"])) {
    console.error(`mom: cannot fetch ${pkg}: no apt, dpkg or Debian mirror here`);
    return undefined;
  }
  const work = join(dir, "apt");
  mkdirSync(join(work, "lists/partial"), { recursive: true });
  mkdirSync(join(work, "cache/archives/partial"), { recursive: true });
  writeFileSync(join(work, "sources.list"), `deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] ${mirror} ${suite} main\n`);
  const apt = (...args) =>
    spawnSync("apt-get", ["-qq", "-o", `Dir::Etc::sourcelist=${join(work, "sources.list")}`, "-o", "Dir::Etc::sourceparts=-", "-o", `Dir::State::Lists=${join(work, "lists")}`, "-o", `Dir::Cache=${join(work, "cache")}`, "-o", "Debug::NoLocking=1", ...args], { cwd: work, stdio: ["ignore", "ignore", "ignore"] }).status === 0;
  console.error(`mom: fetching ${pkg} (Debian ${suite}'s package) into ${dir}`);
  const deb = () => listDir(work).find((n) => n.startsWith(`${pkg}_`) && n.endsWith(".deb"));
  const fetched = apt("update") && apt("download", pkg) && deb() && spawnSync("dpkg", ["-x", join(work, deb()), dir], { stdio: "inherit" }).status === 0;
  rmSync(work, { recursive: true, force: true });
  if (!fetched) console.error(`mom: could not download Debian ${suite}'s ${pkg}`);
  return fetched ? dir : undefined;
}

/** kustomize for the manifest tests: on PATH, else sid's package (Debian stable has none). */
export function ensureKustomize() {
  const found = findKustomize();
  if (found) return found;
  if (!unpackDebianPackage("kustomize", "sid")) {
    console.error("mom: install kustomize (>= 5) on PATH");
    return undefined;
  }
  return findKustomize();
}

/**
 * A DOCKER_CONFIG folder whose cli-plugins/ has Compose v2, for `docker compose` in the engine
 * test: the user's own plugin when `docker compose` already works (undefined: use the default),
 * else trixie's docker-compose package (bookworm has only Compose v1). Returns null without one.
 */
export function ensureComposeConfig() {
  if (ok("docker", ["compose", "version"])) return undefined;
  const plugin = () => join(cacheDir("tools", "docker-compose"), "usr/libexec/docker/cli-plugins/docker-compose");
  if (!existsSync(plugin()) && !unpackDebianPackage("docker-compose", "trixie")) return null;
  const config = cacheDir("tools", "docker-config");
  mkdirSync(join(config, "cli-plugins"), { recursive: true });
  rmSync(join(config, "cli-plugins/docker-compose"), { force: true });
  symlinkSync(plugin(), join(config, "cli-plugins/docker-compose"));
  return config;
}
