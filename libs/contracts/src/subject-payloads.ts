import type { TSchema } from "typebox";
import { ChannelMessage } from "./channel-message.js";
import { ControlMessage } from "./control-message.js";
import { OutboundEvent } from "./outbound-event.js";
import { Receipt } from "./receipt.js";
import type { ChannelSubjectKind } from "./subjects.js";

/**
 * The payload each kind of channel subject carries: what its consumers validate a message against
 * (`validator(schema)` + `parsePayload`, as `bus.consume` does), and so what a payload put back on
 * that subject (the console re-publishing a fixed dead letter) must pass first.
 */
export const CHANNEL_SUBJECT_PAYLOADS = {
  in: ChannelMessage,
  out: OutboundEvent,
  ctl: ControlMessage,
  receipts: Receipt,
} as const satisfies Record<ChannelSubjectKind, TSchema>;
