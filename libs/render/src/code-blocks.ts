import type { Dialect } from "./dialect.js";

/**
 * `text` as code blocks of the dialect, each at most `limit` characters with its fence and escapes,
 * cut at line breaks where it can (a line longer than a block goes on in the next one); nothing is
 * dropped or clipped. For platforms whose messages hold text in pieces of a fixed size (Slack's
 * section blocks), so a long tool call's arguments are shown whole.
 */
export function codeBlocks(text: string, d: Dialect, limit: number): string[] {
  const fits = (t: string) => d.codeBlock(t).length <= limit;
  if (fits(text)) return [d.codeBlock(text)];
  const out: string[] = [];
  let cur = "";
  const push = () => {
    if (cur) out.push(d.codeBlock(cur));
    cur = "";
  };
  for (const line of text.split("\n")) {
    const joined = cur ? `${cur}\n${line}` : line;
    if (fits(joined)) {
      cur = joined;
      continue;
    }
    push();
    if (fits(line)) {
      cur = line;
      continue;
    }
    for (const ch of line) {
      if (!fits(cur + ch)) push();
      cur += ch;
    }
  }
  push();
  return out;
}
