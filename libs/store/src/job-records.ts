import { validator } from "@mom/contracts";
import Type, { type Static } from "typebox";
import { parseJsonLines, type SkippedLine } from "./log-lines.js";

/**
 * A background job was started (services/agent-runner/src/jobs): enough for the channel's next
 * owner to say it was lost and to kill what is left of it (`execId`, the command's MOM_EXEC_ID).
 */
export const JobStarted = Type.Object(
  {
    type: Type.Literal("started"),
    id: Type.String({ minLength: 1, description: "The job's id as the model and people see it (job-<hex>)" }),
    execId: Type.String({ minLength: 1, description: "The command's MOM_EXEC_ID marker" }),
    command: Type.String(),
    startedAt: Type.String({ format: "date-time" }),
    runner: Type.String({ description: "The runner that started it" }),
    host: Type.String({ description: "That runner's host: leftovers can only be killed from there" }),
    startedBy: Type.Object({ id: Type.String(), username: Type.String() }, { additionalProperties: false }),
    replyTo: Type.Optional(Type.String({ description: "Thread of the message whose run started it" })),
  },
  { additionalProperties: false },
);
export type JobStarted = Static<typeof JobStarted>;

/** The job ended and the channel was told (or needed no telling). */
export const JobEnded = Type.Object(
  {
    type: Type.Literal("ended"),
    id: Type.String({ minLength: 1 }),
    endedAt: Type.String({ format: "date-time" }),
  },
  { additionalProperties: false },
);
export type JobEnded = Static<typeof JobEnded>;

/** One line of a channel's `jobs.jsonl`, which only the runner writes (read-only to the channel's tools). */
export const JobRecord = Type.Union([JobStarted, JobEnded]);
export type JobRecord = Static<typeof JobRecord>;

const jobRecordValidator = validator(JobRecord);

/** The jobs of `jobs.jsonl` started and not ended, in start order; unreadable lines are reported. */
export function runningJobs(text: string): { running: JobStarted[]; skipped: SkippedLine[] } {
  const { entries, skipped } = parseJsonLines(text, jobRecordValidator, "job record");
  const running = new Map<string, JobStarted>();
  for (const e of entries) {
    if (e.type === "started") running.set(e.id, e);
    else running.delete(e.id);
  }
  return { running: [...running.values()], skipped };
}

export function jobRecordProblem(record: JobRecord): string | undefined {
  const check = jobRecordValidator.check(record);
  return check.ok ? undefined : check.reason;
}
