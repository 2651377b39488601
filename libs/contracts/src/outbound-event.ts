import Type, { type Static } from "typebox";
import { RiskLevel, ToolActivity } from "./receipt.js";

const Loose = { additionalProperties: true } as const;

/** A pi-ai message (user, assistant or toolResult) as JSON. */
export const JsonMessage = Type.Object({ role: Type.String() }, Loose);

export const Usage = Type.Object(
  {
    input: Type.Integer({ minimum: 0 }),
    output: Type.Integer({ minimum: 0 }),
    cacheRead: Type.Integer({ minimum: 0 }),
    cacheWrite: Type.Integer({ minimum: 0 }),
    totalTokens: Type.Integer({ minimum: 0 }),
    cost: Type.Object(
      { input: Type.Number(), output: Type.Number(), cacheRead: Type.Number(), cacheWrite: Type.Number(), total: Type.Number() },
      { additionalProperties: false },
    ),
    contextTokens: Type.Optional(Type.Integer({ minimum: 0, description: "Context in use after the run" })),
    contextWindow: Type.Optional(Type.Integer({ minimum: 0 })),
  },
  { additionalProperties: false },
);
export type Usage = Static<typeof Usage>;

const Trigger = Type.Object(
  {
    messageId: Type.String(),
    senderId: Type.String(),
    username: Type.String(),
    text: Type.String(),
  },
  { additionalProperties: false },
);

