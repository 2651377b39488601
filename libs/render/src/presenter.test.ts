import { describe, expect, it } from "@jest/globals";
import type { FileSource } from "@mom/bus";
import type { OutboundEvent, OutboundEventBody, Usage } from "@mom/contracts";
import { pino } from "pino";
import { plainDialect } from "./dialect.js";
import { type ChatSurface, MessageLayout, type Placement } from "./message-layout.js";
import { DeliveryReceipts } from "./delivery-receipts.js";
import { postRecord } from "./posts.js";
import { consoleRunUrl } from "./notes.js";
import { Presenter } from "./presenter.js";
import { reduceRun } from "./run-view.js";
import { RunTracker } from "./run-tracker.js";

const USAGE: Usage = { input: 1200, output: 34, cacheRead: 0, cacheWrite: 0, totalTokens: 1234, cost: { input: 0.001, output: 0.0005, cacheRead: 0, cacheWrite: 0, total: 0.0015 } };
const trigger = { messageId: "m1", senderId: "u1", username: "ana", text: "go" };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Op {
  op: string;
  channel: string;
  id?: string;
  text?: string;
  at?: Placement;
  approvalId?: string;
  file?: string;
}

function recordingSurface(opts: { edits?: boolean; slowMs?: number; deleted?: Set<string> } = {}) {
  const ops: Op[] = [];
  const gone = (id: string) => {
    if (opts.deleted?.has(id)) throw Object.assign(new Error(`message ${id} not found`), { gone: true });
  };
  let n = 0;
  const slow = () => (opts.slowMs ? sleep(opts.slowMs) : Promise.resolve());
  const surface: ChatSurface = {
    dialect: { ...plainDialect(100), italic: (t) => `_${t}_` },
    async post(channel, text, at) {
      await slow();
      const id = String(++n);
      ops.push({ op: "post", channel, id, text, at });
      return id;
    },
    async upload(channel, file, at) {
      ops.push({ op: "upload", channel, file: `${file.title}:${file.bytes.length}`, at });
    },
    async prompt(channel, text, approvalId, at) {
      const id = String(++n);
      ops.push({ op: "prompt", channel, id, text, approvalId, at });
      return id;
    },
    async closePrompt(channel, id, text) {
      ops.push({ op: "closePrompt", channel, id, text });
    },
    async delete(channel, id) {
      gone(id);
      ops.push({ op: "delete", channel, id });
    },
    isGone: (err) => (err as { gone?: boolean }).gone === true,
  };
  if (opts.edits !== false) {
    surface.edit = async (channel, id, text) => {
      await slow();
      gone(id);
      ops.push({ op: "edit", channel, id, text });
    };
  }
  return { surface, ops };
}

const files = (objects: Record<string, Uint8Array> = {}): FileSource => ({ getFile: async (k: string) => objects[k], fileInfo: async () => undefined }) as unknown as FileSource;

function setup(o: { edits?: boolean; interval?: number; objects?: Record<string, Uint8Array>; slowMs?: number; deleted?: Set<string>; runUrl?: (channel: string, runId: string) => string } = {}) {
  const { surface, ops } = recordingSurface(o);
  const p = new Presenter(new MessageLayout(surface), { files: files(o.objects), maxBytes: 1000, log: pino({ level: "silent" }), editIntervalMs: o.interval ?? 50, ...(o.runUrl && { runUrl: o.runUrl }) });
  const seqs = new Map<string, number>();
  const emit = (event: OutboundEventBody, runId = "r1", channel = "C1") => {
    const seq = seqs.get(runId) ?? 0;
    seqs.set(runId, seq + 1);
    return p.handle(channel, { runId, seq, ts: new Date().toISOString(), event } as OutboundEvent);
  };
  return { p, ops, emit };
}

const ended = (finalText: string, extra: Partial<Extract<OutboundEventBody, { type: "run_ended" }>> = {}): OutboundEventBody => ({ type: "run_ended", stopReason: "stop", finalText, usage: USAGE, durationMs: 2100, ...extra });
const toolStart = (i: number): OutboundEventBody => ({ type: "tool_execution_start", toolCallId: `t${i}`, toolName: "bash", label: `Step ${i}`, args: { command: `echo ${i}` } });
const toolEnd = (i: number, isError = false): OutboundEventBody => ({ type: "tool_execution_end", toolCallId: `t${i}`, toolName: "bash", label: `Step ${i}`, isError, resultText: isError ? "boom\nmore" : "ok", durationMs: 5 });

