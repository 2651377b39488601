import { describe, expect, it } from "@jest/globals";
import type { FileSource } from "@mom/ingress-sdk";
import type { OutboundEvent, Usage } from "@mom/ingress-sdk";
import { markdownToMrkdwn, Presenter, ThreadedLayout } from "@mom/ingress-sdk";
import { pino } from "pino";
import type { WebClient } from "@slack/web-api";
import { SlackSurface, slackDialect } from "./slack-renderer.js";

const USAGE: Usage = { input: 1200, output: 34, cacheRead: 0, cacheWrite: 0, totalTokens: 1234, cost: { input: 0.001, output: 0.0005, cacheRead: 0, cacheWrite: 0, total: 0.0015 } };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Call {
  op: "post" | "update" | "delete" | "upload" | "react";
  channel: string;
  ts?: string;
  text?: string;
  thread?: string;
  at: number;
  extra?: unknown;
}

const slackError = (error: string) => Object.assign(new Error(`An API error occurred: ${error}`), { code: "slack_webapi_platform_error", data: { ok: false, error } });

/** A fake of the Web API client's calls the layout makes; records every call; `slowMs` delays each like a slow (or rate-limited) Slack. */
function fakePoster(opts: { slowMs?: number; failPostsMatching?: RegExp } = {}) {
  const calls: Call[] = [];
  let n = 0;
  const delay = () => (opts.slowMs ? sleep(opts.slowMs) : Promise.resolve());
  type Args = { channel: string; ts?: string; text?: string; thread_ts?: string };
  const chat = {
    async postMessage({ channel, text = "", thread_ts: thread }: Args) {
      await delay();
      if (opts.failPostsMatching?.test(text)) throw new Error("channel_not_found");
      const ts = `1700000000.${String(++n).padStart(6, "0")}`;
      calls.push({ op: "post", channel, text, ts, at: Date.now(), ...(thread && { thread }) });
      return { ok: true, ts };
    },
    async update({ channel, ts, text }: Args) {
      await delay();
      calls.push({ op: "update", channel, ts, text, at: Date.now() });
      return { ok: true };
    },
    async delete({ channel, ts }: Args) {
      await delay();
      calls.push({ op: "delete", channel, ts, at: Date.now() });
      return { ok: true };
    },
  };
  // Reactions as Slack keeps them: adding one twice is already_reacted, removing one not there no_reaction.
  const reactions = new Set<string>();
  const react = (add: boolean) => async ({ channel, timestamp: ts, name }: { channel: string; timestamp: string; name: string }) => {
    const key = `${channel}:${ts}:${name}`;
    if (reactions.has(key) === add) throw slackError(add ? "already_reacted" : "no_reaction");
    if (add) reactions.add(key);
    else reactions.delete(key);
    calls.push({ op: "react", channel, ts, at: Date.now(), extra: { name, add } });
    return { ok: true };
  };
  const client = {
    chat,
    files: {
      async uploadV2({ channel_id: channel, thread_ts: thread, filename, title, file }: { channel_id: string; thread_ts?: string; filename: string; title: string; file: Buffer }) {
        calls.push({ op: "upload", channel, at: Date.now(), extra: { filename, title, size: file.length }, ...(thread && { thread }) });
        return { ok: true, files: [] };
      },
    },
    reactions: { add: react(true), remove: react(false) },
  };
  return { api: client as unknown as WebClient, chat, calls };
}

const files = (objects: Record<string, Uint8Array> = {}): FileSource =>
  ({
    getFile: async (name: string) => objects[name],
    fileInfo: async () => undefined,
  }) as unknown as FileSource;

function renderer(api: WebClient, o: { interval?: number; limit?: number; objects?: Record<string, Uint8Array> } = {}) {
  const log = pino({ level: "silent" });
  const surface = new SlackSurface(api, slackDialect(o.limit ?? 3900, (md) => markdownToMrkdwn(md, { userIdFor: (u) => (u === "alice" ? "U0ALICE" : undefined) })));
  const layout = new ThreadedLayout(surface, log);
  return new Presenter(layout, { files: files(o.objects), maxBytes: 1024 * 1024, log, editIntervalMs: o.interval ?? 100 });
}

