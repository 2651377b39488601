// The bus convention every adapter and the runner share: a mention whose text is just "stop"
// ("@mom stop", "Stop!") aborts the channel's run at once instead of queueing.
export function isStopCommand(text: string): boolean {
  const words = text.trim().replace(/^(@\S+\s+)+/, "").trim().toLowerCase();
  return /^stop[.!]*$/.test(words);
}
