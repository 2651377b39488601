import { afterAll, describe, expect, it } from "@jest/globals";
import { rmSync } from "node:fs";
import { Sandbox } from "./sandbox.js";
import { makeDataDir } from "./test-support.js";

const dirs = makeDataDir();
afterAll(() => rmSync(dirs.dataDir, { recursive: true, force: true }));

describe("Sandbox", () => {
  it("auto chooses bwrap where it works and the host otherwise, and says why", () => {
    expect(new Sandbox({ type: "auto" }, dirs, () => true)).toMatchObject({ kind: "bwrap", reason: "auto: bubblewrap works here" });
    const host = new Sandbox({ type: "auto" }, dirs, () => false);
    expect(host.kind).toBe("host");
    expect(host.reason).toMatch(/bubblewrap is not installed or cannot create namespaces here/);
    expect(host.forChannel(dirs.channelA).description).toMatch(/^none — commands run directly on the runner's host/);
  });

  it("refuses to start a bwrap sandbox where bubblewrap cannot run", () => {
    expect(() => new Sandbox({ type: "bwrap" }, dirs, () => false)).toThrow(/sandbox.type is "bwrap" but bubblewrap is not installed/);
  });

  it("describes the bwrap sandbox for the system prompt, network and shared paths included", () => {
    const closed = new Sandbox({ type: "bwrap" }, dirs, () => true).forChannel(dirs.channelA).description;
    expect(closed).toMatch(/^bubblewrap — .*other channels hidden.*without network/);
    expect(closed).toContain("the shared workspace files (MEMORY.md, skills) read-only (only the operator and the channels in sandbox.sharedWriters change them)");
    const writer = new Sandbox({ type: "bwrap", network: true, shared: ["skills"], sharedWriters: ["cli/a"] }, dirs, () => true).forChannel(dirs.channelA, [], "cli/a");
    expect(writer.description).toMatch(/\(skills\) writable.*with the host's network/);
    expect(writer.sharedWritable).toBe(true);
  });
});
