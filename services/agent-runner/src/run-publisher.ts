import type { Bus } from "@mom/bus";
import { type ChannelRef, MAX_EVENT_TEXT, type OutboundEvent, type OutboundEventBody } from "@mom/contracts";
import type { Logger } from "pino";
import PQueue from "p-queue";

/** Streamed text arriving within this window travels as one event. */
export const DELTA_WINDOW_MS = 50;
/** ...up to this many characters, so a joined event always fits in one NATS message. */
const MAX_JOINED_DELTA = 16_000;

type Delta = Extract<OutboundEventBody, { type: "message_update" }>;

function isDelta(e: OutboundEventBody): e is Delta {
  const t = e.type === "message_update" ? e.assistantMessageEvent.type : "";
  return (t === "text_delta" || t === "thinking_delta") && typeof (e as Delta).assistantMessageEvent.delta === "string";
}

function sameStream(a: Delta, b: Delta): boolean {
  return a.assistantMessageEvent.type === b.assistantMessageEvent.type && a.assistantMessageEvent.contentIndex === b.assistantMessageEvent.contentIndex;
}

/**
 * Whether an assistant `message_end` holds the whole text of the block a held delta belongs to
 * (the mapper cuts blocks over MAX_EVENT_TEXT, which then no longer do).
 */
function repeatsWhole(end: OutboundEventBody, held: Delta): boolean {
  if (end.type !== "message_end" || end.message.role !== "assistant") return false;
  const content = (end.message as { content?: unknown }).content;
  if (!Array.isArray(content)) return false;
  const e = held.assistantMessageEvent;
  const block = (content as Array<Record<string, unknown> | undefined>)[e.contentIndex ?? 0];
  const text = block?.[e.type === "text_delta" ? "text" : "thinking"];
  return typeof text === "string" && text.length <= MAX_EVENT_TEXT && text.endsWith(e.delta!);
}

/**
 * Which of a run's events go on the bus. pi's structure-only events, message starts, the ends of
 * user and tool-result messages (the trigger and tool_execution_end carry them) and stream markers
 * without text tell a reader nothing, and were two thirds of a short run's events
 * (docs/outbound-events.md). The runner still sees them all (run telemetry times model calls by turns).
 */
export function goesOnTheBus(e: OutboundEventBody): boolean {
  switch (e.type) {
    case "agent_start":
    case "agent_end":
    case "turn_start":
    case "turn_end":
    case "message_start":
      return false;
    case "message_end":
      return e.message.role === "assistant";
    case "message_update":
      return isDelta(e);
    default:
      return true;
  }
}

/**
 * The msg-id rule for run events: a run's start and end have fixed ids, so announcing them again
 * (a new owner, for a run its previous owner never ended) can never duplicate them.
 */
export function runEventMsgId(runId: string, seq: number, type: OutboundEventBody["type"]): string {
  return type === "run_ended" ? `${runId}:end` : type === "run_started" ? `${runId}:start` : `${runId}:${seq}`;
}

/**
 * Publishes one run's events on mom.out in order, numbered from 0. The agent's synchronous event
 * callbacks never wait on NATS, and seq order is publish order.
 * Each event's Nats-Msg-Id is `<runId>:<seq>`. A model streams text a few characters at a time;
 * consecutive deltas of the same block within DELTA_WINDOW_MS are joined into one event (nothing
 * is lost or reordered), which keeps a long answer from costing hundreds of JetStream round trips.
 */
export class RunPublisher {
  /** Outbound events, one publish at a time in emit order. */
  private readonly queue = new PQueue({ concurrency: 1 });
  /** The last event queued: flushed() waits for it. */
  private last: Promise<void> = Promise.resolve();
  private lost = 0;
  private readonly cancelled = new AbortController();
  private held?: Delta;
  private timer?: NodeJS.Timeout;
  private subject?: string;
  /** W3C trace context every event carries (the run's span; docs/observability.md). */
  traceparent?: string;

  constructor(
    private readonly bus: Bus,
    private readonly ref: ChannelRef,
    readonly runId: string,
    private readonly log: Logger,
    /** How long one event is retried (same msg-id) through a NATS outage before it counts as lost. */
    private readonly retryForMs = 0,
    private seq = 0,
  ) {}

  /** Drops every event not on the bus yet: the channel has a new owner, who speaks for this run now. */
  cancel(): void {
    this.cancelled.abort();
    clearTimeout(this.timer);
    this.held = undefined;
  }

  /** Events that could not be published within retryForMs. */
  get lostEvents(): number {
    return this.lost;
  }

  emit(event: OutboundEventBody): void {
    if (!goesOnTheBus(event)) return;
    if (isDelta(event)) {
      if (this.held && sameStream(this.held, event) && this.held.assistantMessageEvent.delta!.length < MAX_JOINED_DELTA) {
        this.held.assistantMessageEvent.delta += event.assistantMessageEvent.delta!;
        return;
      }
      this.release();
      this.held = { ...event, assistantMessageEvent: { ...event.assistantMessageEvent } };
      this.timer = setTimeout(() => this.release(), DELTA_WINDOW_MS);
      return;
    }
    // A message's end carries its text: the part still held would only say it again (a short or
    // fast answer then costs one event less; readers complete a block from its message_end).
    if (this.held && repeatsWhole(event, this.held)) this.drop();
    this.release();
    this.publish(event);
  }

  private drop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.held = undefined;
  }

  /** Resolves once everything emitted so far is on the bus. */
  flushed(): Promise<void> {
    this.release();
    return this.last;
  }

  private release(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const held = this.held;
    this.held = undefined;
    if (held) this.publish(held);
  }

  private publish(event: OutboundEventBody): void {
    const out: OutboundEvent = { runId: this.runId, seq: this.seq++, ts: new Date().toISOString(), event };
    const subject = (this.subject ??= this.bus.subjects.channel("out", this.ref));
    const msgId = runEventMsgId(out.runId, out.seq, event.type);
    // One at a time: an event goes out once every earlier one has landed. Sent before that
    // (pipelined), an event whose predecessor was lost with a dying connection, or refused by a
    // server still starting, landed first, and a run_started once came after its run_ended
    // (runners-chaos, a NATS restart with runs in flight). Only back-to-back events wait, one
    // round trip each; the agent never does (emit does not block).
    const traceparent = this.traceparent;
    this.last = this.queue.add(async () => {
      if (this.cancelled.signal.aborted) return;
      try {
        await this.bus.publish(subject, out, msgId, { retryForMs: this.retryForMs, signal: this.cancelled.signal, traceparent, freshIdWhenStuck: true });
      } catch (err) {
        if (this.cancelled.signal.aborted) return;
        this.lost++;
        this.log.error({ err, runId: this.runId, seq: out.seq, type: event.type }, "could not publish outbound event: the channel will not see it");
      }
    });
  }
}
