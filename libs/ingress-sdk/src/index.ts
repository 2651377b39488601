// The public surface of mom for an ingress: everything a chat platform's service may use, and the
// only mom package it imports (test/deploy/ingress-boundary.test.ts holds the shipped ingresses to
// that). What it offers and the contract each part keeps: docs/ingress-sdk.md.

// The bus: connection (and its Nest module), durable consumption, files, readiness, reading back
// this adapter's own inbound history; the Nest service on the JetStream transport and its handlers.
export { Bus, type BusOptions, type ConsumeOptions, type Consumption, type Delivery, type FileSource, fileObjectName, lastPerSubject, type RawMessage, readRange, serviceReadiness } from "@mom/bus";
export { type BeforeJetStreamDrain, BusModule, connectJetStream, JetStreamHandler, startJetStreamService } from "@mom/bus/nest";

// The payloads on the bus and the rules of their fields.
export {
  type Attachment,
  type ChannelMessage,
  type ChannelRef,
  type ChannelSubjectKind,
  type ControlMessage,
  escapeChannelToken,
  isNewSessionCommand,
  isStopCommand,
  MAX_EVENT_TEXT,
  OutboundEvent,
  type OutboundEventBody,
  type Receipt,
  type Sender,
  spellCodePoint,
  type Subjects,
  type ToolActivity,
  type Usage,
} from "@mom/contracts";

// This adapter's entry of config.json (the common fields validated by mom); the models it names.
export { adapterEntry, configuredModels, type LoadedConfig, parseModelRef } from "@mom/config";

// Metrics every ingress reports (messages in and out, platform errors and rate limits).
export { metrics } from "@mom/observability";

// Text: splitting to a platform's limit, batching to its per-message limits, usage lines, a chat
// app's markup from Markdown, Slack's markup, `@name` -> `<@id>` (Slack's and Discord's mentions).
export { type BatchLimits, batches, chatMarkup, type ChatMarkup, escapeMrkdwn, formatDuration, formatUsage, idsForMentions, markdownToMrkdwn, mrkdwnToText, type SlackNames, splitMessage } from "@mom/format";

// Files a terminal-like ingress saves locally.
export { formatSizeOverLimit, guessMimeType, safeFileName, writeNewFile } from "@mom/store";

// The ingress kit and the presenter: each message once and in order, the DM policy, files into the
// Object Store, publishing with the msg-id rule, approvals, drawing runs through a Layout or a
// ChatSurface, delivery receipts.
export * from "@mom/render";

// The service shell: a platform supplies an IngressDefinition (its settings' schema and a
// connection that converts); the shell does everything else and runs it.
export { type AdapterAccess, type AdapterSettings, adapterSettings } from "./adapter-settings.js";
export { IngressShell } from "./ingress-shell.js";
export type { InboundHistory } from "./inbound-history.js";
export { storedPlatformIds } from "./stored-ids.js";
export { catchUpFromHistory, type MissedMessages, newestStoredId } from "./catch-up.js";
export { FailureWatch } from "./failure-watch.js";
export { OUTBOUND_DRAWING, OutboundController, type OutboundDrawing, outboundDrawing } from "./outbound-controller.js";
export { ApprovalReactions } from "./approval-reactions.js";
export { Directory, type DirectoryOptions } from "./directory.js";
export type { EventSurface, IngressDefinition, InboundPort, PlatformConnection, PlatformContext, PlatformMessage } from "./platform.js";
// What platforms with webhooks or hand-written API clients need: an HTTP server for the posts,
// rate limits waited out, files fetched (behind a token).
export { replyText, serveWebhook, type WebhookServer, type WebhookServerOptions } from "./webhook-server.js";
// The platform's acknowledgement (a webhook's 200, a polling offset) held until what it delivered is stored.
export { type AbortSignalLike, HeldAcknowledgements, type HoldOptions, WEBHOOK_ACK_WITHIN_MS, whenStored } from "./held-acks.js";
export { backoffMs, waitOutRateLimits } from "./rate-limits.js";
export { type Downloaded, downloadFile, type DownloadOptions } from "./file-download.js";
export { type RunningIngress, runIngress, startConfiguredIngress, startIngress, type StartIngressOptions } from "./start-ingress.js";

// Schemas of a platform's own settings, with the same TypeBox mom validates with.
export { type Static, type TSchema, Type } from "typebox";
