import type { JobView } from "@mom/agent";

const line = (j: JobView) => `- \`${j.id}\` ${j.state}: \`${short(j.command)}\``;

function short(command: string): string {
  const flat = command.replace(/\s+/g, " ").trim();
  return flat.length > 80 ? `${flat.slice(0, 77)}...` : flat;
}

/** What a `stop` says when background jobs keep running: they are not stopped by it. */
export function jobsStillRunningText(running: JobView[]): string {
  const n = running.length;
  return [`${n === 1 ? "A background job is" : `${n} background jobs are`} still running (\`stop\` ends only the answer in progress):`, ...running.map(line), "Say `stop jobs` to kill them."].join(
    "\n",
  );
}

/** What `stop jobs` says: the jobs it killed, or that there were none. */
export function jobsKilledText(killed: JobView[]): string {
  if (killed.length === 0) return "No background jobs were running.";
  return [`Killed ${killed.length === 1 ? "1 background job" : `${killed.length} background jobs`}:`, ...killed.map(line)].join("\n");
}