describe("reduceRun", () => {
  it("folds a run into steps, activity, files and approvals without touching the old view", () => {
    const e = (seq: number, event: OutboundEventBody): OutboundEvent => ({ runId: "r", seq, ts: "2026-01-01T00:00:00Z", event }) as OutboundEvent;
    const v1 = reduceRun(undefined, e(0, { type: "run_started", trigger, model: "m", replyTo: "T1" }));
    const v2 = reduceRun(v1, e(1, toolStart(1)));
    expect(v2.activity).toEqual({ kind: "tool", label: "Step 1", toolCallId: "t1" });
    const v3 = reduceRun(v2, e(2, toolEnd(1, true)));
    expect(v3.steps).toEqual([{ kind: "tool", label: "Step 1", toolName: "bash", args: { command: "echo 1" }, isError: true, resultText: "boom\nmore", durationMs: 5 }]);
    expect(v3.runningArgs).toEqual({});
    expect(v2.steps).toEqual([]);
    const v4 = reduceRun(v3, e(3, { type: "auto_retry_start", attempt: 1, maxAttempts: 3, delayMs: 2000, errorMessage: "overloaded" }));
    expect(v4.steps.at(-1)).toMatchObject({ kind: "retry", attempt: 1 });
    expect(v4).toMatchObject({ sawStart: true, replyTo: "T1", lastSeq: 3 });
  });

  it("shows the approved tool running again once its approval is decided", () => {
    const e = (seq: number, event: OutboundEventBody): OutboundEvent => ({ runId: "r", seq, ts: "2026-01-01T00:00:00Z", event }) as OutboundEvent;
    const asked = { type: "approval_requested", toolId: "bash", risk: "destructive", argsSummary: "rm x", requestedBy: { id: "u1", username: "ana" }, expiresAt: "2026-01-01T10:05:00.000Z", approvers: [] } as const;
    let v = reduceRun(undefined, e(0, { type: "run_started", trigger, model: "m" }));
    v = reduceRun(v, e(1, toolStart(1)));
    v = reduceRun(v, e(2, { ...asked, approvalId: "a1" }));
    expect(v.activity.kind).toBe("awaiting_approval");
    v = reduceRun(v, e(3, { ...asked, approvalId: "a2" }));
    v = reduceRun(v, e(4, { type: "approval_resolved", approvalId: "a1", outcome: "approved", decidedBy: "@bo" }));
    expect(v.activity.kind).toBe("awaiting_approval"); // a2 is still waiting
    v = reduceRun(v, e(5, { type: "approval_resolved", approvalId: "a2", outcome: "approved", decidedBy: "@bo" }));
    expect(v.activity).toEqual({ kind: "tool", label: "Step 1", toolCallId: "t1" });
    v = reduceRun(v, e(6, toolEnd(1)));
    expect(v.activity).toEqual({ kind: "working" });
  });
});

describe("RunTracker", () => {
  it("drops duplicate seqs and events after the end; builds a view for a run it never saw start", () => {
    const t = new RunTracker();
    const e = (runId: string, seq: number, event: OutboundEventBody) => ({ runId, seq, ts: "2026-01-01T00:00:00Z", event }) as OutboundEvent;
    expect(t.accept(e("a", 0, { type: "run_started", trigger, model: "m" }))).toBeDefined();
    expect(t.accept(e("a", 0, { type: "run_started", trigger, model: "m" }))).toBeUndefined();
    expect(t.accept(e("a", 1, ended("x")))?.view.end?.finalText).toBe("x");
    expect(t.accept(e("a", 2, toolStart(1)))).toBeUndefined();
    const late = t.accept(e("b", 7, toolStart(1)));
    expect(late?.view).toMatchObject({ sawStart: false, activity: { kind: "tool" } });
  });
});

