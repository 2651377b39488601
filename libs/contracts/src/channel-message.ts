import Type, { type Static } from "typebox";
import { Metadata } from "./metadata.js";

export const Sender = Type.Object(
  {
    id: Type.String({ minLength: 1, description: "Platform user id" }),
    username: Type.String({ minLength: 1, description: "Handle used for @mentions in text" }),
    displayName: Type.Optional(Type.String()),
    isBot: Type.Boolean(),
  },
  { additionalProperties: false },
);
export type Sender = Static<typeof Sender>;

export const Attachment = Type.Object(
  {
    filename: Type.String({ minLength: 1, description: "Original file name as the user sent it" }),
    localPath: Type.String({ description: "Workspace-relative path once materialised, empty until then" }),
    mimeType: Type.Optional(Type.String()),
    size: Type.Optional(Type.Integer({ minimum: 0 })),
    objectKey: Type.Optional(Type.String({ minLength: 1, description: "Name of the bytes in the attachments Object Store bucket, put there by the ingress" })),
    note: Type.Optional(Type.String({ description: "Why the file is not available (too large, missing), set by the runner" })),
  },
  { additionalProperties: false },
);
export type Attachment = Static<typeof Attachment>;

/**
 * One message seen in a channel, whether or not it mentions mom. Published by an ingress (or the
 * scheduler) on `mom.in.<adapter>.<channel>`; the adapter is that subject token, never a field.
 */
export const ChannelMessage = Type.Object(
  {
    id: Type.String({ minLength: 1, description: "Platform message id, unique within the channel; also the Nats-Msg-Id" }),
    channelId: Type.String({ minLength: 1, description: "The platform's own channel id (not qualified)" }),
    timestamp: Type.String({ format: "date-time", description: "ISO 8601" }),
    sender: Sender,
    text: Type.String({ description: "Text with platform mentions rewritten as @username" }),
    rawText: Type.Optional(Type.String({ description: "Text exactly as the platform sent it" })),
    attachments: Type.Array(Attachment),
    isMention: Type.Boolean({ description: "True when mom should answer: a mention, a DM, a terminal line, a scheduled event" }),
    isDirect: Type.Optional(Type.Boolean({ description: "A direct message rather than a shared channel" })),
    replyTo: Type.Optional(Type.String({ description: "Thread or message the answer belongs under" })),
    metadata: Type.Optional(Metadata),
  },
  { additionalProperties: false, $id: "ChannelMessage" },
);
export type ChannelMessage = Static<typeof ChannelMessage>;
