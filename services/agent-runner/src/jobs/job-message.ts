import type { ChannelMessage, ChannelRef } from "@mom/contracts";

/**
 * Who a job's end comes from, in the channel's log and in the agent's context: like the
 * scheduler's messages, a bot of mom's own (`[@jobs]: [JOB …]`), never a person.
 */
export const JOB_SENDER = { id: "jobs", username: "jobs", isBot: true } as const;

/** Whether a message is a job's end (published by a runner, docs/tools.md#background-jobs-process). */
export function isJobMessage(m: Pick<ChannelMessage, "sender">): boolean {
  return m.sender.isBot && m.sender.id === JOB_SENDER.id;
}

/**
 * The ChannelMessage id of a job's end, and with the adapter and channel in front its Nats-Msg-Id
 * (the ingresses' `<adapter>:<channel>:<message id>`). One id whatever ended the job — it exited,
 * it was stopped at shutdown, or the next owner found it lost — so a runner that told the channel
 * and died before writing that down, and the next owner telling it again, make one message.
 */
export function jobEndId(jobId: string): string {
  return `job:${jobId}:end`;
}

/** The Nats-Msg-Id of a message the runner publishes on a channel's inbound subject. */
export function inboundMsgIdOf(ref: ChannelRef, message: Pick<ChannelMessage, "id">): string {
  return `${ref.adapter}:${ref.channelId}:${message.id}`;
}

export interface JobEndFacts {
  jobId: string;
  command: string;
  startedAt: string;
  startedBy: { id: string; username: string };
  replyTo?: string;
  /** `exited`, `failed` (a limit stopped it), `killed` (by the runner: shutdown, hand-over) or `lost` (found by the next owner). */
  status: "exited" | "failed" | "killed" | "lost";
  exitCode?: number | null;
  /** One line: what happened (`exit code 1 after 3m 12s`, `killed: the runner shut down`). */
  summary: string;
  /** The end of its output, when there is any to show. */
  output?: { text: string; shownBytes: number; totalBytes: number };
}

/** Shown of a job's output in its end message (the log keeps the message): `process poll` has more while the runner holds it. */
export const END_OUTPUT_BYTES = 2000;

/**
 * The message that gives the agent a turn when a job ends: `[JOB <id> <summary>]`, the command,
 * the end of its output, and what to do (tell the people who asked).
 */
export function jobEndMessage(ref: ChannelRef, f: JobEndFacts, now = new Date()): ChannelMessage {
  const lines = [`[JOB ${f.jobId} ${f.summary}] \`${oneLine(f.command)}\` (started by @${f.startedBy.username} at ${f.startedAt})`];
  if (f.output && f.output.text.trim()) {
    const of = f.output.totalBytes > f.output.shownBytes ? `the last ${f.output.shownBytes} of ${f.output.totalBytes} bytes` : `${f.output.totalBytes} bytes`;
    lines.push(`Output (${of}):`, f.output.text.replace(/\s+$/, ""));
  } else if (f.status !== "lost") {
    lines.push("It printed nothing.");
  }
  lines.push(
    f.status === "lost"
      ? "Its output is gone. Tell the people in this channel in a sentence; start it again only if they ask."
      : "Tell the people in this channel how it went, in a sentence or two.",
  );
  return {
    id: jobEndId(f.jobId),
    channelId: ref.channelId,
    timestamp: now.toISOString(),
    sender: { ...JOB_SENDER },
    text: lines.join("\n"),
    attachments: [],
    isMention: true,
    ...(f.replyTo !== undefined && { replyTo: f.replyTo }),
    metadata: {
      job: {
        id: f.jobId,
        command: f.command.slice(0, 2000),
        status: f.status,
        ...(f.exitCode !== undefined && { exitCode: f.exitCode }),
        startedAt: f.startedAt,
        startedBy: f.startedBy,
        endedAt: now.toISOString(),
      },
    },
  };
}

function oneLine(command: string): string {
  const flat = command.replace(/\s*\n\s*/g, " ⏎ ");
  return flat.length > 300 ? `${flat.slice(0, 297)}...` : flat;
}
