import { type Static, Type } from "typebox";
import { assertAdapterName, type ChannelRef, escapeChannelToken, unescapeChannelToken } from "./channel-id.js";

// Runner replicas share channels through two KV buckets (docs/scaling.md): one heartbeat per live
// runner, and one record per channel saying who owns it and how far its messages are done.

/** `<ns>.runners` KV bucket name and `<ns>.channels` bucket name, e.g. MOM_RUNNERS. */
export function runnersBucket(namespace: string): string {
  return `${namespace.toUpperCase().replace(/-/g, "_")}_RUNNERS`;
}
export function channelsBucket(namespace: string): string {
  return `${namespace.toUpperCase().replace(/-/g, "_")}_CHANNELS`;
}

// KV keys allow [-/_=.A-Za-z0-9]; the subject escaping's `~` becomes `=`, which the escaping never
// emits itself, so the key stays a bijection of the channel.
export function channelKey(ref: ChannelRef): string {
  assertAdapterName(ref.adapter);
  return `${ref.adapter}.${escapeChannelToken(ref.channelId).replace(/~/g, "=")}`;
}

export function parseChannelKey(key: string): ChannelRef {
  const dot = key.indexOf(".");
  if (dot <= 0) throw new Error(`invalid channel key ${JSON.stringify(key)}`);
  const adapter = key.slice(0, dot);
  assertAdapterName(adapter);
  return { adapter, channelId: unescapeChannelToken(key.slice(dot + 1).replace(/=/g, "~")) };
}

export const RunnerHeartbeat = Type.Object(
  {
    id: Type.String({ minLength: 1 }),
    /** Channels this runner owns right now: what the others balance against. */
    channels: Type.Integer({ minimum: 0 }),
    startedAt: Type.String(),
    /** Set while the runner shuts down: give it nothing new. */
    leaving: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type RunnerHeartbeat = Static<typeof RunnerHeartbeat>;

/** The run a channel's owner had started and not finished, so that a new owner can resume it. */
export const InterruptedRun = Type.Object(
  {
    /** MOM_IN stream sequence of the triggering message. */
    seq: Type.Integer({ minimum: 1 }),
    messageId: Type.String(),
    runId: Type.String(),
    /** Earlier attempts of this message that ended with their runner dying (poison detection). */
    crashes: Type.Integer({ minimum: 0 }),
    /** "running": the owner may have died mid-run; "handed-over": it stopped the run on purpose. */
    phase: Type.Union([Type.Literal("running"), Type.Literal("handed-over")]),
  },
  { additionalProperties: false },
);
export type InterruptedRun = Static<typeof InterruptedRun>;

export const ChannelRecord = Type.Object(
  {
    /** Runner id, or null when nobody holds the channel (idle, or its last runner left). */
    owner: Type.Union([Type.String({ minLength: 1 }), Type.Null()]),
    /** Every MOM_IN message of this channel up to this stream sequence is fully handled. */
    doneSeq: Type.Integer({ minimum: 0 }),
    /** Creation time of the MOM_IN stream doneSeq counts in; a re-created stream starts over. */
    streamCreated: Type.String(),
    /** Unowned with messages still to handle: the next runner must take it without waiting for new traffic. */
    pending: Type.Optional(Type.Boolean()),
    run: Type.Optional(InterruptedRun),
  },
  { additionalProperties: false },
);
export type ChannelRecord = Static<typeof ChannelRecord>;
