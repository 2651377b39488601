import { afterAll, describe, expect, it } from "@jest/globals";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { SyncStore } from "./matrix-store.js";

// The built store (npx tsc -b), run as the ingress runs it: a process of its own that is killed.
const BUILT = join(dirname(fileURLToPath(import.meta.url)), "../dist/matrix-store.js");
const dir = mkdtempSync(join(tmpdir(), "mom-matrix-store-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A process storing one sync token after another, as fast as it can, SIGKILLed after `ms`. */
async function killedWhileStoring(file: string, ms: number): Promise<void> {
  const source = `import { SyncStore } from ${JSON.stringify(BUILT)}; const s = new SyncStore(${JSON.stringify(file)}); console.log("ready"); for (let i = 1; ; i++) s.setSyncToken("s" + i);`;
  const child = spawn(process.execPath, ["--input-type=module", "-e", source], { stdio: ["ignore", "pipe", "inherit"] });
  await new Promise<void>((resolve, reject) => {
    child.stdout.once("data", () => resolve());
    child.once("exit", (code) => reject(new Error(`the store process exited (${code}) before storing`)));
  });
  // Killed once it has stored a token: on a loaded machine it may not have run at all ms after "ready".
  for (const until = Date.now() + 10_000; !existsSync(file) && Date.now() < until; ) await new Promise((r) => setTimeout(r, 5));
  await new Promise((r) => setTimeout(r, ms));
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGKILL");
  await exited;
}

describe("matrix sync store", () => {
  it("a crash while storing the sync token leaves the last one stored, never an empty or half-written file", async () => {
    const seen: string[] = [];
    for (let n = 0; n < 12; n++) {
      const file = join(dir, `kill-${n}.json`);
      await killedWhileStoring(file, 20 + 7 * n);
      const token = new SyncStore(file).getSyncToken();
      seen.push(token ?? `nothing in ${JSON.stringify(readFileSync(file, "utf8"))}`);
    }
    expect(seen.filter((t) => !/^s\d+$/.test(t))).toEqual([]);
  }, 60_000);

  it("reads a store SimpleFsStorageProvider wrote, and keeps what it does not know", () => {
    const file = join(dir, "before.json");
    writeFileSync(file, JSON.stringify({ syncToken: "s41", filter: null, appserviceUsers: {}, appserviceTransactions: {}, kvStore: { "mom.e2ee_refused.!a:x": "1" } }, null, 2));
    const store = new SyncStore(file);
    expect([store.getSyncToken(), store.readValue("mom.e2ee_refused.!a:x"), store.readValue("other")]).toEqual(["s41", "1", undefined]);
    store.setSyncToken("s42");
    store.storeValue("mom.e2ee_refused.!b:x", "1");
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({ syncToken: "s42", filter: null, appserviceUsers: {}, appserviceTransactions: {}, kvStore: { "mom.e2ee_refused.!a:x": "1", "mom.e2ee_refused.!b:x": "1" } });
    expect(new SyncStore(join(dir, "none", "new.json")).getSyncToken()).toBeNull();
    const blank = join(dir, "blank.json");
    writeFileSync(blank, "");
    expect(new SyncStore(blank).getSyncToken()).toBeNull();
    const broken = join(dir, "broken.json");
    writeFileSync(broken, '{"syncToken": "s4');
    expect(() => new SyncStore(broken)).toThrow(`the matrix store ${broken} is not JSON`);
  });

  it("without a file, in memory only", () => {
    const store = new SyncStore();
    store.setSyncToken("s1");
    store.storeValue("k", "v");
    expect([store.getSyncToken(), store.readValue("k")]).toEqual(["s1", "v"]);
  });
});
