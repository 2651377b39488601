import type { ChannelMessage, ChannelRef } from "@mom/contracts";
import { formatDuration, type ScheduledEvent } from "@mom/events";

/** Who a fired event comes from, in the channel's log and in the agent's context. */
export const SCHEDULER_SENDER = { id: "scheduler", username: "scheduler", isBot: true } as const;

/**
 * The Nats-Msg-Id (and ChannelMessage id) of one firing: `<file>@<fire time>`, for a channel's own
 * events `<dir>/<file>@<fire time>` (`channels/<adapter>/<escaped id>/events/…`: two channels'
 * files of the same name never share an id, which JetStream would drop as a duplicate). The fire
 * time comes from the file alone — the tick of a periodic event, the `at` of a one-shot, the
 * modification time of an immediate file — so every replica computes the same id and JetStream
 * keeps one message.
 */
export function firingId(file: string, fireTimeMs: number, dir?: string): string {
  return `${dir ? `${dir}/` : ""}${file}@${new Date(fireTimeMs).toISOString()}`;
}

export interface Firing {
  event: ScheduledEvent;
  fireTimeMs: number;
  firedAtMs: number;
  /** Minutes late (one-shots fired after their time), when at least one. */
  lateMinutes?: number;
  /** The channel's own events directory it came from (workspace-relative); unset for the operator's events/. */
  dir?: string;
}

/** The `<schedule>` part of `[EVENT:<file>:<type>:<schedule>]`. */
function scheduleLabel(e: ScheduledEvent): string {
  return e.type === "periodic" ? e.schedule : e.type === "one-shot" ? e.at : "immediate";
}

/** The message the runner sees: `[EVENT:<file>:<type>:<schedule>] text`, with a late marker when late. */
export function firingMessage(f: Firing): ChannelMessage {
  const e = f.event;
  const late = f.lateMinutes ? `[late by ${formatDuration(f.lateMinutes * 60_000)}] ` : "";
  return {
    id: firingId(e.file, f.fireTimeMs, f.dir),
    channelId: e.ref.channelId,
    timestamp: new Date(f.firedAtMs).toISOString(),
    sender: { ...SCHEDULER_SENDER },
    text: `[EVENT:${e.file}:${e.type}:${scheduleLabel(e)}] ${late}${e.text}`,
    attachments: [],
    isMention: true,
    metadata: {
      event: {
        file: e.file,
        type: e.type,
        ...(e.type === "periodic" && { schedule: e.schedule, timezone: e.timezone }),
        ...(e.type === "one-shot" && { at: e.at }),
        fireTime: new Date(f.fireTimeMs).toISOString(),
        firedAt: new Date(f.firedAtMs).toISOString(),
        ...(f.lateMinutes && { late: true, lateMinutes: f.lateMinutes }),
      },
    },
  };
}

/** A file that was moved aside (invalid/ or missed/), to be told in its channel. */
export interface Report {
  kind: "invalid" | "missed";
  file: string;
  /** Where it is now, relative to the workspace, e.g. events/invalid/standup.json. */
  movedTo: string;
  reason: string;
  /** For a missed one-shot: when it was due and what it would have said. */
  at?: string;
  text?: string;
  /** The channel's own events directory the file was in (workspace-relative); unset for the operator's. */
  dir?: string;
}

function reportLine(r: Report): string {
  if (r.kind === "missed") {
    return `- events/${r.file} was not fired: ${r.reason}. It was moved to ${r.movedTo}. Its text was: ${JSON.stringify(r.text ?? "")}`;
  }
  return `- events/${r.file} was rejected: ${r.reason}. It was moved to ${r.movedTo} (the reason is in ${r.movedTo}.error) and will not fire.`;
}

/**
 * Reports travel as an ordinary scheduler message that starts a run: the agent tells the people in
 * the channel in their platform's words (and, as the usual author of event files, can fix the
 * file). One message carries every report of a channel that waited for the per-minute budget.
 */
export function reportMessage(ref: ChannelRef, reports: Report[], nowMs: number): ChannelMessage {
  const first = reports[0]!;
  const kinds = [...new Set(reports.map((r) => r.kind))];
  const kind = kinds.length === 1 ? kinds[0]! : "problems";
  const head =
    reports.length === 1
      ? `[EVENT:${first.file}:${first.kind}${first.kind === "missed" && first.at ? `:${first.at}` : ""}]`
      : `[EVENT:${reports.length} files:${kind}]`;
  const what = reports.length === 1 ? (first.kind === "missed" ? "A scheduled event was missed" : "An event file could not be used") : `${reports.length} event files need attention`;
  const lines = reports.slice(0, 20).map(reportLine);
  if (reports.length > 20) lines.push(`- and ${reports.length - 20} more (see events/invalid/ and events/missed/)`);
  const ask = reports.some((r) => r.kind === "invalid")
    ? "Tell the people in this channel in a sentence or two. If you wrote such a file, write a corrected one."
    : "Tell the people in this channel in a sentence or two.";
  return {
    id: `${first.dir ? `${first.dir}/` : ""}${first.file}@${first.kind}@${new Date(nowMs).toISOString()}`,
    channelId: ref.channelId,
    timestamp: new Date(nowMs).toISOString(),
    sender: { ...SCHEDULER_SENDER },
    text: `${head} ${what}:\n${lines.join("\n")}\n${ask}`,
    attachments: [],
    isMention: true,
    metadata: {
      event: {
        type: kind,
        file: first.file,
        firedAt: new Date(nowMs).toISOString(),
        reports: reports.map((r) => ({ kind: r.kind, file: r.file, movedTo: r.movedTo, reason: r.reason, ...(r.at && { at: r.at }) })),
      },
    },
  };
}