let seq = 0;
const ev = (runId: string, event: OutboundEvent["event"]): OutboundEvent => ({ runId, seq: seq++, ts: new Date().toISOString(), event });
const trigger = (messageId = "1699999999.000100") => ({ messageId, senderId: "U0ALICE", username: "alice", text: "go" });
const started = (runId: string, replyTo?: string, messageId?: string) => ev(runId, { type: "run_started", trigger: trigger(messageId), model: "fake/m", ...(replyTo && { replyTo }) });
const ended = (runId: string, extra: Partial<Extract<OutboundEvent["event"], { type: "run_ended" }>> = {}) =>
  ev(runId, { type: "run_ended", stopReason: "stop", finalText: "Done, @alice.", usage: USAGE, durationMs: 2100, ...extra });
const toolStart = (runId: string, i: number) => ev(runId, { type: "tool_execution_start", toolCallId: `t${i}`, toolName: "bash", label: `Step ${i}`, args: { label: `Step ${i}`, command: `echo ${i}` } });
const toolEnd = (runId: string, i: number) => ev(runId, { type: "tool_execution_end", toolCallId: `t${i}`, toolName: "bash", label: `Step ${i}`, isError: false, resultText: `out ${i}`, durationMs: 5 });

describe("SlackRenderer", () => {
  it("coalesces: a burst of 200 tool calls makes a handful of edits, every detail lands in the thread", async () => {
    const { api, calls } = fakePoster();
    const r = renderer(api, { interval: 100 });
    await r.handle("C1", started("r1"));
    for (let i = 0; i < 200; i++) {
      void r.handle("C1", toolStart("r1", i));
      void r.handle("C1", toolEnd("r1", i));
      if (i % 50 === 0) await sleep(30);
    }
    await sleep(350);
    await r.handle("C1", ended("r1"));
    await r.close();
    const main = calls[0]!;
    expect(main).toMatchObject({ op: "post", channel: "C1", text: ":hourglass_flowing_sand: working…" });
    const mainEdits = calls.filter((c) => c.op === "update" && c.ts === main.ts);
    expect(mainEdits.length).toBeLessThanOrEqual(6);
    expect(mainEdits.at(-1)!.text).toBe("Done, <@U0ALICE>.");
    const threadTexts = new Map<string, string>();
    for (const c of calls) {
      if (c.op === "post" && c.thread === main.ts) threadTexts.set(c.ts!, c.text!);
      if (c.op === "update" && threadTexts.has(c.ts!)) threadTexts.set(c.ts!, c.text!);
    }
    const details = [...threadTexts.values()];
    for (const d of details) expect(d.length).toBeLessThanOrEqual(3900);
    const all = details.join("\n");
    for (let i = 0; i < 200; i++) expect(all).toContain(`*Step ${i}*`);
    expect(all).toMatch(/:bar_chart: 1,200 in · 34 out · \$0\.0015 · 2\.1s$/);
    expect(calls.length).toBeLessThan(40);
  });

  it("keeps Slack calls of a channel in event order even when Slack is slow", async () => {
    const { api, calls } = fakePoster({ slowMs: 30 });
    const r = renderer(api, { interval: 10 });
    const done = [r.handle("C1", started("r2")), r.handle("C1", toolStart("r2", 1)), r.handle("C1", toolEnd("r2", 1)), r.handle("C1", ended("r2", { finalText: "final" }))];
    await Promise.all(done);
    await r.close();
    const ops = calls.map((c) => `${c.op}:${c.text}`);
    expect(ops[0]).toBe("post::hourglass_flowing_sand: working…");
    expect(ops[1]).toBe("update:final");
    expect(ops[2]).toMatch(/^post::white_check_mark: \*Step 1\*/);
    for (let i = 1; i < calls.length; i++) expect(calls[i]!.at).toBeGreaterThanOrEqual(calls[i - 1]!.at);
  });

  it("answers in the thread of the trigger; long answers are split without breaking code; errors are stated", async () => {
    const { api, calls } = fakePoster();
    const r = renderer(api, { limit: 500 });
    const code = Array.from({ length: 60 }, (_, i) => `line ${i}`).join("\n");
    await r.handle("C1", started("r3", "1699999000.000001"));
    await r.handle("C1", ended("r3", { stopReason: "error", errorMessage: "500 upstream <failed>", finalText: `Partial:\n\n\`\`\`\n${code}\n\`\`\`` }));
    await r.close();
    expect(calls[0]).toMatchObject({ op: "post", thread: "1699999000.000001" });
    const answer = [calls.find((c) => c.op === "update")!, ...calls.filter((c) => c.op === "post" && c.thread === "1699999000.000001" && !c.text!.includes(":bar_chart:")).slice(1)];
    expect(answer.length).toBeGreaterThanOrEqual(2);
    for (const a of answer) {
      expect(a.text!.length).toBeLessThanOrEqual(500);
      expect((a.text!.match(/^```/gm) ?? []).length % 2).toBe(0);
    }
    expect(answer.at(-1)!.text).toContain(":x: *Error:* 500 upstream &lt;failed&gt;");
  });

  it("what the receipts say the run did is shown under the answer (all but successful reads)", async () => {
    const { api, calls } = fakePoster();
    const r = renderer(api);
    await r.handle("C1", started("r7"));
    await r.handle("C1", ended("r7", {
      finalText: "I deleted the branch.",
      toolActivity: [
        { toolCallId: "a", toolId: "read", risk: "read", status: "succeeded", label: "Look" },
        { toolCallId: "b", toolId: "github.branch.delete", risk: "destructive", status: "denied", label: "Delete the branch", detail: "denied by policy" },
        { toolCallId: "c", toolId: "bash", risk: "destructive", status: "failed", label: "Push", detail: "exit 1\nmore" },
      ],
    }));
    await r.close();
    const text = calls.find((c) => c.op === "update")!.text!;
    expect(text).toBe(
      "I deleted the branch.\n\n:no_entry_sign: `github.branch.delete` — Delete the branch: denied (denied by policy)\n:x: `bash` — Push: failed (exit 1)",
    );
  });

  it("a silent run leaves nothing: progress and thread details are deleted", async () => {
    const { api, calls } = fakePoster();
    const r = renderer(api, { interval: 10 });
    await r.handle("C1", started("r4"));
    await r.handle("C1", toolStart("r4", 1));
    await r.handle("C1", toolEnd("r4", 1));
    await sleep(60);
    await r.handle("C1", ended("r4", { silent: true, finalText: "" }));
    await r.close();
    const posted = calls.filter((c) => c.op === "post").map((c) => c.ts);
    const deleted = calls.filter((c) => c.op === "delete").map((c) => c.ts);
    expect(posted.length).toBe(2); // progress + one details message
    expect(deleted.sort()).toEqual(posted.sort());
  });

  it("a silent run whose progress message someone deleted still deletes its details", async () => {
    const { api, chat, calls } = fakePoster();
    const del = chat.delete.bind(chat);
    chat.delete = async (args) => {
      if (args.ts === calls[0]?.ts) throw slackError("message_not_found");
      return del(args);
    };
    const r = renderer(api, { interval: 10 });
    await r.handle("C1", started("r10"));
    await r.handle("C1", toolStart("r10", 1));
    await r.handle("C1", toolEnd("r10", 1));
    await sleep(60);
    await r.handle("C1", ended("r10", { silent: true, finalText: "" }));
    await r.close();
    const details = calls.filter((c) => c.op === "post" && c.thread === calls[0]!.ts).map((c) => c.ts);
    expect(details).toHaveLength(1);
    expect(calls.filter((c) => c.op === "delete").map((c) => c.ts)).toEqual(details);
  });

  it("queued runs get a reaction that goes away when they start; rejected ones get a reply", async () => {
    const { api, calls } = fakePoster();
    const r = renderer(api);
    await r.handle("C1", ev("q", { type: "run_queued", trigger: trigger("1699999999.000200"), position: 1 }));
    await r.handle("C1", ev("x", { type: "run_rejected", trigger: trigger("1699999999.000300"), reason: "busy", text: "Still **busy**.", replyTo: "1699999999.000300" }));
    await r.handle("C1", started("q", undefined, "1699999999.000200"));
    await r.close();
    expect(calls[0]).toMatchObject({ op: "react", ts: "1699999999.000200", extra: { name: "hourglass_flowing_sand", add: true } });
    expect(calls[1]!.op).toBe("post");
    expect(calls[1]!.text).toMatch(/^<@U0ALICE> Still \u200b?\*busy\*\u200b?\.$/);
    expect(calls[1]!.thread).toBe("1699999999.000300");
    expect(calls[2]).toMatchObject({ op: "react", ts: "1699999999.000200", extra: { name: "hourglass_flowing_sand", add: false } });
    expect(calls[3]).toMatchObject({ op: "post", text: ":hourglass_flowing_sand: working…" });
  });

  it("a queued trigger drawn again after a restart (its reaction already there) still loses the reaction when its run starts", async () => {
    const { api, calls } = fakePoster();
    const before = renderer(api);
    await before.handle("C1", ev("q2", { type: "run_queued", trigger: trigger("1699999999.000400"), position: 1 }));
    // The ingress stopped before acking the event: the next one draws it again, then the run's start.
    const after = renderer(api);
    await after.handle("C1", ev("q2", { type: "run_queued", trigger: trigger("1699999999.000400"), position: 1 }));
    await after.handle("C1", started("q2", undefined, "1699999999.000400"));
    await after.close();
    const reacts = calls.filter((c) => c.op === "react").map((c) => c.extra);
    expect(reacts).toEqual([{ name: "hourglass_flowing_sand", add: true }, { name: "hourglass_flowing_sand", add: false }]);
  });

  it("files are uploaded with their title; an expired one is reported instead", async () => {
    const { api, calls } = fakePoster();
    const r = renderer(api, { objects: { "s/C1/u/report.csv": new Uint8Array([1, 2, 3]) } });
    await r.handle("C1", started("r5", "1699999000.000009"));
    await r.handle("C1", ev("r5", { type: "attachment", objectKey: "s/C1/u/report.csv", filename: "report.csv", path: "x/report.csv", title: "Report", size: 3 }));
    await r.handle("C1", ev("r5", { type: "attachment", objectKey: "s/C1/u/gone.csv", filename: "gone.csv", path: "x/gone.csv", size: 3 }));
    await r.handle("C1", ended("r5"));
    await r.close();
    expect(calls.find((c) => c.op === "upload")).toMatchObject({ channel: "C1", thread: "1699999000.000009", extra: { filename: "report.csv", title: "Report", size: 3 } });
    expect(calls.find((c) => c.op === "post" && c.text!.includes("gone.csv"))!.text).toContain("not available any more");
  });

  it("a run it did not see start (restart mid-run) still gets its answer; a failed post does not stop later ones", async () => {
    const { api, calls } = fakePoster({ failPostsMatching: /working/ });
    const r = renderer(api);
    await r.handle("C1", toolStart("unseen", 1));
    await r.handle("C1", ended("unseen", { finalText: "late answer", replyTo: "1699999000.000777" }));
    await r.handle("C2", started("r6"));
    await r.handle("C2", ended("r6", { finalText: "posted anyway" }));
    await r.close();
    expect(calls.find((c) => c.text === "late answer")).toMatchObject({ op: "post", channel: "C1", thread: "1699999000.000777" });
    expect(calls.find((c) => c.text === "posted anyway")).toMatchObject({ op: "post", channel: "C2" });
  });

  it("posts the answer anew when someone deleted the main message", async () => {
    const { api, chat, calls } = fakePoster();
    const update = chat.update.bind(chat);
    chat.update = async (args) => {
      if (args.ts === calls[0]?.ts) throw slackError("message_not_found");
      return update(args);
    };
    const r = renderer(api);
    await r.handle("C1", started("r9", "1699999000.000010"));
    await r.handle("C1", ended("r9", { finalText: "still here" }));
    await r.close();
    expect(calls[1]).toMatchObject({ op: "post", channel: "C1", text: "still here", thread: "1699999000.000010" });
  });
});
