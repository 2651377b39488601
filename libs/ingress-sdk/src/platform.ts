// What a platform supplies to the ingress shell, and what the shell hands it. A platform converts
// (its events into PlatformMessages, runs into posts and edits) and nothing more: dedupe, order,
// the DM policy, files, publishing, approvals, the presenter, health and shutdown are the shell's.
import type { FileSource } from "@mom/bus";
import type { ChannelMessage, OutboundEvent } from "@mom/contracts";
import type { ApprovalClick, ChatSurface, Dialect, IncomingFile, Layout } from "@mom/render";
import type { InboundHistory } from "./inbound-history.js";
import type { Static, TSchema } from "typebox";
import type { Logger } from "pino";

/** One platform's ingress: its name, its own settings' schema, and how to connect to it. */
export interface IngressDefinition<S extends TSchema = TSchema> {
  /** The platform in lower case ("matrix"): a built-in adapter `type`, or an external adapter's `platform`. */
  readonly platform: string;
  /**
   * The platform's own settings (tokens, URLs), validated by the shell with the same errors as
   * config.json's (file, JSON path, what was expected). Built-in types: the adapter entry without
   * `type` and the common fields; external adapters: the entry's `settings`.
   */
  readonly settings: S;
  /** Builds the platform side: clients, credential checks. Nothing is received before `start`. */
  connect(ctx: PlatformContext<Static<S>>): Promise<PlatformConnection> | PlatformConnection;
}

/** What the shell gives a platform. */
export interface PlatformContext<T> {
  /** The adapter's name in config.json: the subject token of its channels. */
  readonly adapter: string;
  readonly settings: T;
  readonly log: Logger;
  /** config `attachments.maxBytes`: the largest file the shell imports. */
  readonly maxAttachmentBytes: number;
  /** Everything received from the platform goes here. */
  readonly inbound: InboundPort;
  /** What this adapter has published on the inbound stream: where a platform with history catches up from. */
  readonly history: InboundHistory;
  /**
   * The files bucket, for an EventSurface: an `attachment` event names an object, whose bytes it
   * reads here (at most `maxAttachmentBytes`). Chat surfaces and layouts get files from the presenter.
   */
  readonly files: Pick<FileSource, "getFile">;
}

/** A message as the platform saw it; `files` are downloaded by the shell, within the size limit. */
export interface PlatformMessage extends Omit<ChannelMessage, "attachments"> {
  files?: IncomingFile[];
  /** Tells the sender their direct message was refused (the DM policy); default: a post in the chat. */
  refuse?(text: string): Promise<unknown>;
}

export interface InboundPort {
  /**
   * Hands one platform message to mom: once per (channel, id), in order per channel, after the
   * DM policy, with its files in the Object Store, published with the msg-id rule. Resolves true
   * once handled (published, or refused by policy), false for a message already taken (once that
   * handling is done, if it still goes on). Rejects when it could not be handled (logged by the
   * shell; the id is forgotten, so the platform's redelivery is handled again). A platform that
   * acknowledges deliveries acknowledges one only once this settled (`whenStored`,
   * `HeldAcknowledgements`), and asks for it again when it rejected.
   */
  receive(message: PlatformMessage): Promise<boolean>;
  /**
   * `receive` for a platform event whose conversion needs the platform (a user lookup, a thread's
   * parent, a read receipt): `convert` runs in the event's turn — once per (`chat`, `id`), after
   * the chat's earlier events — so a slow lookup never lets a later message overtake it. It
   * resolves the message, or undefined for an event that is none (handled, nothing to publish).
   */
  receiveInTurn(chat: string, id: string, convert: () => Promise<PlatformMessage | undefined>): Promise<boolean>;
  /**
   * Catches a chat up on messages missed while the ingress was away (a platform's history):
   * `missed` runs in the chat's turn, ahead of everything received later, and each message it
   * returns is handled as `receive` would, except ones taken already; it stops at shutdown.
   * Resolves with how many were handled; rejects when reading or handling failed.
   */
  catchUp(chat: string, missed: () => Promise<PlatformMessage[]>): Promise<number>;
  /**
   * An Allow once / Deny from the platform -> the approval decision on the bus. Resolves with the
   * line to show the person privately when they may not decide (the decision is still sent and
   * refused by the runner, so the audit trail has it). `acknowledge`, for platforms that drop a
   * click not answered within seconds, is told the same before the decision goes onto the bus.
   */
  decide(click: ApprovalClick, acknowledge?: (verdict: { refusal?: string }) => Promise<unknown>): Promise<{ refusal?: string }>;
  /**
   * The ids of the approvals asked in `channel` that still wait for a decision, read back from the
   * bus (within `policy.approvalTimeoutSeconds`): what a typed code of before a restart may
   * decide, where the answer does not name its prompt (`ApprovalCodes.decide`'s `recall`). Empty
   * when the read fails or takes over a second (logged).
   */
  waitingApprovals(channel: string): Promise<string[]>;
  /**
   * The platform reports later that a message it had accepted never reached the person (WhatsApp's
   * status webhooks): records `delivery.failed` for the answer it carried. False when the message
   * is not one of the answers this ingress drew.
   */
  undelivered(platformMessageId: string, error: string): Promise<boolean>;
}

