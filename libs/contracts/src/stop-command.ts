// The bus convention every adapter and the runner share: a mention whose text is just "stop"
// ("@mom stop", "Stop!") aborts the channel's run at once instead of queueing.
export function isStopCommand(text: string): boolean {
  const words = text.trim().replace(/^(@\S+\s+)+/, "").trim().toLowerCase();
  return /^stop[.!]*$/.test(words);
}

// `stop jobs` ("@mom stop jobs"): kills the channel's background jobs (the `process` tool) and
// says which; a plain `stop` leaves them running and lists them. Decided by the runner alone.
export function isStopJobsCommand(text: string): boolean {
  const words = text.trim().replace(/^(@\S+\s+)+/, "").trim().toLowerCase();
  return /^stop\s+(all\s+)?jobs[.!]*$/.test(words);
}

// The same convention for a fresh session: a mention whose text is just "/new" ("@mom /new")
// makes the runner start the channel's agent session anew once the runs queued before it are
// done (context.jsonl archived, log.jsonl kept). It travels on mom.in, not mom.ctl, so it is
// ordered with the channel's messages: what was said before it is in the old session, what
// comes after in the new one.
export function isNewSessionCommand(text: string): boolean {
  const words = text.trim().replace(/^(@\S+\s+)+/, "").trim().toLowerCase();
  return words === "/new";
}
