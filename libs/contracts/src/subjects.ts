import { assertAdapterName, type ChannelRef, escapeChannelToken, unescapeChannelToken } from "./channel-id.js";

export type ChannelSubjectKind = "in" | "out" | "ctl" | "receipts";
export const CHANNEL_SUBJECT_KINDS: readonly ChannelSubjectKind[] = ["in", "out", "ctl", "receipts"];

export type StreamKey = "IN" | "OUT" | "CTL" | "RECEIPTS" | "DLQ";

/**
 * Subject and stream names for one namespace. Production uses the default `mom`; tests that share
 * a NATS server pass their own namespace so their streams, durables and dedupe windows never meet.
 */
export interface Subjects {
  readonly namespace: string;
  channel(kind: ChannelSubjectKind, ref: ChannelRef): string;
  /** `mom.<kind>.>` or, with an adapter, `mom.<kind>.<adapter>.*` */
  wildcard(kind: ChannelSubjectKind | "dlq", adapter?: string): string;
  dlq(stage: string): string;
  stream(key: StreamKey): string;
  /** Parses `mom.<kind>.<adapter>.<escaped channel>`; undefined when it is not one. */
  parse(subject: string): ({ kind: ChannelSubjectKind } & ChannelRef) | undefined;
}

const NAMESPACE_PATTERN = /^[a-z][a-z0-9-]*$/;

export function createSubjects(namespace = "mom"): Subjects {
  if (!NAMESPACE_PATTERN.test(namespace)) throw new Error(`invalid bus namespace ${JSON.stringify(namespace)}`);
  const streamPrefix = namespace.toUpperCase().replace(/-/g, "_");
  return {
    namespace,
    channel(kind, ref) {
      assertAdapterName(ref.adapter);
      return `${namespace}.${kind}.${ref.adapter}.${escapeChannelToken(ref.channelId)}`;
    },
    wildcard(kind, adapter) {
      if (adapter === undefined) return `${namespace}.${kind}.>`;
      assertAdapterName(adapter);
      return `${namespace}.${kind}.${adapter}.*`;
    },
    dlq(stage) {
      if (!/^[a-z0-9-]+$/.test(stage)) throw new Error(`invalid dlq stage ${JSON.stringify(stage)}`);
      return `${namespace}.dlq.${stage}`;
    },
    stream(key) {
      return `${streamPrefix}_${key}`;
    },
    parse(subject) {
      const parts = subject.split(".");
      if (parts.length !== 4 || parts[0] !== namespace) return undefined;
      const kind = parts[1] as ChannelSubjectKind;
      if (!CHANNEL_SUBJECT_KINDS.includes(kind)) return undefined;
      try {
        assertAdapterName(parts[2]!);
        return { kind, adapter: parts[2]!, channelId: unescapeChannelToken(parts[3]!) };
      } catch {
        return undefined;
      }
    },
  };
}

export const subjects: Subjects = createSubjects();
