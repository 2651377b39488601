/**
 * Most characters of an answer a `run_ended` event carries. Every character JSON-escaped to six
 * bytes (`\u0001`) still leaves the event well under NATS's 1 MiB max_payload; a longer answer
 * travels cut, with a note, and stays whole in the channel's log.jsonl.
 */
export const MAX_ANSWER_CHARS = 100_000;

/** The answer as it fits in one outbound event; `logFile` is where its whole text is kept. */
export function fitAnswer(text: string, logFile: string): string {
  if (text.length <= MAX_ANSWER_CHARS) return text;
  return (
    `${text.slice(0, MAX_ANSWER_CHARS)}\n\n` +
    `[answer cut: ${MAX_ANSWER_CHARS.toLocaleString("en")} of ${text.length.toLocaleString("en")} characters shown; the whole answer is in ${logFile}]`
  );
}
