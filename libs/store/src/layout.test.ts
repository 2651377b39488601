import { afterEach, beforeEach, describe, expect, it } from "@jest/globals";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, sep } from "node:path";
import type { LogEntry } from "@mom/contracts";
import { WorkspaceLayout } from "./index.js";

let root: string;
let layout: WorkspaceLayout;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "mom-store-"));
  layout = new WorkspaceLayout(join(root, "workspace"));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const entry = (id: string): LogEntry => ({ id, date: "2025-01-02T03:04:05.000Z", user: "U1", userName: "mario", text: id, attachments: [], isBot: false });

describe("WorkspaceLayout", () => {
  it("creates the top-level directories", async () => {
    await layout.ensureWorkspace();
    expect(readdirSync(layout.workspaceDir).sort()).toEqual(["channels", "events", "skills", "tools"]);
    expect(layout.memoryFile).toBe(join(root, "workspace", "MEMORY.md"));
  });

  it("gives a channel its paths and creates them only on first write", async () => {
    const store = layout.channel({ adapter: "slack-acme", channelId: "C0A34FL8PMH" });
    expect(store.dir).toBe(join(layout.workspaceDir, "channels", "slack-acme", "C0A34FL8PMH"));
    expect(store.logFile).toBe(join(store.dir, "log.jsonl"));
    expect(store.contextFile).toBe(join(store.dir, "context.jsonl"));
    expect(store.memoryFile).toBe(join(store.dir, "MEMORY.md"));
    expect(store.receiptsFile).toBe(join(store.dir, "receipts.jsonl"));
    expect([store.attachmentsDir, store.skillsDir, store.scratchDir]).toEqual(["attachments", "skills", "scratch"].map((d) => join(store.dir, d)));
    expect(existsSync(store.dir)).toBe(false);
    await store.appendLog(entry("m1"));
    expect(readdirSync(store.dir).sort()).toEqual(["attachments", "log.jsonl", "scratch", "skills"]);
  });

  it("returns one store per channel, so appends share one queue", () => {
    const ref = { adapter: "cli", channelId: "local" };
    expect(layout.channel(ref)).toBe(layout.channel({ ...ref }));
  });

  it("keeps odd channel ids inside channels/<adapter>/ and reads them back", async () => {
    const odd = ["../../etc", "..", ".", "a/b", "/abs", "~tilde", "with space", "D.M:1", "日本", "-100123"];
    for (const channelId of odd) {
      const store = layout.channel({ adapter: "cli", channelId });
      const rel = relative(join(layout.channelsDir, "cli"), store.dir);
      expect(rel.includes(sep) || rel.startsWith("..") || rel === "" || rel === ".").toBe(false);
      expect(rel).toMatch(/^[A-Za-z0-9_~-]+$/);
      await store.appendLog(entry(`m-${channelId}`));
    }
    expect(layout.channel({ adapter: "cli", channelId: "../../etc" }).dir).toBe(join(layout.channelsDir, "cli", "~2E~2E~2F~2E~2E~2Fetc"));
    expect(readdirSync(root)).toEqual(["workspace"]);
    expect(layout.listChannels().map((r) => r.channelId).sort()).toEqual([...odd].sort());
  });

  it("rejects adapter names that could escape the channels dir", () => {
    for (const adapter of ["..", "a/b", "Slack", ""]) expect(() => layout.channel({ adapter, channelId: "x" })).toThrow("invalid adapter name");
    expect(() => layout.channel({ adapter: "cli", channelId: "" })).toThrow("must not be empty");
  });

  it("lists channels, ignoring directories it did not make", async () => {
    expect(layout.listChannels()).toEqual([]);
    await layout.channel({ adapter: "slack-acme", channelId: "C1" }).appendLog(entry("m1"));
    await layout.channel({ adapter: "cli", channelId: "a.b" }).appendLog(entry("m1"));
    mkdirSync(join(layout.channelsDir, "cli", "not.escaped"), { recursive: true });
    mkdirSync(join(layout.channelsDir, "Bad_Adapter", "x"), { recursive: true });
    expect(layout.listChannels()).toEqual([
      { adapter: "cli", channelId: "a.b" },
      { adapter: "slack-acme", channelId: "C1" },
    ]);
    expect(await layout.readChannels()).toEqual(layout.listChannels());
  });

  it("reads no channels from a workspace without a channels directory", async () => {
    expect(await new WorkspaceLayout(join(root, "elsewhere")).readChannels()).toEqual([]);
  });
});
