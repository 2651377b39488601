import { describe, expect, it } from "@jest/globals";
import { batches as sdkBatches, type OutboundEvent, type OutboundEventBody, Presenter } from "@mom/ingress-sdk";
import { pino } from "pino";
import type { DiscordApi, OutMessage } from "./discord-api.js";
import { DiscordLayout, EMBED_LIMITS, toolEmbed } from "./renderer.js";

interface Call {
  op: "send" | "edit" | "remove" | "typing" | "thread";
  channelId: string;
  messageId?: string;
  m?: OutMessage;
  name?: string;
}

class RecordingApi implements DiscordApi {
  calls: Call[] = [];
  private next = 100;
  constructor(
    private readonly threadableIds: string[] = [],
    private readonly failUploads = false,
  ) {}
  async send(channelId: string, m: OutMessage) {
    if (this.failUploads && m.files?.length) throw new Error("Request entity too large");
    this.calls.push({ op: "send", channelId, m });
    return String(this.next++);
  }
  deleted = new Set<string>();
  async edit(channelId: string, messageId: string, m: OutMessage) {
    if (this.failUploads && m.files?.length) throw new Error("Request entity too large");
    if (this.deleted.has(messageId)) throw Object.assign(new Error("Unknown Message"), { code: 10008 });
    this.calls.push({ op: "edit", channelId, messageId, m });
  }
  async remove(channelId: string, messageId: string) {
    this.calls.push({ op: "remove", channelId, messageId });
  }
  async typing(channelId: string) {
    this.calls.push({ op: "typing", channelId });
  }
  async startThread(channelId: string, messageId: string, name: string) {
    this.calls.push({ op: "thread", channelId, messageId, name });
    return `thread-${messageId}`;
  }
  async threadable(channelId: string) {
    return this.threadableIds.includes(channelId);
  }
  ops() {
    return this.calls.filter((c) => c.op !== "typing");
  }
}

const usage = { input: 1200, output: 34, cacheRead: 0, cacheWrite: 0, totalTokens: 1234, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0.0041 } };
const trigger = { messageId: "111111111111111111", senderId: "u", username: "ana", text: "@mom list the files" };
const ref = { adapter: "discord", channelId: "C1" };

function setup(api: RecordingApi, over: { getFile?: (key: string) => Promise<Uint8Array | undefined> } = {}) {
  const log = pino({ level: "silent" });
  const layout = new DiscordLayout({ api, idOf: (u) => (u === "ana" ? "42" : undefined), channelOfMessage: () => undefined, log });
  const r = new Presenter(layout, { files: { getFile: over.getFile ?? (async () => undefined) }, maxBytes: 1024, editIntervalMs: 10, typingIntervalMs: 60_000, log });
  let seq = 0;
  const emit = (event: OutboundEventBody, runId = "r1") => r.handle(ref.channelId, { runId, seq: seq++, ts: new Date().toISOString(), event } as OutboundEvent);
  return { r, emit };
}