describe("Presenter + MessageLayout", () => {
  it("coalesces a burst of tool calls into a few edits; the progress message becomes the answer", async () => {
    const { ops, emit } = setup({ interval: 80 });
    await emit({ type: "run_started", trigger, model: "m" });
    for (let i = 0; i < 100; i++) {
      await emit(toolStart(i));
      await emit(toolEnd(i, i === 3));
    }
    await sleep(200);
    const edits = ops.filter((o) => o.op === "edit");
    expect(edits.length).toBeGreaterThan(0);
    expect(edits.length).toBeLessThan(6);
    expect(edits.at(-1)!.text).toContain("✓ Step 99 (5 ms)");
    expect(edits.at(-1)!.text).toContain("earlier steps");
    await emit(ended("All **done**.", { toolActivity: [{ toolId: "bash", risk: "write", status: "succeeded", label: "Step 1" }] }));
    const last = ops.at(-1)!;
    expect(last).toMatchObject({ op: "edit", id: "1" });
    expect(last.text).toBe("All **done**.\n\n✓ bash — Step 1: succeeded\n\n_📊 1,200 in · 34 out · $0.0015 · 2.1s_");
  });

  it("close draws a redraw still waiting out the edit interval: the events it shows were acked, nobody else will draw them", async () => {
    // An interval no test waits out: the redraw is pending when the ingress shuts down.
    const { p, ops, emit } = setup({ interval: 60 * 60_000 });
    await emit({ type: "run_started", trigger, model: "m" });
    await emit(toolStart(1));
    await emit(toolEnd(1));
    expect(ops.filter((o) => o.op === "edit")).toEqual([]);
    await p.close();
    const edits = ops.filter((o) => o.op === "edit");
    expect(edits).toHaveLength(1);
    expect(edits[0]!.text).toContain("✓ Step 1 (5 ms)");
  });

  it("receipt links: with the console's URL an answer with tool activity links to its run page; one without tools does not", async () => {
    const { ops, emit } = setup({ runUrl: (channel, runId) => consoleRunUrl("https://ops.example/", "slack", channel, runId) });
    await emit({ type: "run_started", trigger, model: "m" });
    await emit(ended("Listed.", { toolActivity: [{ toolCallId: "t1", toolId: "read", risk: "read", status: "succeeded", label: "Look" }] }));
    // A read-only call is not listed, but its receipts are on the page.
    // (This surface's messages hold 100 characters: the answer comes in parts.)
    const said = (from: number) => ops.slice(from).map((o) => ("text" in o ? o.text : "")).join("\n");
    expect(said(0)).toContain("Listed.\n\n[Receipts and timeline](https://ops.example/channels/slack/C1/runs/r1)");
    const before = ops.length;
    await emit({ type: "run_started", trigger, model: "m" }, "r/2 x");
    await emit(ended("Just talk."), "r/2 x");
    expect(said(before)).toContain("Just talk.");
    expect(said(before)).not.toContain("Receipts");
    expect(consoleRunUrl("https://ops.example/console", "telegram", "-100 5/x", "r/2")).toBe("https://ops.example/console/channels/telegram/-100%205%2Fx/runs/r%2F2");
  });

  it("a running tool's latest output line shows under its label, coalesced to the edit interval", async () => {
    const { ops, emit } = setup({ interval: 80 });
    await emit({ type: "run_started", trigger, model: "m" });
    await emit(toolStart(1));
    const update = (partialText: string, toolCallId = "t1"): OutboundEventBody => ({ type: "tool_execution_update", toolCallId, toolName: "bash", partialText });
    for (let i = 1; i <= 50; i++) await emit(update(`compiling ${i}/50\n`));
    await emit(update("not this tool's output", "t9"));
    await sleep(200);
    const edits = ops.filter((o) => o.op === "edit");
    expect(edits.length).toBeLessThan(5);
    expect(edits.at(-1)!.text).toBe("⏳ Working…\n→ Step 1\n   compiling 50/50");
    // A progress bar redrawn with carriage returns shows its latest state; blank lines are skipped.
    await emit(update("downloading\r 10%\r 55%\n\n"));
    await sleep(150);
    expect(ops.filter((o) => o.op === "edit").at(-1)!.text).toBe("⏳ Working…\n→ Step 1\n   55%");
    // The command's output is the model's to choose: nothing it prints hides in the line.
    await emit(update("\u001b[2Jall \u202egood\u200b\n"));
    await sleep(150);
    const hostile = ops.filter((o) => o.op === "edit").at(-1)!.text!;
    expect(hostile).not.toMatch(/[\u001b\u202e\u200b]/);
    expect(hostile).toContain("all");
    await emit(toolEnd(1));
    await sleep(150);
    expect(ops.filter((o) => o.op === "edit").at(-1)!.text).toBe("⏳ Working…\n✓ Step 1 (5 ms)");
  });

  it("keeps a channel's calls in order even when the platform is slow", async () => {
    const { ops, emit } = setup({ slowMs: 20, interval: 10 });
    void emit({ type: "run_started", trigger, model: "m" });
    void emit(toolStart(1));
    void emit(toolEnd(1));
    await emit(ended("Done."));
    await sleep(50);
    expect(ops[0]!.op).toBe("post");
    expect(ops.at(-1)).toMatchObject({ op: "edit", text: expect.stringMatching(/^Done\./) });
  });

  it("approval prompts carry the approvers and show the outcome; the pending approval is known until then", async () => {
    const { p, ops, emit } = setup();
    await emit({ type: "run_started", trigger, model: "m", replyTo: "T7" });
    await emit({ type: "approval_requested", approvalId: "ap1", toolId: "bash", risk: "destructive", argsSummary: "rm -rf x", requestedBy: { id: "u1", username: "ana" }, expiresAt: "2026-01-01T10:05:00.000Z", approvers: ["u9"] });
    const prompt = ops.find((o) => o.op === "prompt")!;
    expect(prompt).toMatchObject({ approvalId: "ap1", at: { thread: "T7" } });
    expect(prompt.text).toBe("🔐 Approval needed: mom wants to run bash (destructive), asked by @ana\nrm -rf x\nWho can decide: @u9 · no decision by 10:05 UTC means deny");
    expect(p.approval("ap1")).toMatchObject({ channel: "C1", approvers: ["u9"], prompt: prompt.id });
    await emit({ type: "approval_resolved", approvalId: "ap1", outcome: "denied", decidedBy: "@bo" });
    expect(ops.find((o) => o.op === "closePrompt")).toMatchObject({ id: prompt.id, text: `${prompt.text}\n⊘ Denied by @bo.` });
    expect(p.approval("ap1")).toBeUndefined();
  });

  it("silent runs leave nothing; stopped, failed and cut-off runs say so; long answers are split", async () => {
    const { ops, emit } = setup();
    await emit({ type: "run_started", trigger, model: "m" }, "s");
    await emit(ended("", { silent: true }), "s");
    expect(ops.map((o) => o.op)).toEqual(["post", "delete"]);
    await emit({ type: "run_started", trigger, model: "m" }, "a");
    await emit(ended("partial", { stopReason: "aborted" }), "a");
    expect(ops.at(-1)!.text).toMatch(/^partial\n\n■ _Stopped\._/);
    await emit(ended("", { stopReason: "error", errorMessage: "429 rate limited" }), "e");
    expect(ops.at(-1)).toMatchObject({ op: "post", text: expect.stringMatching(/^✗ Error: 429 rate limited/) });
    await emit(ended("word ".repeat(60).trim()), "long");
    const posts = ops.filter((o) => o.op === "post").slice(-3);
    expect(posts.length).toBe(3);
    for (const p of posts) expect(p.text!.length).toBeLessThanOrEqual(100);
  });

  it("files follow the answer; one that expired is reported in it", async () => {
    const { ops, emit } = setup({ objects: { k1: new Uint8Array([1, 2, 3]) } });
    await emit({ type: "run_started", trigger, model: "m" });
    await emit({ type: "attachment", objectKey: "k1", filename: "chart.png", path: "x/chart.png", size: 3 });
    await emit({ type: "attachment", objectKey: "k2", filename: "old.csv", path: "x/old.csv", title: "Old data", size: 3 });
    await emit(ended("Here."));
    expect(ops.map((o) => o.text).join("\n")).toContain("📎 Old data: not available any more (expired from the file store).");
    expect(ops.at(-1)).toMatchObject({ op: "upload", file: "chart.png:3" });
  });

  it("where one message carries text and files (e-mail), they go with the answer's last message", async () => {
    const { surface, ops } = recordingSurface({ edits: false });
    surface.postWithFiles = async (channel, text, shared, at) => {
      ops.push({ op: "postWithFiles", channel, id: "m", text, at, file: shared.map((f) => `${f.title}:${f.bytes.length}`).join(",") });
      return "m";
    };
    const p = new Presenter(new MessageLayout(surface), { files: files({ k1: new Uint8Array([1, 2, 3]) }), maxBytes: 1000, log: pino({ level: "silent" }), editIntervalMs: 10 });
    const seqs = new Map<string, number>();
    const emit = (event: OutboundEventBody, runId: string) => {
      seqs.set(runId, (seqs.get(runId) ?? -1) + 1);
      return p.handle("C1", { runId, seq: seqs.get(runId)!, ts: new Date().toISOString(), event } as OutboundEvent);
    };
    await emit({ type: "run_started", trigger, model: "m" }, "r1");
    await emit({ type: "attachment", objectKey: "k1", filename: "chart.png", path: "x/chart.png", size: 3 }, "r1");
    await emit(ended("Here."), "r1");
    expect(ops).toEqual([expect.objectContaining({ op: "postWithFiles", text: expect.stringMatching(/^Here\./), file: "chart.png:3", at: expect.objectContaining({ replyTo: trigger.messageId }) })]);
    await emit({ type: "run_started", trigger, model: "m" }, "r2");
    await emit({ type: "attachment", objectKey: "k1", filename: "chart.png", path: "x/chart.png", size: 3 }, "r2");
    await emit(ended("word ".repeat(60).trim()), "r2");
    const long = ops.slice(1);
    expect(long.length).toBeGreaterThan(2);
    expect(long.map((o) => o.op)).toEqual([...long.slice(1).map(() => "post"), "postWithFiles"]);
    expect(long.at(-1)).toMatchObject({ file: "chart.png:3", at: {} });
    ops.length = 0;
    await emit({ type: "run_started", trigger, model: "m" }, "r3");
    await emit(ended("No files."), "r3");
    expect(ops.map((o) => o.op)).toEqual(["post"]);
  });

  it("a progress message someone deleted is posted anew at the next redraw, and the answer is not lost to it; a silent run's is not missed", async () => {
    const deleted = new Set<string>();
    const { emit, ops } = setup({ interval: 5, deleted });
    await emit({ type: "run_started", trigger, model: "m" });
    deleted.add("1");
    await emit({ type: "tool_execution_start", toolCallId: "c1", toolName: "bash", label: "Listing", args: {} });
    await sleep(30);
    expect(ops.map((o) => `${o.op} ${o.id}`)).toEqual(["post 1", "post 2"]);
    deleted.add("2");
    await emit({ type: "tool_execution_end", toolCallId: "c1", toolName: "bash", label: "Listing", isError: false, resultText: "ok", durationMs: 5 });
    expect(await emit({ type: "run_ended", stopReason: "stop", finalText: "Three files.", usage: USAGE, durationMs: 10 })).toBe(true);
    expect(ops.at(-1)).toMatchObject({ op: "post", id: "3", text: expect.stringContaining("Three files."), at: { replyTo: "m1" } });
    await emit({ type: "run_started", trigger, model: "m" }, "r2");
    deleted.add("4");
    expect(await emit({ type: "run_ended", stopReason: "stop", finalText: "", silent: true, usage: USAGE, durationMs: 10 }, "r2")).toBe(true);
  });

  it("a message queued again (a runner that took the channel over) has its notice edited to the new position, not a second notice", async () => {
    const { emit, ops } = setup();
    await emit({ type: "run_queued", trigger, position: 3 }, "first-owner");
    await emit({ type: "run_queued", trigger, position: 1 }, "second-owner");
    expect(ops.map((o) => `${o.op} ${o.id} ${o.text}`)).toEqual(["post 1 ⏳ Queued: I'll get to this after the current request (position 3).", "edit 1 ⏳ Queued: I'll get to this after the current request (position 1)."]);
  });

  it("without edits (WhatsApp) there is no progress message, only the answer", async () => {
    const { ops, emit } = setup({ edits: false });
    await emit({ type: "run_started", trigger, model: "m" });
    await emit(toolStart(1));
    await emit(toolEnd(1));
    await sleep(80);
    await emit(ended("Hi."));
    expect(ops).toEqual([expect.objectContaining({ op: "post", text: expect.stringMatching(/^Hi\./), at: { replyTo: "m1", replyToUser: "u1" } })]);
  });
});

