import Type, { type Static } from "typebox";
import { Attachment } from "./channel-message.js";

/**
 * One line of a channel's `log.jsonl`: every message seen in the channel and every final answer
 * mom gave. Written only by the runner that owns the channel; the agent reads it with its tools.
 */
export const LogEntry = Type.Object(
  {
    id: Type.String({ minLength: 1, description: "Message id (inbound) or `<runId>:reply` (answers)" }),
    date: Type.String({ format: "date-time" }),
    user: Type.String({ description: "Sender id; `mom` for mom's own answers" }),
    userName: Type.String(),
    displayName: Type.Optional(Type.String()),
    text: Type.String(),
    attachments: Type.Array(Attachment),
    isBot: Type.Boolean(),
    isMention: Type.Optional(Type.Boolean()),
    replyTo: Type.Optional(Type.String()),
    runId: Type.Optional(Type.String()),
    metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  },
  { additionalProperties: false, $id: "LogEntry" },
);
export type LogEntry = Static<typeof LogEntry>;
