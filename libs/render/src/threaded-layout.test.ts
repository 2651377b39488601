import { describe, expect, it } from "@jest/globals";
import type { OutboundEvent, OutboundEventBody } from "@mom/contracts";
import { pino } from "pino";
import { plainDialect } from "./dialect.js";
import type { Placement } from "./message-layout.js";
import type { DrawnRun, DrawnRuns } from "./drawn-runs.js";
import { Presenter } from "./presenter.js";
import type { Step } from "./run-view.js";
import type { SharedFile } from "./shared-files.js";
import { ThreadedLayout, type ThreadMessage, type ThreadSurface } from "./threaded-layout.js";

interface Call {
  op: string;
  id?: string;
  m?: ThreadMessage<string>;
  at?: Placement;
  name?: string;
}

const gone = Object.assign(new Error("gone"), { gone: true });

/** A platform that records its calls; `fail` rejects the calls it matches. */
function surface(o: Partial<ThreadSurface<string, string>> & { fail?: (op: string, id?: string, m?: ThreadMessage<string>) => Error | undefined } = {}) {
  const calls: Call[] = [];
  let n = 0;
  const check = (op: string, id?: string, m?: ThreadMessage<string>) => {
    const err = o.fail?.(op, id, m);
    if (err) throw err;
  };
  const s: ThreadSurface<string, string> = {
    dialect: plainDialect(200),
    name: "Acme",
    async post(_channel, m, at) {
      check("post", undefined, m);
      const id = `m${++n}`;
      calls.push({ op: "post", id, m, at });
      return id;
    },
    async edit(_channel, id, m, at) {
      check("edit", id, m);
      calls.push({ op: "edit", id, m, at });
    },
    async delete(_channel, id, at) {
      calls.push({ op: "delete", id, at });
    },
    async thread(_channel, id, _at, name) {
      calls.push({ op: "thread", id, name });
      return `thread-${id}`;
    },
    detail: (step: Step) => (step.kind === "tool" ? `done ${step.label}` : undefined),
    async prompt(_channel, text, _ev, at) {
      calls.push({ op: "prompt", m: { text }, at });
      return `p${++n}`;
    },
    async closePrompt(_channel, id, text) {
      calls.push({ op: "closePrompt", id, m: { text } });
    },
    isGone: (err) => (err as { gone?: boolean }).gone === true,
    ...o,
  };
  return { s, calls };
}

