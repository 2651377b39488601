import { describe, expect, it } from "@jest/globals";
import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");

// `npm start` runs scripts/ensure.mjs first: a first run spends a minute installing and building,
// and must say so rather than sit silent.
describe("npm start says what it is doing", () => {
  it("announces the build and when it is ready", async () => {
    const child = spawn(process.execPath, [join(root, "scripts/ensure.mjs")], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
    let err = "";
    child.stderr.setEncoding("utf8").on("data", (t: string) => (err += t));
    const code = await new Promise<number | null>((r) => child.once("close", r));
    expect(code).toBe(0);
    // This checkout is built already; a fresh clone gets "building the TypeScript sources (first run; …)".
    // On a Node older than the supported lines (a developer's machine), one warning line comes first.
    expect(err).toMatch(/^(mom: warning: Node [\d.]+ is out of support; mom runs on Node 24 or 26 .*\n)?mom: bringing the build up to date…\nmom: build ready \(\d+ s\)\n$/);
  }, 120_000);
});
