// Platforms cap message length (Discord 2,000, Telegram 4,096, Slack ~4,000 per message in
// practice). A long answer becomes several messages cut where a reader would cut — between
// paragraphs, then lines, then words — and a code block that does not fit is split into several
// complete code blocks, each closed and reopened with its language, so none is left open.

interface Block {
  text: string;
  /** Opening fence line (e.g. "```ts") when the block is a fenced code block. */
  fence?: string;
}

const FENCE_OPEN = /^ {0,3}(`{3,}|~{3,})(.*)$/;

function blocks(text: string): Block[] {
  const out: Block[] = [];
  const lines = text.split("\n");
  let para: string[] = [];
  const endPara = () => {
    if (para.length) out.push({ text: para.join("\n") });
    para = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const open = FENCE_OPEN.exec(line);
    if (open) {
      endPara();
      const marker = open[1]!;
      const body: string[] = [];
      let j = i + 1;
      for (; j < lines.length; j++) {
        const close = new RegExp(`^ {0,3}${marker[0]}{${marker.length},}\\s*$`);
        if (close.test(lines[j]!)) break;
        body.push(lines[j]!);
      }
      out.push({ text: body.join("\n"), fence: line.trimStart() });
      i = j; // the closing line (or past the end for an unclosed fence)
      continue;
    }
    if (line.trim() === "") endPara();
    else para.push(line);
  }
  endPara();
  return out;
}

function render(b: Block): string {
  if (b.fence === undefined) return b.text;
  const marker = /^(`+|~+)/.exec(b.fence)![1]!;
  return `${b.fence}\n${b.text}${b.text ? "\n" : ""}${marker}`;
}

/** Cuts plain text to pieces of at most `max`: at line breaks, else spaces, else anywhere. */
function cutText(text: string, max: number): string[] {
  const pieces: string[] = [];
  let rest = text;
  while (rest.length > max) {
    let cut = rest.lastIndexOf("\n", max);
    if (cut < max / 3) cut = rest.lastIndexOf(" ", max);
    if (cut < max / 3) cut = max;
    pieces.push(rest.slice(0, cut).trimEnd());
    rest = rest.slice(cut).replace(/^[ \n]/, "");
  }
  if (rest) pieces.push(rest);
  return pieces;
}

/** A block too large for one message, as several blocks that each fit. */
function splitBlock(b: Block, limit: number): Block[] {
  if (b.fence === undefined) return cutText(b.text, limit).map((text) => ({ text }));
  const marker = /^(`+|~+)/.exec(b.fence)![1]!;
  const room = limit - b.fence.length - marker.length - 2;
  return cutText(b.text, room).map((text) => ({ text, fence: b.fence }));
}

/** Splits markdown into chunks of at most `limit` characters; short text comes back unchanged. */
export function splitMessage(text: string, limit: number): string[] {
  if (limit < 64) throw new Error(`limit ${limit} is too small to split markdown sensibly`);
  if (text.length <= limit) return [text];
  const chunks: string[] = [];
  let current = "";
  for (const block of blocks(text)) {
    for (const piece of render(block).length > limit ? splitBlock(block, limit) : [block]) {
      const rendered = render(piece);
      if (current && current.length + 2 + rendered.length <= limit) current += `\n\n${rendered}`;
      else {
        if (current) chunks.push(current);
        current = rendered;
      }
    }
  }
  if (current) chunks.push(current);
  return chunks;
}
