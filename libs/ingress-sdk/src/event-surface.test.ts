import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { Bus, readRange } from "@mom/bus";
import { type ChannelMessage, type OutboundEvent, REANNOUNCED_SEQ, type Receipt } from "@mom/contracts";
import { busDrawnRuns, DeliveryReceipts, plainDialect } from "@mom/render";
import { spawnNatsServer, type TestNats } from "@mom/testing";
import { pino } from "pino";
import { Type } from "typebox";
import { EventDrawing } from "./event-drawing.js";
import type { EventSurface, IngressDefinition, PlatformConnection, PlatformContext } from "./platform.js";
import { type RunningIngress, startIngress } from "./start-ingress.js";
import { eventually, ScriptedMom } from "./testing/scripted-mom.js";

const ADAPTER = "term";

/** A platform whose surface writes every event down as it comes; `failOn` makes drawing one event fail. */
function eventPlatform(o: { channel?: string; inboundRetryMs?: number; failOn?: (e: OutboundEvent) => boolean } = {}) {
  const drawn: { channel: string; event: OutboundEvent }[] = [];
  let ctx!: PlatformContext<unknown>;
  const surface: EventSurface = {
    dialect: plainDialect(),
    async drawEvent(channel, event) {
      if (o.failOn?.(event)) throw new Error("the screen is gone");
      drawn.push({ channel, event });
      return event.event.type === "run_ended" ? [`line-${event.seq}`] : undefined;
    },
  };
  const definition: IngressDefinition = {
    platform: "term",
    settings: Type.Object({}),
    connect(c): PlatformConnection {
      ctx = c;
      return { surface, start: async () => {}, stop: async () => {}, ...(o.channel !== undefined && { channel: o.channel }), ...(o.inboundRetryMs !== undefined && { inboundRetryMs: o.inboundRetryMs }) };
    },
  };
  return { definition, drawn, ctx: () => ctx };
}

const person = (id: string) => ({ id, username: id, isBot: false });
const message = (channelId: string, id: string, text: string): ChannelMessage => ({ id, channelId, timestamp: new Date().toISOString(), sender: person("u-ana"), text, attachments: [], isMention: true });

