import { ChannelMessage } from "./channel-message.js";
import { ControlMessage } from "./control-message.js";
import { DeadLetter } from "./dead-letter.js";
import { LogEntry } from "./log-entry.js";
import { OutboundEvent } from "./outbound-event.js";
import { Receipt } from "./receipt.js";
import { SpendLimitOverride } from "./spend-limit.js";
import { ToolApproveReply, ToolApproveRequest, ToolReviewReply, ToolReviewRequest } from "./tool-review.js";
import { UsageRecord } from "./usage-record.js";

/** The schemas published as JSON Schema files under docs/schemas, by file name. */
export const PUBLISHED_SCHEMAS = {
  "channel-message.schema.json": ChannelMessage,
  "outbound-event.schema.json": OutboundEvent,
  "control-message.schema.json": ControlMessage,
  "dead-letter.schema.json": DeadLetter,
  "log-entry.schema.json": LogEntry,
  "receipt.schema.json": Receipt,
  "usage-record.schema.json": UsageRecord,
  "spend-limit-override.schema.json": SpendLimitOverride,
  "tool-review-request.schema.json": ToolReviewRequest,
  "tool-review-reply.schema.json": ToolReviewReply,
  "tool-approve-request.schema.json": ToolApproveRequest,
  "tool-approve-reply.schema.json": ToolApproveReply,
} as const;

export function renderJsonSchema(schema: object): string {
  return `${JSON.stringify({ $schema: "https://json-schema.org/draft/2020-12/schema", ...schema }, null, 2)}\n`;
}
