import { describe, expect, it } from "@jest/globals";
import { linkSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { someEntries, someEntriesSync } from "./dir-entries.js";
import { measureDir } from "./disk-usage.js";

const KIB4 = "x".repeat(4096);

describe("measureDir", () => {
  it("counts allocated bytes once per hard-linked file, leaves out `exclude`, never follows a symlink", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mom-du-"));
    try {
      mkdirSync(join(dir, "sub"));
      writeFileSync(join(dir, "a"), KIB4);
      writeFileSync(join(dir, "sub", "b"), KIB4);
      const before = (await measureDir(dir)).bytes;
      expect(before).toBeGreaterThanOrEqual(2 * 4096);
      linkSync(join(dir, "a"), join(dir, "sub", "a-again"));
      writeFileSync(join(dir, "skipped"), KIB4.repeat(4));
      symlinkSync("/usr", join(dir, "usr"));
      expect((await measureDir(dir, new Set([join(dir, "skipped")]))).bytes).toBe(before);
      expect((await measureDir(dir)).bytes).toBeGreaterThanOrEqual(before + 4 * 4096);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("looks at no more than maxEntries entries, however many a command made", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mom-du-"));
    try {
      for (let i = 0; i < 200; i++) writeFileSync(join(dir, `f${i}`), KIB4);
      const all = (await measureDir(dir)).bytes;
      const capped = (await measureDir(dir, new Set(), Infinity, 20)).bytes;
      expect(all).toBeGreaterThanOrEqual(200 * 4096);
      expect(capped).toBeGreaterThanOrEqual(20 * 4096);
      expect(capped).toBeLessThan(all / 5); // 20 of 200 files, whatever the block size
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("someEntries / someEntriesSync", () => {
  it("read at most `max` names of a directory, and none of one that cannot be read", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mom-entries-"));
    try {
      for (let i = 0; i < 50; i++) writeFileSync(join(dir, `f${i}`), "");
      expect(await someEntries(dir, 7)).toHaveLength(7);
      expect(someEntriesSync(dir, 7)).toHaveLength(7);
      expect((await someEntries(dir, 1000)).sort()).toEqual(someEntriesSync(dir, 1000).sort());
      expect(someEntriesSync(dir, 1000)).toHaveLength(50);
      expect(await someEntries(join(dir, "missing"), 10)).toEqual([]);
      expect(someEntriesSync(join(dir, "f0"), 10)).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
