import { Bus, fileObjectName, readRange, retryTransient } from "@mom/bus";
import { type ChannelMessage, type ControlMessage, type OutboundEventBody, type Receipt, type Usage } from "@mom/contracts";
import { randomUUID } from "node:crypto";
import { pino } from "pino";

const USAGE: Usage = { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 15, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };

/** Polls `check` until it returns a value (not undefined/false), or fails saying what was awaited. */
export async function eventually<T>(check: () => Promise<T | undefined | false> | T | undefined | false, what: string, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const got = await check();
    if (got !== undefined && got !== false) return got;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** One run as the suite plays it: events go out in order under one run id. */
export class ScriptedRun {
  private seq = 0;
  readonly runId = randomUUID();

  constructor(
    private readonly mom: ScriptedMom,
    readonly channel: string,
  ) {}

  emit(event: OutboundEventBody): Promise<void> {
    return this.mom.publishOut(this.channel, this.runId, this.seq++, event);
  }

  end(finalText: string, extra: Partial<Extract<OutboundEventBody, { type: "run_ended" }>> = {}): Promise<void> {
    return this.emit({ type: "run_ended", stopReason: "stop", finalText, usage: USAGE, durationMs: 1200, ...extra });
  }
}

/**
 * mom's side of the bus, played by the suite instead of a runner: it reads what the ingress
 * publishes (messages, approval decisions) and publishes runs for it to draw. The ingress cannot
 * tell the difference; the suite tests the ingress's contract, not the agent.
 */
export class ScriptedMom {
  private constructor(
    readonly bus: Bus,
    readonly adapter: string,
    private readonly since: { in: number; ctl: number; receipts: number },
  ) {}

  static async connect(o: { natsUrl: string; namespace?: string; adapter: string }): Promise<ScriptedMom> {
    // A suite may restart NATS under the ingress: the kit follows it back as quickly as the ingress does.
    const bus = await Bus.connect({ url: o.natsUrl, name: "ingress-conformance", namespace: o.namespace ?? "mom", reconnectTimeWaitMs: 250, logger: pino({ level: "silent" }) });
    await bus.provision();
    const since = { in: (await bus.streamState("IN")).lastSeq, ctl: (await bus.streamState("CTL")).lastSeq, receipts: (await bus.streamState("RECEIPTS")).lastSeq };
    return new ScriptedMom(bus, o.adapter, since);
  }

  close(): Promise<void> {
    return this.bus.drain();
  }

  private ref(channel: string) {
    return { adapter: this.adapter, channelId: channel };
  }

  /**
   * What `channel` got on one stream since the suite connected. Read again while NATS is coming
   * back (a read right after a restart can time out while the kit's connection is still away).
   */
  private read(stream: "IN" | "CTL" | "RECEIPTS", kind: "in" | "ctl" | "receipts", channel: string, after: number) {
    const { subjects } = this.bus;
    return retryTransient(`reading ${stream} of ${channel}`, () => readRange(this.bus, subjects.stream(stream), subjects.channel(kind, this.ref(channel)), { seq: after + 1 }), this.bus.logger, 20_000);
  }

  /** Every message the ingress published to `channel` since the suite connected, in stream order. */
  async messages(channel: string): Promise<ChannelMessage[]> {
    const raw = await this.read("IN", "in", channel, this.since.in);
    return raw.map((m) => JSON.parse(m.text) as ChannelMessage);
  }

  /** Waits for the first message in `channel` whose text contains `marker`. */
  message(channel: string, marker: string, timeoutMs?: number): Promise<ChannelMessage> {
    return eventually(async () => (await this.messages(channel)).find((m) => m.text.includes(marker)), `a message containing "${marker}" published on ${this.adapter}/${channel}`, timeoutMs);
  }

  /** Approval decisions the ingress sent for `channel`. */
  async decisions(channel: string): Promise<Extract<ControlMessage, { type: "approval_decision" }>[]> {
    const raw = await this.read("CTL", "ctl", channel, this.since.ctl);
    return raw.map((m) => JSON.parse(m.text) as ControlMessage).filter((c): c is Extract<ControlMessage, { type: "approval_decision" }> => c.type === "approval_decision");
  }

  /** Receipts the ingress recorded for `channel` (deliveries), in stream order. */
  async receipts(channel: string): Promise<Receipt[]> {
    const raw = await this.read("RECEIPTS", "receipts", channel, this.since.receipts);
    return raw.map((m) => JSON.parse(m.text) as Receipt);
  }

  /**
   * Posts `text` in `channel` as a runner's send tool would for a person of another channel: one
   * `post` event under a run id of its own, returned. `requestedBy` is on this adapter unless given.
   */
  async post(channel: string, text: string, o: { access: "check" | "operator"; requestedBy: { adapter?: string; id: string; username: string } }): Promise<string> {
    const postId = randomUUID();
    await this.publishOut(channel, postId, 0, {
      type: "post",
      text,
      from: "conformance/elsewhere",
      fromRunId: randomUUID(),
      requestedBy: { adapter: o.requestedBy.adapter ?? this.adapter, id: o.requestedBy.id, username: o.requestedBy.username },
      access: o.access,
    });
    return postId;
  }

  /** Starts a run answering `trigger`, as a runner does. */
  async startRun(channel: string, trigger: ChannelMessage): Promise<ScriptedRun> {
    const run = new ScriptedRun(this, channel);
    await run.emit({
      type: "run_started",
      trigger: { messageId: trigger.id, senderId: trigger.sender.id, username: trigger.sender.username, text: trigger.text },
      model: "conformance/scripted",
      ...(trigger.replyTo && { replyTo: trigger.replyTo }),
    });
    return run;
  }

  /** Puts `bytes` in the files bucket where the runner would, and returns the attachment event for a run. */
  async shareFile(channel: string, filename: string, bytes: Uint8Array): Promise<OutboundEventBody> {
    const objectKey = fileObjectName(this.ref(channel), filename);
    await this.bus.putFile(objectKey, bytes, { mimeType: "text/plain" });
    return { type: "attachment", objectKey, filename, path: filename, size: bytes.length, mimeType: "text/plain" };
  }

  async publishOut(channel: string, runId: string, seq: number, event: OutboundEventBody): Promise<void> {
    await this.bus.publish(this.bus.subjects.channel("out", this.ref(channel)), { runId, seq, ts: new Date().toISOString(), event }, `${runId}:${seq}`);
  }
}