// Run lifecycle, emitted by the runner around each agent run.
export const RunQueued = Type.Object(
  { type: Type.Literal("run_queued"), trigger: Trigger, position: Type.Integer({ minimum: 1 }) },
  { additionalProperties: false },
);
export const RunRejected = Type.Object(
  {
    type: Type.Literal("run_rejected"),
    trigger: Trigger,
    reason: Type.Literal("busy"),
    text: Type.String({ description: "What to tell the sender" }),
    replyTo: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);
export const RunStarted = Type.Object(
  {
    type: Type.Literal("run_started"),
    trigger: Trigger,
    replyTo: Type.Optional(Type.String()),
    model: Type.String(),
    resumedFrom: Type.Optional(Type.String({ description: "runId of an attempt at the same message that was interrupted (its runner died or handed it over); this run was told what that attempt did" })),
  },
  { additionalProperties: false },
);
export const StopReason = Type.Union([
  Type.Literal("stop"),
  Type.Literal("length"),
  Type.Literal("toolUse"),
  Type.Literal("aborted"),
  Type.Literal("error"),
]);
export type StopReason = Static<typeof StopReason>;
export const RunEnded = Type.Object(
  {
    type: Type.Literal("run_ended"),
    stopReason: StopReason,
    errorMessage: Type.Optional(Type.String()),
    finalText: Type.String({ description: "The answer to post: the last assistant text of the run (may be empty)" }),
    replyTo: Type.Optional(Type.String()),
    silent: Type.Optional(Type.Boolean({ description: "The agent answered [SILENT]: post nothing and remove the progress message" })),
    toolActivity: Type.Optional(Type.Array(ToolActivity, { description: "The run's relevant tool calls, from receipts; show under the answer" })),
    usage: Usage,
    durationMs: Type.Integer({ minimum: 0 }),
  },
  { additionalProperties: false },
);

/** A tool call waits for a person: render it with allow / deny (buttons, or a prompt). */
export const ApprovalRequested = Type.Object(
  {
    type: Type.Literal("approval_requested"),
    approvalId: Type.String({ minLength: 1 }),
    toolId: Type.String(),
    risk: RiskLevel,
    argsSummary: Type.String(),
    requestedBy: Type.Object({ id: Type.String(), username: Type.String() }, { additionalProperties: false }),
    expiresAt: Type.String({ format: "date-time" }),
    approvers: Type.Array(Type.String(), { description: "User ids allowed to decide" }),
    replyTo: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);
/** How an approval ended; adapters update or remove their prompt. */
export const ApprovalResolved = Type.Object(
  {
    type: Type.Literal("approval_resolved"),
    approvalId: Type.String({ minLength: 1 }),
    outcome: Type.Union([Type.Literal("approved"), Type.Literal("denied"), Type.Literal("expired")]),
    decidedBy: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);

/** A file the agent shared (attach tool); the bytes are in the attachments Object Store bucket. */
export const AttachmentEvent = Type.Object(
  {
    type: Type.Literal("attachment"),
    objectKey: Type.String({ minLength: 1 }),
    filename: Type.String({ minLength: 1 }),
    path: Type.String({ description: "Workspace-relative path of the file the agent attached" }),
    title: Type.Optional(Type.String()),
    mimeType: Type.Optional(Type.String()),
    size: Type.Integer({ minimum: 0 }),
    replyTo: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);

/**
 * A message mom posts in this channel for a person in another channel (the `send` tool): not a run
 * of this channel, one event with a run id of its own. The ingress checks who asked may see the
 * channel (`access`), posts `text` (and `file`), records `delivery.succeeded` / `delivery.failed`
 * under that run id on `mom.receipts.<adapter>.<channel>`, and publishes what it posted on
 * `mom.in.<adapter>.<channel>` as mom's message, so the channel's log.jsonl has it.
 */
export const PostEvent = Type.Object(
  {
    type: Type.Literal("post"),
    text: Type.String({ minLength: 1, description: "The message, Markdown" }),
    file: Type.Optional(
      Type.Object(
        {
          objectKey: Type.String({ minLength: 1 }),
          filename: Type.String({ minLength: 1 }),
          path: Type.String({ description: "Workspace-relative path of the file the agent sent" }),
          title: Type.Optional(Type.String()),
          mimeType: Type.Optional(Type.String()),
          size: Type.Integer({ minimum: 0 }),
        },
        { additionalProperties: false },
      ),
    ),
    from: Type.String({ minLength: 1, description: "The qualified id of the channel whose run sent it" }),
    fromRunId: Type.String({ minLength: 1 }),
    requestedBy: Type.Object(
      { adapter: Type.String({ minLength: 1 }), id: Type.String({ minLength: 1 }), username: Type.String() },
      { additionalProperties: false, description: "The person whose message started the sending run, on their own adapter" },
    ),
    access: Type.Union([Type.Literal("check"), Type.Literal("operator")], {
      description:
        '"check": the requester is on this adapter, and the ingress posts only if its platform says they can see the channel (a platform that cannot tell refuses); "operator": the requester typed in mom\'s terminal (a cli adapter), who runs mom',
    }),
  },
  { additionalProperties: false },
);

/**
 * The provider refused a credential (429, 401/403, billing): it cools down until `until` and the
 * run goes on with `to`. Ids only, never a secret (docs/auth.md).
 */
export const AuthProfileRotated = Type.Object(
  {
    type: Type.Literal("auth.profile.rotated"),
    provider: Type.String(),
    from: Type.String({ description: "Credential id that was refused (a profile id, or env for the environment's)" }),
    to: Type.String({ description: "Credential id the run continues with" }),
    reason: Type.Union([Type.Literal("rate_limit"), Type.Literal("auth"), Type.Literal("billing")]),
    until: Type.String({ format: "date-time", description: "When `from` may be used again" }),
  },
  { additionalProperties: false },
);

/**
 * Texts in an event (deltas, message blocks, tool output) longer than this are cut with a note
 * (NATS' default max payload is 1 MiB; tool output can be far larger), so one event always fits in
 * one message. A message_end block of at most this length is the block's whole text.
 */
export const MAX_EVENT_TEXT = 16_000;

// AgentSessionEvents made JSON-safe: large or cyclic fields are dropped or summarised so that
// every event fits in one NATS message (see docs/outbound-events.md). The runner no longer publishes
// the structure-only ones (agent/turn start and end, message_start); they stay accepted so streams
// recorded by older runners still validate.
export const AgentStart = Type.Object({ type: Type.Literal("agent_start") }, Loose);
export const AgentEnd = Type.Object({ type: Type.Literal("agent_end") }, Loose);
export const TurnStart = Type.Object({ type: Type.Literal("turn_start") }, Loose);
export const TurnEnd = Type.Object({ type: Type.Literal("turn_end") }, Loose);
export const MessageStart = Type.Object({ type: Type.Literal("message_start"), message: JsonMessage }, Loose);
export const MessageUpdate = Type.Object(
  {
    type: Type.Literal("message_update"),
    assistantMessageEvent: Type.Object({ type: Type.String(), contentIndex: Type.Optional(Type.Integer()), delta: Type.Optional(Type.String()) }, Loose),
  },
  Loose,
);
export const MessageEnd = Type.Object({ type: Type.Literal("message_end"), message: JsonMessage }, Loose);
export const ToolExecutionStart = Type.Object(
  {
    type: Type.Literal("tool_execution_start"),
    toolCallId: Type.String(),
    toolName: Type.String(),
    label: Type.String({ description: "Short human description of what the tool does now" }),
    args: Type.Unknown(),
  },
  Loose,
);
export const ToolExecutionUpdate = Type.Object(
  {
    type: Type.Literal("tool_execution_update"),
    toolCallId: Type.String(),
    toolName: Type.String(),
    partialText: Type.String({ description: "The tail of the tool's output so far (its last lines); the whole output comes with tool_execution_end" }),
  },
  Loose,
);
export const ToolExecutionEnd = Type.Object(
  {
    type: Type.Literal("tool_execution_end"),
    toolCallId: Type.String(),
    toolName: Type.String(),
    label: Type.String(),
    isError: Type.Boolean(),
    resultText: Type.String({ description: "Text content of the result, capped" }),
    durationMs: Type.Integer({ minimum: 0 }),
  },
  Loose,
);
export const QueueUpdate = Type.Object(
  { type: Type.Literal("queue_update"), steering: Type.Array(Type.String()), followUp: Type.Array(Type.String()) },
  Loose,
);
const CompactionReason = Type.Union([Type.Literal("manual"), Type.Literal("threshold"), Type.Literal("overflow")]);
export const CompactionStart = Type.Object({ type: Type.Literal("compaction_start"), reason: CompactionReason }, Loose);
export const CompactionEnd = Type.Object(
  {
    type: Type.Literal("compaction_end"),
    reason: CompactionReason,
    aborted: Type.Boolean(),
    willRetry: Type.Boolean(),
    errorMessage: Type.Optional(Type.String()),
  },
  Loose,
);
export const AutoRetryStart = Type.Object(
  { type: Type.Literal("auto_retry_start"), attempt: Type.Integer(), maxAttempts: Type.Integer(), delayMs: Type.Number(), errorMessage: Type.String() },
  Loose,
);
export const AutoRetryEnd = Type.Object(
  { type: Type.Literal("auto_retry_end"), success: Type.Boolean(), attempt: Type.Integer(), finalError: Type.Optional(Type.String()) },
  Loose,
);

export const SessionEvent = Type.Union([
  AgentStart,
  AgentEnd,
  TurnStart,
  TurnEnd,
  MessageStart,
  MessageUpdate,
  MessageEnd,
  ToolExecutionStart,
  ToolExecutionUpdate,
  ToolExecutionEnd,
  QueueUpdate,
  CompactionStart,
  CompactionEnd,
  AutoRetryStart,
  AutoRetryEnd,
]);
export type SessionEvent = Static<typeof SessionEvent>;

export const OutboundEventBody = Type.Union([RunQueued, RunRejected, RunStarted, RunEnded, AttachmentEvent, PostEvent, ApprovalRequested, ApprovalResolved, AuthProfileRotated, SessionEvent]);
export type OutboundEventBody = Static<typeof OutboundEventBody>;

/**
 * Where a runner that took a channel over numbers the events it announces again for a run the
 * previous owner never ended: its start at this seq, its end after it (beyond anything the run
 * could have numbered, so adapters that drop stale seqs still take them). The first owner's copy
 * of the start may be on the stream or not (a lost quorum cut its publish off); an adapter that
 * meets such a start reads what an earlier process of its own drew of the run, as for a redelivery.
 */
export const REANNOUNCED_SEQ = 999_999_999;

/**
 * Published by the runner on `mom.out.<adapter>.<channel>`; Nats-Msg-Id is `<runId>:<seq>`, but
 * `<runId>:start` for `run_started` and `<runId>:end` for `run_ended`, so announcing them again
 * can never duplicate them.
 */
export const OutboundEvent = Type.Object(
  {
    runId: Type.String({ minLength: 1 }),
    seq: Type.Integer({ minimum: 0, description: "Position of the event within its run, from 0" }),
    ts: Type.String({ format: "date-time" }),
    event: OutboundEventBody,
  },
  { additionalProperties: false, $id: "OutboundEvent" },
);
export type OutboundEvent = Static<typeof OutboundEvent>;
export type OutboundEventType = OutboundEventBody["type"];