/**
 * A surface that draws every outbound event itself, as it comes: nothing is coalesced, and the
 * answer's text deltas (`message_update`) arrive as the model writes them. For a transcript that
 * is written, not edited — a terminal, a UI streaming the answer — where the presenter's run view
 * (a progress message edited at the platform's pace) is not the shape. The shell still orders
 * events per channel, remembers the approval prompts it passed on (for `inbound.decide`), and
 * records each answer's delivery; what an event looks like, and dropping a redelivered one
 * (`RunTracker`), is the surface's.
 */
export interface EventSurface {
  /** How decisions' refusals are worded (`plainDialect()` for plain text). */
  readonly dialect: Dialect;
  /**
   * Draws one event of `channel` (the platform's channel id), after the channel's earlier ones.
   * Rejects with the platform's error (logged; the channel goes on). For a `run_ended` it may
   * resolve with the platform's ids of the messages that carry the answer (its delivery receipt).
   */
  drawEvent(channel: string, event: OutboundEvent): Promise<string[] | void>;
}

/** The platform side of a running ingress. */
export interface PlatformConnection {
  /** Where runs are drawn: a ChatSurface (messages, edits, buttons), a whole Layout, or an EventSurface (every event as it comes). */
  readonly surface: ChatSurface | Layout<unknown, unknown> | EventSurface;
  /**
   * Set when this process serves one channel of its adapter (a terminal: one conversation per
   * process): only that channel's runs are drawn, from a durable consumer of its own
   * (`ingress-<adapter>-<channel>`), so several processes of one adapter each draw their own
   * conversation. Unset: every channel of the adapter, from the durable `ingress-<adapter>`.
   */
  readonly channel?: string;
  /**
   * How long `inbound.receive` retries publishing through a NATS outage before it rejects
   * (default 60,000 ms: a platform's event must not be lost). 0: at once, for a person watching who
   * is told and can send again (a terminal).
   */
  readonly inboundRetryMs?: number;
  /** Shortest time between two edits of a run's progress (the platform's edit rate; default 1,500 ms). */
  readonly editIntervalMs?: number;
  /** How often "typing…" is renewed during a run (default 4,500 ms). */
  readonly typingIntervalMs?: number;
  /**
   * Starts receiving. The adapter's outbound consumer binds right after, counting "new" events from
   * the service's start, so nothing answered meanwhile goes undrawn. May resolve with how it
   * receives (logged on the "receiving" line).
   */
  start(): Promise<void | Record<string, unknown>>;
  /** Stops receiving; in-flight messages are finished by the shell afterwards. */
  stop(): Promise<void>;
  /** Releases the platform's client once nothing is received or drawn any more (the last step of shutdown). */
  close?(): Promise<void>;
  /** Why the platform side is not ready (for /healthz), or undefined. */
  problem?(): string | undefined;
  /**
   * Whether the platform's user `userId` can see `channelId` now (a member of the group, the
   * person of a direct chat): asked before mom posts a message there that this user asked for in
   * another channel of this adapter (the send tool). Rejects when the platform cannot say (the
   * error is the reason given). Absent: the platform cannot tell, and such posts are refused.
   */
  canSee?(userId: string, channelId: string): Promise<boolean>;
}
