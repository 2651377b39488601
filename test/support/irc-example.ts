import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
export const IRC_EXAMPLE = join(root, "examples/ingress-irc");
const cacheRoot = join(homedir(), ".cache/mom/ingress-irc");

/** The environment of a child npm/node: none of this run's npm settings or Jest's NODE_OPTIONS. */
export function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("npm_") && k !== "NODE_OPTIONS" && k !== "NATS_URL"));
  return { ...env, ...extra };
}

function run(cmd: string, args: string[], cwd: string): string {
  try {
    return execFileSync(cmd, args, { cwd, env: cleanEnv(), encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(`\`${cmd} ${args.join(" ")}\` in ${cwd} failed: ${e.message}\n${e.stdout ?? ""}${e.stderr ?? ""}`);
  }
}

/** The example's own files (what an author would have), not what npm or tsc made. */
function exampleFiles(): string[] {
  const src = readdirSync(join(IRC_EXAMPLE, "src")).map((f) => `src/${f}`);
  return ["package.json", "tsconfig.json", ...src].sort();
}

/**
 * examples/ingress-irc as someone outside the repository builds it: the SDK packed into a tarball
 * (scripts/pack-ingress-sdk.mjs), the example copied to a directory of its own next to it,
 * `npm install` (the tarball and the registry; no workspace), `tsc`. Kept under
 * ~/.cache/mom/ingress-irc by the hash of the tarball and of the example's files, so a run whose
 * SDK and example did not change skips the install and the build. Resolves with that directory.
 */
export function buildIrcExample(): string {
  const tarball = run(process.execPath, [join(root, "scripts/pack-ingress-sdk.mjs")], root).trim();
  const files = exampleFiles();
  const hash = createHash("sha256").update(readFileSync(tarball));
  for (const f of files) hash.update(f).update(readFileSync(join(IRC_EXAMPLE, f)));
  const key = hash.digest("hex").slice(0, 16);
  const dir = join(cacheRoot, key);
  if (existsSync(join(dir, "dist/main.js"))) return dir;

  // The tarball goes where the example's package.json says (`file:<name>.tgz`), as its README does it.
  const pkg = JSON.parse(readFileSync(join(IRC_EXAMPLE, "package.json"), "utf8")) as { dependencies: Record<string, string> };
  const wanted = pkg.dependencies["@mom/ingress-sdk"]?.replace(/^file:/, "");
  if (wanted !== basename(tarball)) throw new Error(`examples/ingress-irc/package.json depends on "file:${wanted}", but the SDK packs as ${basename(tarball)}: update the example`);
  // Test files running at once may each build it: each in a stage of its own, the first to finish wins.
  const stage = join(cacheRoot, `${key}.${process.pid}.partial`);
  rmSync(stage, { recursive: true, force: true });
  mkdirSync(stage, { recursive: true });
  for (const f of files) cpSync(join(IRC_EXAMPLE, f), join(stage, f));
  cpSync(tarball, join(stage, basename(tarball)));
  run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"], stage);
  run(process.execPath, [join(stage, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.json"], stage);
  writeFileSync(join(stage, "BUILT-FROM"), `${tarball}\n`);
  // Builds of older SDKs or examples go after a day (another checkout may be using a recent one).
  for (const old of readdirSync(cacheRoot)) {
    const at = join(cacheRoot, old);
    if (at !== stage && Date.now() - statSync(at).mtimeMs > 86_400_000) rmSync(at, { recursive: true, force: true });
  }
  try {
    renameSync(stage, dir);
  } catch (err) {
    if (!existsSync(join(dir, "dist/main.js"))) throw err;
    rmSync(stage, { recursive: true, force: true });
  }
  return dir;
}