describe("posts from other channels (the send tool)", () => {
  const post = (extra: Partial<Extract<OutboundEventBody, { type: "post" }>> = {}): OutboundEventBody => ({
    type: "post",
    text: "Release **3.2** is out",
    from: "tg/-100200",
    fromRunId: "run-a",
    requestedBy: { adapter: "tg", id: "1001", username: "ana" },
    access: "check",
    ...extra,
  });

  function postSetup(admit: (ev: Extract<OutboundEventBody, { type: "post" }>) => string | undefined, objects: Record<string, Uint8Array> = {}) {
    const { surface, ops } = recordingSurface();
    const receipts: Array<{ type: string; runId: string; detail?: string }> = [];
    const records: Array<{ channel: string; id: string; ids: string[] }> = [];
    const deliveries = new DeliveryReceipts("tg", async (_c, r) => void receipts.push({ type: r.type, runId: r.runId, ...(r.detail && { detail: r.detail }) }), pino({ level: "silent" }));
    const p = new Presenter(new MessageLayout(surface), {
      files: files(objects),
      maxBytes: 1000,
      log: pino({ level: "silent" }),
      editIntervalMs: 10,
      deliveries,
      posts: {
        admit: async (_channel, ev) => admit(ev),
        record: async (channel, e, ev, ids) => void records.push({ channel, id: postRecord(channel, e, ev, ids).id, ids }),
      },
    });
    const send = (event: OutboundEventBody, runId = "post-1") => p.handle("C2", { runId, seq: 0, ts: new Date().toISOString(), event } as OutboundEvent);
    return { ops, receipts, records, send, surface };
  }

  it("an admitted post is drawn as mom's message with who asked, its file after it, delivered once and recorded", async () => {
    const t = postSetup(() => undefined, { k9: new Uint8Array([1, 2, 3, 4]) });
    await t.send(post({ file: { objectKey: "k9", filename: "notes.txt", path: "channels/tg/-100200/notes.txt", size: 4 } }));
    expect(t.ops).toEqual([
      expect.objectContaining({ op: "post", channel: "C2", text: "Release **3.2** is out\n\n_sent by mom for @ana from tg/-100200_", at: {} }),
      expect.objectContaining({ op: "upload", channel: "C2", file: "notes.txt:4" }),
    ]);
    expect(t.receipts).toEqual([{ type: "delivery.succeeded", runId: "post-1", detail: "accepted by the platform as 1" }]);
    expect(t.records).toEqual([{ channel: "C2", id: "post:post-1", ids: ["1"] }]);
    // A redelivery of the same post is not drawn twice.
    await t.send(post());
    expect(t.ops).toHaveLength(2);
  });

  it("a refused post is not drawn: the refusal is the delivery receipt, and nothing is recorded in the channel", async () => {
    const t = postSetup(() => "@ana cannot see this telegram chat");
    await t.send(post());
    expect(t.ops).toEqual([]);
    expect(t.receipts).toEqual([{ type: "delivery.failed", runId: "post-1", detail: "not posted: @ana cannot see this telegram chat" }]);
    expect(t.records).toEqual([]);
  });

  it("an ingress that takes no posts refuses every one", async () => {
    const { surface, ops } = recordingSurface();
    const receipts: string[] = [];
    const deliveries = new DeliveryReceipts("tg", async (_c, r) => void receipts.push(`${r.type}: ${r.detail}`), pino({ level: "silent" }));
    const p = new Presenter(new MessageLayout(surface), { files: files(), maxBytes: 1000, log: pino({ level: "silent" }), editIntervalMs: 10, deliveries });
    await p.handle("C2", { runId: "p", seq: 0, ts: new Date().toISOString(), event: post({ access: "operator" }) } as OutboundEvent);
    expect(ops).toEqual([]);
    expect(receipts).toEqual(["delivery.failed: not posted: this ingress does not post messages from other channels"]);
  });

  it("a post the platform refuses is recorded as not delivered", async () => {
    const t = postSetup(() => undefined);
    t.surface.post = async () => {
      throw new Error("Forbidden: bot was kicked from the group chat");
    };
    expect(await t.send(post())).toBe(false);
    expect(t.receipts).toEqual([{ type: "delivery.failed", runId: "post-1", detail: "Forbidden: bot was kicked from the group chat" }]);
    expect(t.records).toEqual([]);
  });
});
