// "stop", "@mom stop", "Stop!" — the one word that must act at once instead of queueing.
export function isStopCommand(text: string): boolean {
  const words = text.trim().replace(/^(@\S+\s+)+/, "").trim().toLowerCase();
  return /^stop[.!]*$/.test(words);
}
