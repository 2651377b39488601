import headless from "@xterm/headless";

const { Terminal } = headless as unknown as typeof import("@xterm/headless");

/**
 * What a terminal shows after `bytes` were written to it (xterm.js, headless): its rows, trailing
 * blanks trimmed, empty rows at the bottom dropped, and the cursor's row.
 */
export async function screenOf(bytes: string, cols = 80, rows = 60): Promise<{ rows: string[]; cursorRow: string }> {
  const term = new Terminal({ cols, rows, allowProposedApi: true });
  // A terminal's line discipline turns "\n" into "\r\n" (onlcr); xterm is fed what the tty would send.
  await new Promise<void>((r) => term.write(bytes.replace(/\r?\n/g, "\r\n"), r));
  const buf = term.buffer.active;
  const lines: string[] = [];
  for (let i = 0; i < buf.length; i++) lines.push(buf.getLine(i)?.translateToString(true) ?? "");
  const cursorRow = lines[buf.baseY + buf.cursorY] ?? "";
  while (lines.length && !lines.at(-1)) lines.pop();
  term.dispose();
  return { rows: lines, cursorRow };
}