const ended = (finalText: string, extra: object = {}): OutboundEventBody => ({ type: "run_ended", stopReason: "stop", finalText, usage, durationMs: 2300, ...extra }) as OutboundEventBody;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("DiscordRenderer", () => {
  it("progress in one reply, edited (coalesced) as tools run, then the answer with usage; details in a thread", async () => {
    const api = new RecordingApi(["C1"]);
    const { r, emit } = setup(api);
    await emit({ type: "run_started", trigger, model: "fake/x" });
    expect(api.calls[0]).toMatchObject({ op: "send", channelId: "C1", m: { content: "⏳ Working…", replyTo: trigger.messageId } });
    expect(api.calls.some((c) => c.op === "typing")).toBe(true);
    for (let i = 0; i < 20; i++) {
      await emit({ type: "tool_execution_start", toolCallId: `t${i}`, toolName: "bash", label: `Step ${i}`, args: { command: "ls" } });
      await emit({ type: "tool_execution_end", toolCallId: `t${i}`, toolName: "bash", label: `Step ${i}`, isError: i === 3, resultText: i === 3 ? "boom\nmore" : "ok", durationMs: 5 });
    }
    await sleep(40);
    const edits = api.ops().filter((c) => c.op === "edit");
    expect(edits.length).toBeGreaterThanOrEqual(1);
    expect(edits.length).toBeLessThan(5); // 40 events, a handful of edits
    const progress = edits.at(-1)!.m!.content!;
    expect(progress).toContain("⏳ Working…");
    expect(progress).toContain("… 8 earlier steps");
    expect(progress).toContain("✓ Step 19 (5 ms)");

    await emit(ended("Done, @ana: 3 files."));
    const final = api.ops().filter((c) => c.op === "edit").at(-1)!;
    expect(final).toMatchObject({ channelId: "C1", messageId: "100", m: { content: "Done, <@42>: 3 files.", pingUsers: true } });
    expect(final.m!.embeds![0]!.footer!.text).toBe("1,200 in · 34 out · $0.0041 · 2.3s");
    const thread = api.ops().find((c) => c.op === "thread")!;
    expect(thread).toMatchObject({ channelId: "C1", messageId: "100", name: "Details: @mom list the files" });
    const details = api.ops().filter((c) => c.op === "send" && c.channelId === "thread-100");
    expect(details).toHaveLength(2); // 20 embeds, 10 per message
    expect(details[0]!.m!.embeds![3]).toMatchObject({ title: "✗ Step 3", color: 0xe74c3c });
    r.close();
  });

  it("outside server channels (DMs, threads) the details follow the answer as messages", async () => {
    const api = new RecordingApi([]);
    const { emit } = setup(api);
    await emit({ type: "run_started", trigger, model: "fake/x", replyTo: "T9" });
    await emit({ type: "tool_execution_start", toolCallId: "a", toolName: "read", label: "Read notes", args: { path: "notes.md" } });
    await emit({ type: "tool_execution_end", toolCallId: "a", toolName: "read", label: "Read notes", isError: false, resultText: "milk", durationMs: 1200 });
    await emit(ended("Buy milk."));
    const ops = api.ops();
    expect(ops.every((c) => c.channelId === "T9")).toBe(true);
    expect(ops.at(-2)).toMatchObject({ op: "edit", m: { content: "Buy milk." } });
    expect(ops.at(-1)!.m!.embeds![0]).toMatchObject({ title: "✓ Read notes", fields: [{ name: "Tool", value: "read · 1.2 s" }, { name: "Arguments" }] });
    expect(ops.some((c) => c.op === "thread")).toBe(false);
  });

  it("splits a long answer at 2,000 characters without breaking code blocks", async () => {
    const api = new RecordingApi();
    const { emit } = setup(api);
    await emit({ type: "run_started", trigger, model: "fake/x" });
    const code = "```ts\n" + Array.from({ length: 60 }, (_, i) => `const line${i} = ${i}; // some code`).join("\n") + "\n```";
    const answer = `${"Intro paragraph. ".repeat(80)}\n\n${code}\n\n${"Outro. ".repeat(100)}`;
    await emit(ended(answer));
    const texts = api.ops().filter((c) => c.op !== "remove").slice(1).map((c) => c.m!.content!);
    expect(texts.length).toBeGreaterThanOrEqual(3);
    for (const t of texts) {
      expect(t.length).toBeLessThanOrEqual(2000);
      expect((t.match(/```/g) ?? []).length % 2).toBe(0);
    }
    expect(texts.join("").replace(/```ts\n|```|\s/g, "")).toBe(answer.replace(/```ts\n|```|\s/g, ""));
    // the usage embed is on the last piece only
    const withEmbeds = api.ops().filter((c) => c.m?.embeds?.length);
    expect(withEmbeds).toHaveLength(1);
    expect(withEmbeds[0]!.m!.content).toBe(texts.at(-1));
  });

  it("silent runs delete their progress message; stopped and failed runs say so", async () => {
    const api = new RecordingApi();
    const { emit } = setup(api);
    await emit({ type: "run_started", trigger, model: "fake/x" }, "s1");
    await emit(ended("", { silent: true }), "s1");
    expect(api.ops().at(-1)).toEqual({ op: "remove", channelId: "C1", messageId: "100" });
    await emit({ type: "run_started", trigger, model: "fake/x" }, "s2");
    await emit(ended("partial", { stopReason: "aborted" }), "s2");
    expect(api.ops().at(-1)!.m!.content).toBe("partial\n\n■ _Stopped._");
    await emit({ type: "run_started", trigger, model: "fake/x" }, "s3");
    await emit(ended("", { stopReason: "error", errorMessage: "429 rate limited" }), "s3");
    expect(api.ops().at(-1)!.m!.content).toBe("✗ **Error:** 429 rate limited");
  });

  it("posts the answer anew when someone deleted the progress message", async () => {
    const api = new RecordingApi();
    const { emit } = setup(api);
    await emit({ type: "run_started", trigger, model: "m" });
    api.deleted.add("100");
    await emit(ended("Still here."));
    expect(api.ops().at(-1)).toMatchObject({ op: "send", channelId: "C1", m: { content: "Still here.", replyTo: trigger.messageId } });
  });

  it("drops duplicate events and reuses the queued notice as the main message", async () => {
    const api = new RecordingApi();
    const { r } = setup(api);
    const ev = (runId: string, seq: number, event: OutboundEventBody) => r.handle(ref.channelId, { runId, seq, ts: new Date().toISOString(), event } as OutboundEvent);
    await ev("q", 0, { type: "run_queued", trigger, position: 1 });
    expect(api.ops()[0]!.m!.content).toContain("position 1");
    await ev("q", 1, { type: "run_started", trigger, model: "m" });
    await ev("q", 1, { type: "run_started", trigger, model: "m" });
    expect(api.ops().filter((c) => c.op === "send")).toHaveLength(1);
    expect(api.ops()[1]).toMatchObject({ op: "edit", messageId: "100", m: { content: "⏳ Working…" } });
    await ev("q", 2, ended("hi"));
    await ev("q", 2, ended("hi"));
    expect(api.ops().filter((c) => c.m?.content === "hi")).toHaveLength(1);
  });

  it("a rejected mention (busy) gets the runner's text as a reply, in its thread", async () => {
    const api = new RecordingApi();
    const { emit } = setup(api);
    await emit({ type: "run_rejected", trigger, reason: "busy", text: "Still working, @ana. Say `stop` to cancel.", replyTo: "T1" }, "rj");
    expect(api.ops()).toEqual([{ op: "send", channelId: "T1", m: { content: "Still working, <@42>. Say `stop` to cancel.", replyTo: trigger.messageId } }]);
  });

  it("uploads attached files with the answer, says which are gone, and survives a refused upload", async () => {
    const bytes = new Uint8Array([1, 2, 3]);
    const getFile = async (key: string) => (key === "k1" ? bytes : undefined);
    const api = new RecordingApi();
    const { emit } = setup(api, { getFile });
    await emit({ type: "run_started", trigger, model: "m" });
    await emit({ type: "attachment", objectKey: "k1", filename: "chart.png", path: "x/chart.png", size: 3, mimeType: "image/png" });
    await emit({ type: "attachment", objectKey: "k2", filename: "old.csv", path: "x/old.csv", title: "Old data", size: 3 });
    await emit(ended("Here."));
    const final = api.ops().at(-1)!;
    expect(final.op).toBe("edit");
    expect(final.m!.files).toEqual([{ filename: "chart.png", title: "chart.png", bytes, mimeType: "image/png" }]);
    expect(final.m!.content).toBe("Here.\n\n📎 Old data: not available any more (expired from the file store).");

    const refusing = new RecordingApi([], true);
    const s2 = setup(refusing, { getFile });
    await s2.emit({ type: "run_started", trigger, model: "m" });
    await s2.emit({ type: "attachment", objectKey: "k1", filename: "chart.png", path: "x/chart.png", size: 3 });
    await s2.emit(ended("Here."));
    expect(refusing.ops().at(-1)!.m!.content).toMatch(/^Here\.\n\n📎 chart\.png: Discord refused the upload/);
  });
});

describe("embeds", () => {
  it("keep within Discord's limits", () => {
    const big = toolEmbed({ label: "x".repeat(400), toolName: "bash", args: { s: "y".repeat(5000) }, isError: false, resultText: "z".repeat(10_000), durationMs: 1 });
    expect(big.title!.length).toBeLessThanOrEqual(256);
    expect(big.description!.length).toBeLessThanOrEqual(4096);
    for (const f of big.fields!) expect(f.value.length).toBeLessThanOrEqual(1024);
    const batches = sdkBatches(Array.from({ length: 25 }, () => big), EMBED_LIMITS);
    for (const b of batches) {
      expect(b.length).toBeLessThanOrEqual(10);
      expect(JSON.stringify(b).length).toBeLessThan(9000);
    }
    expect(batches.flat()).toHaveLength(25);
  });
});