describe("the shell with an EventSurface, a connection of one channel, and inboundRetryMs", () => {
  let nats: TestNats;
  let mom: ScriptedMom;
  const running: RunningIngress[] = [];
  const start = (definition: IngressDefinition) =>
    startIngress(definition, {
      adapter: { adapter: ADAPTER, access: { admins: ["u-admin"] }, maxAttachmentBytes: 1 << 20, settings: {} },
      bus: { url: nats.url, name: `ingress-${ADAPTER}`, namespace: nats.namespace, reconnectTimeWaitMs: 200, logger: pino({ level: "silent" }) },
      logger: pino({ level: "silent" }),
    }).then((r) => (running.push(r), r));

  beforeAll(async () => {
    nats = await spawnNatsServer();
    mom = await ScriptedMom.connect({ natsUrl: nats.url, namespace: nats.namespace, adapter: ADAPTER });
  });
  afterAll(async () => {
    for (const r of running) await r.close().catch(() => {});
    await mom?.close();
    await nats?.stop();
  });

  async function receipts(channel: string): Promise<Receipt[]> {
    const raw = await readRange(mom.bus, mom.bus.subjects.stream("RECEIPTS"), mom.bus.subjects.channel("receipts", { adapter: ADAPTER, channelId: channel }), { seq: 1 });
    return raw.map((m) => JSON.parse(m.text) as Receipt);
  }

  it("gets every event as it comes, text deltas included, in order; decisions are judged by the prompt it was shown; each answer's delivery is recorded", async () => {
    const p = eventPlatform({ failOn: (e) => e.event.type === "run_ended" && e.event.finalText === "this one fails" });
    const ingress = await start(p.definition);
    const run = await mom.startRun("room", message("room", "m1", "hello"));
    const words = ["Streaming ", "word ", "by ", "word."];
    for (const delta of words) await run.emit({ type: "message_update", assistantMessageEvent: { type: "text_delta", contentIndex: 0, delta } });
    await run.emit({ type: "approval_requested", approvalId: "a1", toolId: "bash", risk: "destructive", argsSummary: "rm -rf scratch", requestedBy: { id: "u-ana", username: "ana" }, expiresAt: new Date(Date.now() + 60_000).toISOString(), approvers: ["u-admin"] });
    await eventually(() => p.drawn.some((d) => d.event.event.type === "approval_requested"), "the approval prompt drawn");
    // A stranger is told at once who may decide (and the click still goes to the runner, which refuses it).
    expect(await ingress.shell.decide({ approvalId: "a1", decision: "allow-once", user: { id: "u-stranger", username: "stranger" }, channel: "room" })).toEqual({ refusal: expect.stringContaining("u-admin") });
    expect(await ingress.shell.decide({ approvalId: "a1", decision: "allow-once", user: { id: "u-admin", username: "admin" }, channel: "room" })).toEqual({});
    await eventually(async () => (await mom.decisions("room")).length === 2, "both decisions on mom.ctl");
    await run.emit({ type: "approval_resolved", approvalId: "a1", outcome: "approved", decidedBy: "admin" });
    await run.end("Streaming word by word.");
    await eventually(() => p.drawn.some((d) => d.event.event.type === "run_ended"), "the run's end drawn");

    // Nothing coalesced or left out: every event of the run, in its order, on the platform's channel id.
    expect(p.drawn.map((d) => d.channel)).toEqual(p.drawn.map(() => "room"));
    expect(p.drawn.map((d) => d.event.seq)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(p.drawn.flatMap((d) => (d.event.event.type === "message_update" ? [d.event.event.assistantMessageEvent.delta] : []))).toEqual(words);
    // Once resolved, the shell no longer knows the prompt: a late click is sent for the runner to judge.
    await expect(ingress.shell.decide({ approvalId: "a1", decision: "deny", user: { id: "u-stranger", username: "stranger" }, channel: "room" })).resolves.toEqual({});
    await eventually(async () => (await receipts("room")).length === 1, "the delivery receipt");
    expect(await receipts("room")).toEqual([expect.objectContaining({ type: "delivery.succeeded", runId: run.runId, toolId: "chat.deliver", detail: "accepted by the platform as line-7", actor: `ingress-${ADAPTER}` })]);

    // A surface that fails: recorded as not delivered, and the channel goes on.
    const failing = await mom.startRun("room2", message("room2", "m2", "again"));
    await failing.end("this one fails");
    const next = await mom.startRun("room2", message("room2", "m3", "and again"));
    await next.end("this one is shown");
    await eventually(() => p.drawn.some((d) => d.event.event.type === "run_ended" && d.event.event.finalText === "this one is shown"), "the next run drawn after a failure");
    await eventually(async () => (await receipts("room2")).length === 2, "both receipts of room2");
    expect((await receipts("room2")).map((r) => [r.runId, r.type, r.detail])).toEqual([
      [failing.runId, "delivery.failed", "the screen is gone"],
      [next.runId, "delivery.succeeded", expect.any(String)],
    ]);
    // The files bucket is the surface's to read attachments from.
    const shared = await mom.shareFile("room", "note.txt", new TextEncoder().encode("from mom"));
    expect(shared.type === "attachment" && (await p.ctx().files.getFile(shared.objectKey))).toEqual(new TextEncoder().encode("from mom"));
    await ingress.close();
  }, 60_000);

  it("a connection of one channel draws that channel only, from a durable of its own: two processes of one adapter each get all of their conversation", async () => {
    const a = eventPlatform({ channel: "conv-a" });
    const b = eventPlatform({ channel: "conv/b" });
    const ia = await start(a.definition);
    const ib = await start(b.definition);
    const ra = await mom.startRun("conv-a", message("conv-a", "x1", "to a"));
    const rb = await mom.startRun("conv/b", message("conv/b", "x2", "to b"));
    for (let i = 0; i < 10; i++) {
      await ra.emit({ type: "message_update", assistantMessageEvent: { type: "text_delta", contentIndex: 0, delta: `a${i} ` } });
      await rb.emit({ type: "message_update", assistantMessageEvent: { type: "text_delta", contentIndex: 0, delta: `b${i} ` } });
    }
    await ra.end("done a");
    await rb.end("done b");
    await eventually(() => a.drawn.length === 12 && b.drawn.length === 12, "each conversation's 12 events at its own process");
    expect(a.drawn.every((d) => d.channel === "conv-a")).toBe(true);
    expect(b.drawn.every((d) => d.channel === "conv/b")).toBe(true);
    expect(a.drawn.map((d) => d.event.seq)).toEqual([...Array(12).keys()]);
    expect(b.drawn.map((d) => d.event.seq)).toEqual([...Array(12).keys()]);
    await ia.close();
    await ib.close();
  }, 60_000);

  it("a prompt shown before a restart of the ingress is read back from the bus: a stranger's click is refused saying who may decide; one that ended is left to the runner", async () => {
    const p = eventPlatform();
    const first = await start(p.definition);
    const run = await mom.startRun("again", message("again", "r1", "hello"));
    const ask = (approvalId: string) =>
      run.emit({ type: "approval_requested", approvalId, toolId: "bash", risk: "destructive", argsSummary: "rm -rf scratch", requestedBy: { id: "u-ana", username: "ana" }, expiresAt: new Date(Date.now() + 60_000).toISOString(), approvers: ["u-admin"] });
    await ask("b1");
    await ask("b2");
    await run.emit({ type: "approval_resolved", approvalId: "b2", outcome: "denied", decidedBy: "admin" });
    await eventually(() => p.drawn.some((d) => d.event.event.type === "approval_resolved"), "the prompts drawn");
    await first.close();

    const second = await start(eventPlatform().definition);
    const stranger = { id: "u-stranger", username: "stranger" };
    expect(await second.shell.decide({ approvalId: "b1", decision: "allow-once", user: stranger, channel: "again" })).toEqual({ refusal: expect.stringContaining("u-admin") });
    expect(await second.shell.decide({ approvalId: "b1", decision: "allow-once", user: { id: "u-admin", username: "admin" }, channel: "again" })).toEqual({});
    expect(await second.shell.decide({ approvalId: "b2", decision: "allow-once", user: stranger, channel: "again" })).toEqual({});
    // Every click is still sent: the runner records the stranger's as refused.
    await eventually(async () => (await mom.decisions("again")).length === 3, "the three decisions on mom.ctl");
    await second.close();
  }, 60_000);

  it("an answer an earlier process drew (and died before its ack) is not drawn again by the next one; its receipt is recorded again, the same one; nor is a busy refusal or a queued line", async () => {
    const log = pino({ level: "silent" });
    const receipts: Receipt[] = [];
    const processOf = async (name: string) => {
      const bus = await Bus.connect({ url: nats.url, name, namespace: nats.namespace, logger: log, drainTimeoutMs: 1000 });
      const p = eventPlatform();
      const deliveries = new DeliveryReceipts(ADAPTER, async (_c, r) => void receipts.push(r), log);
      const drawing = new EventDrawing((p.definition.connect({} as never) as PlatformConnection).surface as EventSurface, { log, deliveries, drawn: busDrawnRuns(bus, ADAPTER, log) });
      return { bus, drawn: p.drawn, drawing };
    };
    const ev = (seq: number, event: OutboundEvent["event"]) => ({ runId: "once", seq, ts: new Date().toISOString(), event }) as OutboundEvent;
    const end = ev(1, { type: "run_ended", stopReason: "stop", finalText: "shown once", usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } }, durationMs: 5 });
    const first = await processOf("first");
    await first.drawing.handle("screen", ev(0, { type: "run_started", trigger: { messageId: "m", senderId: "u-ana", username: "ana", text: "hi" }, model: "m" }));
    await first.drawing.handle("screen", end);
    const second = await processOf("second");
    expect(await second.drawing.handle("screen", end, { redelivered: true })).toBe(true);
    expect(first.drawn.map((d) => d.event.seq)).toEqual([0, 1]);
    expect(second.drawn).toEqual([]);
    // A runner that took the channel over announces the run's start and end again (its first owner
    // never recorded the run ended): past JetStream's duplicate window they land, and are not drawn.
    const third = await processOf("third");
    expect(await third.drawing.handle("screen", ev(REANNOUNCED_SEQ, { type: "run_started", trigger: { messageId: "m", senderId: "u-ana", username: "ana", text: "hi" }, model: "m" }))).toBe(true);
    expect(await third.drawing.handle("screen", { ...end, seq: REANNOUNCED_SEQ + 1 })).toBe(true);
    expect(third.drawn).toEqual([]);
    await third.bus.drain();
    expect(receipts.map((r) => [r.receiptId, r.detail])).toEqual([
      ["once:delivery", "accepted by the platform as line-1"],
      ["once:delivery", "accepted by the platform as line-1"],
      ["once:delivery", "accepted by the platform as line-1"],
    ]);
    // A busy refusal and a queued line, written by the first before it died: not again by the second.
    const trigger = { messageId: "m2", senderId: "u-ana", username: "ana", text: "and this" };
    const refused = { runId: "busy", seq: 0, ts: new Date().toISOString(), event: { type: "run_rejected", trigger, reason: "busy", text: "busy, try later" } } as OutboundEvent;
    const queued = { runId: "later", seq: 0, ts: new Date().toISOString(), event: { type: "run_queued", trigger, position: 1 } } as OutboundEvent;
    await first.drawing.handle("screen", refused);
    await first.drawing.handle("screen", queued);
    await second.drawing.handle("screen", refused, { redelivered: true });
    await second.drawing.handle("screen", queued, { redelivered: true });
    expect(second.drawn).toEqual([]);
    // The queued run starts later, its first events drawn by the second: drawn, not taken for answered.
    const later = { runId: "later", seq: 1, ts: new Date().toISOString(), event: { type: "tool_execution_start", toolCallId: "t", toolName: "bash", label: "Looking", args: {} } } as OutboundEvent;
    await second.drawing.handle("screen", later, { redelivered: true });
    expect(second.drawn.map((d) => d.event.runId)).toEqual(["later"]);
    await first.bus.drain();
    await second.bus.drain();
  }, 30_000);

  it("inboundRetryMs 0: a message received while NATS is away is refused at once; by default it is published once NATS is back (and the kit's reads wait for it through the 9 s outage, longer than a request's 5 s timeout)", async () => {
    const atOnce = await start(eventPlatform({ inboundRetryMs: 0 }).definition);
    const patient = await start(eventPlatform().definition);
    const back = nats.restart!(9_000);
    await new Promise((r) => setTimeout(r, 300));
    const began = Date.now();
    const kitRead = mom.decisions("wait");
    const waited = patient.shell.receive({ ...message("wait", "w1", "said during the outage"), files: [] });
    await expect(atOnce.shell.receive({ ...message("now", "n1", "said during the outage"), files: [] })).rejects.toThrow(/publish to .*failed/);
    expect(Date.now() - began).toBeLessThan(8_000);
    await back;
    expect(await waited).toBe(true);
    expect(await kitRead).toEqual([]);
    // The refused one was forgotten: sent again, it is published.
    expect(await atOnce.shell.receive({ ...message("now", "n1", "said again"), files: [] })).toBe(true);
    expect((await mom.messages("now")).map((m) => m.text)).toEqual(["said again"]);
    expect((await mom.messages("wait")).map((m) => m.text)).toEqual(["said during the outage"]);
    await atOnce.close();
    await patient.close();
  }, 60_000);
});
