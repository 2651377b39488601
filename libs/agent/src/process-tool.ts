import type { ToolDefinition } from "@mariozechner/pi-coding-agent";
import type { Risk, ToolGate } from "@mom/tools";
import Type, { type Static } from "typebox";

export const PROCESS_TOOL_NAME = "process";

export const ProcessParams = Type.Object({
  action: Type.Union([Type.Literal("start"), Type.Literal("poll"), Type.Literal("list"), Type.Literal("kill")], {
    description: "start a command in the background; poll one job's state and new output; list this channel's jobs; kill one job",
  }),
  command: Type.Optional(Type.String({ description: "start: the bash command, run in this channel's directory and sandbox as bash would" })),
  id: Type.Optional(Type.String({ description: "poll, kill: the job's id (job-…), as start or list gave it" })),
});
export type ProcessParams = Static<typeof ProcessParams>;

/** What the tool shows of a job. */
export interface JobView {
  id: string;
  command: string;
  running: boolean;
  /** `running for 2m 3s`, `exited with code 0 after 12s`, `killed by the process tool after 1m`. */
  state: string;
  outputBytes: number;
}

export interface JobLimitsView {
  maxPerChannel: number;
  maxRuntimeMs: number;
  outputKeptBytes: number;
}

/** One channel's background jobs, as the runner keeps them (services/agent-runner/src/jobs). */
export interface BackgroundJobs {
  readonly limits: JobLimitsView;
  /** Starts a job for the run in progress; throws a refusal the model can act on. */
  start(command: string): Promise<JobView>;
  poll(id: string): { job: JobView; output: string; dropped: number };
  list(): JobView[];
  kill(id: string): Promise<{ job: JobView; tail: string }>;
}

/** start and kill run or stop commands, as bash does; poll and list only look. */
const RISK: Record<ProcessParams["action"], Risk> = { start: "destructive", kill: "destructive", poll: "read", list: "read" };

const minutes = (ms: number) => Math.round(ms / 60_000);
const kb = (bytes: number) => `${Math.round(bytes / 1024)} KB`;

/** The system prompt's note on background jobs, when the channel may use them. */
export function processPrompt(limits: JobLimitsView): string {
  return `## Background jobs
\`${PROCESS_TOOL_NAME}\` runs a command in the background, in this channel's sandbox with the same limits as bash, past the end of your answer: use it for what takes longer than a bash call should (a test suite, a build) or when people want to hear when something is done. \`start\` gives you its id; \`poll\` shows its new output; \`list\` and \`kill\` do what they say. When a job ends you get a message from @jobs starting with \`[JOB <id> …]\` with the end of its output: tell the people how it went. At most ${limits.maxPerChannel} at once, each stopped after ${minutes(limits.maxRuntimeMs)} min, the last ${kb(limits.outputKeptBytes)} of its output kept (redirect to a file under scratch/ to keep all of it). Jobs end when the runner restarts (you are told); people stop them with \`stop jobs\`.`;
}

/**
 * `process`: background jobs of the channel (start, poll, list, kill). Every call goes through the
 * gate itself — policy, approvals and receipts, with the risk of its action — since one tool id
 * carries both a command that runs and a look that changes nothing.
 */
export function createProcessTool(jobs: BackgroundJobs, gate: ToolGate): ToolDefinition<typeof ProcessParams, { job?: JobView; jobs?: JobView[] }> {
  return {
    name: PROCESS_TOOL_NAME,
    label: "Background job",
    description:
      "Background jobs of this channel: start a bash command that keeps running after your answer (in the channel's sandbox, same limits as bash), " +
      "poll its state and new output, list the jobs, kill one. When a job ends you get a message [JOB <id> …] and a turn to report it.",
    parameters: ProcessParams,
    execute(toolCallId, params, signal) {
      const action = params.action;
      return gate.run({ toolCallId, toolId: PROCESS_TOOL_NAME, risk: RISK[action] ?? "destructive", args: params }, signal, async () => {
        switch (action) {
          case "start": {
            if (typeof params.command !== "string" || !params.command.trim()) throw new Error("process start needs `command`: the bash command to run in the background.");
            const job = await jobs.start(params.command);
            const l = jobs.limits;
            return text(
              `Started ${job.id}: \`${params.command}\`. It runs in the background in this channel's sandbox (stopped after ${minutes(l.maxRuntimeMs)} min; the last ${kb(l.outputKeptBytes)} of its output kept). ` +
                `When it ends you get a message [JOB ${job.id} …] and a turn to report it. process poll with id ${job.id} shows its output so far; process kill stops it.`,
              { job },
            );
          }
          case "poll": {
            const { job, output, dropped } = jobs.poll(needId(params, "poll"));
            const head = `${job.id} (\`${job.command}\`): ${job.state}; ${job.outputBytes} bytes of output in all.`;
            const lost = dropped > 0 ? `\n[${dropped} bytes printed since the last poll are not kept: only the last ${kb(jobs.limits.outputKeptBytes)} are]` : "";
            return text(output ? `${head}${lost}\nOutput since the last poll:\n${output}` : `${head}${lost}\nNo new output since the last poll.`, { job });
          }
          case "list": {
            const all = jobs.list();
            const running = all.filter((j) => j.running).length;
            return text(
              all.length
                ? [`${running} of at most ${jobs.limits.maxPerChannel} running:`, ...all.map((j) => `- ${j.id}: ${j.state} — \`${j.command}\``)].join("\n")
                : "No background jobs in this channel.",
              { jobs: all },
            );
          }
          case "kill": {
            const { job, tail } = await jobs.kill(needId(params, "kill"));
            return text(`${job.id}: ${job.state}.${tail.trim() ? `\nIts output ends with:\n${tail}` : ""}`, { job });
          }
          default:
            throw new Error(`unknown action ${JSON.stringify(action)}: use start, poll, list or kill.`);
        }
      });
    },
  };
}

function needId(params: ProcessParams, action: string): string {
  if (typeof params.id !== "string" || !params.id.trim()) throw new Error(`process ${action} needs \`id\`: the job's id (process list shows them).`);
  return params.id;
}

function text<D>(t: string, details: D) {
  return { content: [{ type: "text" as const, text: t }], details };
}
