// The public surface of mom for an ingress: everything a chat platform's service may use, and the
// only mom package it imports (test/deploy/ingress-boundary.test.ts holds the shipped ingresses to
// that). What it offers and the contract each part keeps: docs/ingress-sdk.md.

// The bus: connection (and its Nest module), durable consumption, files, readiness, reading back
// this adapter's own inbound history; the Nest service on the JetStream transport and its handlers.
export { Bus, BusModule, type BusOptions, type ConsumeOptions, type Consumption, type FileSource, fileObjectName, lastPerSubject, type RawMessage, readRange, serviceReadiness } from "@mom/bus";
export { type BeforeJetStreamDrain, connectJetStream, type Delivery, JetStreamHandler, startJetStreamService } from "@mom/bus";

// The payloads on the bus and the rules of their fields.
export {
  type Attachment,
  type ChannelMessage,
  type ChannelRef,
  escapeChannelToken,
  isNewSessionCommand,
  isStopCommand,
  MAX_EVENT_TEXT,
  OutboundEvent,
  type OutboundEventBody,
  type Sender,
  spellCodePoint,
  type Subjects,
  type Usage,
} from "@mom/contracts";

// This adapter's entry of config.json (the common fields validated by mom).
export { adapterEntry, type LoadedConfig, parseModelRef } from "@mom/config";

// Metrics every ingress reports (messages in and out, platform errors and rate limits).
export { metrics } from "@mom/observability";

// Text: splitting to a platform's limit, usage lines, Slack's markup.
export { escapeMrkdwn, formatDuration, formatUsage, markdownToMrkdwn, mrkdwnToText, type SlackNames, splitMessage } from "@mom/format";

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
export type { IngressDefinition, InboundPort, PlatformConnection, PlatformContext, PlatformMessage } from "./platform.js";
export { type RunningIngress, runIngress, startConfiguredIngress, startIngress, type StartIngressOptions } from "./start-ingress.js";

// Schemas of a platform's own settings, with the same TypeBox mom validates with.
export { type Static, type TSchema, Type } from "typebox";
