import { describe, expect, it } from "@jest/globals";
import { closeSync, mkdtempSync, openSync, rmSync, statSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EventsDir } from "./events-dir.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("EventsDir.read", () => {
  it("dates the bytes it read by the write that made them, whenever the read falls (replicas agree on an immediate event's fire time)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mom-events-dir-"));
    try {
      const events = new EventsDir(dir);
      const text = JSON.stringify({ type: "immediate", channelId: "cli/local", text: "now" });
      const names = Array.from({ length: 20 }, (_, i) => `now-${i}.json`);
      // Modification times each reader saw together with the whole text, by file.
      const seen = new Map<string, Set<number>>(names.map((n) => [n, new Set<number>()]));
      let writing = true;
      // Two replicas polling all the time, so that some read falls across each file's write.
      const poll = async () => {
        while (writing) {
          for (const name of names) {
            const c = await events.read(name);
            if (c?.text === text) seen.get(name)!.add(c.stamp.mtimeMs);
          }
        }
      };
      const readers = [poll(), poll()];
      for (const name of names) {
        // An editor that creates the file, then writes it: two modification times.
        const fd = openSync(join(dir, name), "w");
        await sleep(3);
        writeSync(fd, text);
        closeSync(fd);
        await sleep(3);
      }
      writing = false;
      await Promise.all(readers);
      for (const name of names) expect({ name, mtimes: [...seen.get(name)!] }).toEqual({ name, mtimes: [statSync(join(dir, name)).mtimeMs] });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
