// Makes a fresh clone runnable: installs npm dependencies when missing and builds the TypeScript
// project references. Uses nothing but Node's standard library so it runs before `npm install`.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { supported, SUPPORTED } from "./ensure-node.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
// `npm start` refuses an old Node (scripts/start.mjs); the test suite, the benches and the image
// test still run on one, but say that it is not what mom supports.
if (!supported()) {
  console.error(`mom: warning: Node ${process.versions.node} is out of support; mom runs on ${SUPPORTED} (\`node scripts/ensure-node.mjs\` gets one)`);
}

function run(cmd, args) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: ["ignore", "inherit", "inherit"] });
  if (r.status !== 0) {
    console.error(`mom: \`${cmd} ${args.join(" ")}\` failed (exit ${r.status ?? r.signal})`);
    process.exit(r.status ?? 1);
  }
}

// A first run is minutes of installing and building: say what is going on, or it looks hung.
if (!existsSync(join(root, "node_modules/.package-lock.json"))) {
  console.error("mom: installing npm dependencies (first run; this takes a minute or two)…");
  // `npm ci` rejects lockfiles made without every platform's optional binaries; install keeps it.
  run("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error"]);
}
const started = Date.now();
const firstBuild = !existsSync(join(root, "services/cli/dist/main.js"));
console.error(firstBuild ? "mom: building the TypeScript sources (first run; about a minute)…" : "mom: bringing the build up to date…");
run(process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-b", "tsconfig.json"]);
console.error(`mom: build ready (${Math.round((Date.now() - started) / 1000)} s)`);