const usage = { input: 10, output: 2, cacheRead: 0, cacheWrite: 0, totalTokens: 12, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
const trigger = { messageId: "t1", senderId: "u1", username: "ana", text: "list the files\nplease" };

function draw(s: ThreadSurface<string, string>, objects: Record<string, Uint8Array> = {}) {
  const log = pino({ level: "silent" });
  const presenter = new Presenter(new ThreadedLayout(s, log), { files: { getFile: async (key: string) => objects[key] }, maxBytes: 1024, editIntervalMs: 5, log });
  let seq = 0;
  const emit = (event: OutboundEventBody, runId = "r1") => presenter.handle("C1", { runId, seq: seq++, ts: new Date().toISOString(), event } as OutboundEvent);
  return { presenter, emit };
}

const tool = (i: number): OutboundEventBody[] => [
  { type: "tool_execution_start", toolCallId: `c${i}`, toolName: "bash", label: `Step ${i}`, args: {} },
  { type: "tool_execution_end", toolCallId: `c${i}`, toolName: "bash", label: `Step ${i}`, isError: false, resultText: "ok", durationMs: 5 },
];
const ended = (finalText: string, extra: object = {}): OutboundEventBody => ({ type: "run_ended", stopReason: "stop", finalText, usage, durationMs: 1000, ...extra }) as OutboundEventBody;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("ThreadedLayout", () => {
  it("details at the end: the main message lists the steps, the details go into a thread started on it, the usage line last", async () => {
    const { s, calls } = surface();
    const { emit } = draw(s);
    await emit({ type: "run_started", trigger, model: "m" });
    expect(calls[0]).toEqual({ op: "post", id: "m1", m: { text: "⏳ Working…" }, at: { replyTo: "t1" } });
    for (const e of [...tool(1), ...tool(2)]) await emit(e);
    await sleep(30);
    expect(calls.filter((c) => c.op === "edit").at(-1)!.m!.text).toBe("⏳ Working…\n✓ Step 1 (5 ms)\n✓ Step 2 (5 ms)");
    await emit(ended("Two files."));
    expect(calls.slice(-3)).toEqual([
      { op: "edit", id: "m1", m: { text: "Two files.", ping: true }, at: { replyTo: "t1" } },
      { op: "thread", id: "m1", name: "Details: list the files" },
      { op: "post", id: "m2", m: { text: "done Step 1\n\ndone Step 2\n\n📊 10 in · 2 out · $? · 1.0s" }, at: { thread: "thread-m1" } },
    ]);
  });

  it("live details: the main message shows what runs now, details follow as the run goes, a prompt goes into their thread; a silent run deletes it all", async () => {
    const { s, calls } = surface({ liveDetails: true, thread: async (_c, id) => id });
    const { emit } = draw(s);
    await emit({ type: "run_started", trigger, model: "m" });
    expect(calls[0]!.m!.text).toBe("⏳ working…");
    for (const e of tool(1)) await emit(e);
    await sleep(30);
    expect(calls.at(-1)).toEqual({ op: "post", id: "m2", m: { text: "done Step 1" }, at: { thread: "m1" } });
    await emit({ type: "approval_requested", approvalId: "a1", toolId: "bash", risk: "destructive", argsSummary: "rm x", requestedBy: { id: "u1", username: "ana" }, approvers: ["u2"], expiresAt: "2030-01-01T10:00:00.000Z" } as OutboundEventBody);
    expect(calls.at(-1)).toMatchObject({ op: "prompt", at: { thread: "m1" } });
    await emit(ended("", { silent: true }));
    expect(calls.filter((c) => c.op === "delete").map((c) => c.id)).toEqual(["m1", "m2"]);
  });

  it("a run another process began goes on in the details thread that process started (the resume form carries it)", async () => {
    const { s, calls } = surface({ liveDetails: true });
    const log = pino({ level: "silent" });
    const records = new Map<string, DrawnRun>();
    const drawn: DrawnRuns = { read: async (id) => records.get(id), write: async (id, r) => void records.set(id, JSON.parse(JSON.stringify(r))) };
    const process = () => new Presenter(new ThreadedLayout(s, log), { files: { getFile: async () => undefined }, maxBytes: 1024, editIntervalMs: 5, log, drawn });
    const at = (seq: number, event: OutboundEventBody) => ({ runId: "r1", seq, ts: new Date().toISOString(), event }) as OutboundEvent;
    const first = process();
    await first.handle("C1", at(0, { type: "run_started", trigger, model: "m" }));
    for (const [i, e] of tool(1).entries()) await first.handle("C1", at(1 + i, e));
    await sleep(30);
    await first.close();
    const second = process();
    for (const [i, e] of [...tool(2), ended("Done.")].entries()) await second.handle("C1", at(3 + i, e));
    await second.close();
    expect(calls.filter((c) => c.op === "thread").map((c) => c.id)).toEqual(["m1"]);
    expect(calls.filter((c) => c.op === "post").map((c) => c.at)).toEqual([{ replyTo: "t1" }, { thread: "thread-m1" }, { thread: "thread-m1" }]);
  });

  it("a queued notice becomes the main message; one that is gone is deleted and the progress posted anew", async () => {
    const { s, calls } = surface({ fail: (op, id) => (op === "edit" && id === "m2" ? gone : undefined) });
    const { emit } = draw(s);
    await emit({ type: "run_queued", trigger, position: 1 }, "q1");
    await emit({ type: "run_started", trigger, model: "m" }, "q1");
    expect(calls.map((c) => `${c.op} ${c.id}`)).toEqual(["post m1", "edit m1"]);
    const second = { ...trigger, messageId: "t2" };
    await emit({ type: "run_queued", trigger: second, position: 1 }, "q2");
    await emit({ type: "run_started", trigger: second, model: "m" }, "q2");
    expect(calls.slice(2).map((c) => `${c.op} ${c.id}`)).toEqual(["post m2", "delete m2", "post m3"]);
    expect(calls.at(-1)).toMatchObject({ m: { text: "⏳ Working…" }, at: { replyTo: "t2" } });
  });

  it("live details: a main message deleted mid-run is posted anew at the next redraw, and a deleted details message anew with what it held and more", async () => {
    const deleted = new Set<string>();
    const { s, calls } = surface({ liveDetails: true, thread: async (_c, id) => id, fail: (op, id) => (op === "edit" && id && deleted.has(id) ? gone : undefined) });
    const { emit } = draw(s);
    await emit({ type: "run_started", trigger, model: "m" });
    for (const e of tool(1)) await emit(e);
    await sleep(30);
    expect(calls.map((c) => `${c.op} ${c.id}`)).toEqual(["post m1", "post m2"]); // m2: "done Step 1" under m1
    deleted.add("m1").add("m2");
    const [start2, end2] = tool(2);
    await emit(start2!);
    await sleep(30);
    expect(calls.slice(2)).toEqual([{ op: "post", id: "m3", m: { text: expect.stringContaining("Step 2") }, at: { replyTo: "t1" } }]);
    await emit(end2!);
    await sleep(30);
    expect(calls.slice(3)).toEqual([
      { op: "edit", id: "m3", m: { text: "⏳ working…" }, at: { replyTo: "t1" } },
      { op: "post", id: "m4", m: { text: "done Step 1\n\ndone Step 2" }, at: { thread: "m1" } },
    ]);
    await expect(emit(ended("Done."))).resolves.toBe(true);
    expect(calls.at(-2)).toEqual({ op: "edit", id: "m3", m: { text: "Done.", ping: true }, at: { replyTo: "t1" } });
    expect(calls.at(-1)).toMatchObject({ op: "edit", id: "m4", m: { text: expect.stringContaining("📊") } });
  });

  it("a deleted main message: the answer is posted anew, answering the trigger, and the details hang under it", async () => {
    const { s, calls } = surface({ fail: (op, id) => (op === "edit" && id === "m1" ? gone : undefined) });
    const { emit } = draw(s);
    await emit({ type: "run_started", trigger, model: "m" });
    for (const e of tool(1)) await emit(e);
    await emit(ended("Still here."));
    expect(calls.slice(1)).toEqual([
      { op: "post", id: "m2", m: { text: "Still here.", ping: true }, at: { replyTo: "t1" } },
      { op: "thread", id: "m2", name: "Details: list the files" },
      expect.objectContaining({ op: "post", at: { thread: "thread-m2" } }),
    ]);
  });

  it("files go with the answer, 10 a message; refused ones are left out and said so", async () => {
    const bytes = new Uint8Array([1]);
    const objects = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`k${i}`, bytes]));
    const { s, calls } = surface({ detailLimits: { count: 10 } });
    const { emit } = draw(s, objects);
    await emit({ type: "run_started", trigger, model: "m" });
    for (let i = 0; i < 12; i++) await emit({ type: "attachment", objectKey: `k${i}`, filename: `f${i}.txt`, path: `x/f${i}.txt`, size: 1 });
    await emit(ended("Here."));
    const answer = calls.slice(1);
    expect(answer[0]).toMatchObject({ op: "edit", id: "m1", m: { text: "Here.", footer: { usage: "10 in · 2 out · $? · 1.0s", activity: [] } } });
    expect(answer[0]!.m!.files).toHaveLength(10);
    expect(answer[1]).toMatchObject({ op: "post", m: { text: "" }, at: {} });
    expect(answer[1]!.m!.files!.map((f: SharedFile) => f.filename)).toEqual(["f10.txt", "f11.txt"]);

    const refusing = surface({ detailLimits: { count: 10 }, fail: (_op, _id, m) => (m?.files?.length ? new Error("too large") : undefined) });
    const r = draw(refusing.s, objects);
    await r.emit({ type: "run_started", trigger, model: "m" });
    await r.emit({ type: "attachment", objectKey: "k0", filename: "chart.png", path: "x/chart.png", size: 1 });
    await r.emit(ended("x".repeat(190)));
    expect(refusing.calls.slice(1).map((c) => [c.op, c.m!.text, c.m!.files?.length ?? 0])).toEqual([
      ["edit", "x".repeat(190), 0],
      ["post", "📎 chart.png: Acme refused the upload (too large).", 0],
    ]);
  });

  it("with upload, files are sent as they come where the run answers; a busy refusal names its sender where replies do not show", async () => {
    const uploads: Array<[string, Placement]> = [];
    const { s, calls } = surface({ replyMentions: true, upload: async (_c, f, at) => void uploads.push([f.filename, at]) });
    const { emit } = draw(s, { k: new Uint8Array([1]) });
    await emit({ type: "run_started", trigger, model: "m", replyTo: "T9" });
    await emit({ type: "attachment", objectKey: "k", filename: "a.txt", path: "x/a.txt", size: 1 });
    await emit({ type: "attachment", objectKey: "gone", filename: "b.txt", path: "x/b.txt", size: 1 });
    expect(uploads).toEqual([["a.txt", { thread: "T9" }]]);
    expect(calls.at(-1)).toMatchObject({ op: "post", at: { thread: "T9" }, m: { text: "📎 b.txt: not available any more (expired from the file store)." } });
    await emit({ type: "run_rejected", trigger: { ...trigger, messageId: "t3" }, reason: "busy", text: "Still busy.", replyTo: "T9" }, "x");
    expect(calls.at(-1)).toEqual({ op: "post", id: expect.any(String), m: { text: "@u1 Still busy." }, at: { thread: "T9", replyTo: "t3" } });
  });
});
