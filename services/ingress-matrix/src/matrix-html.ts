import { escape } from "html-escaper";
import { Marked } from "marked";

// Matrix clients render `org.matrix.custom.html`, a subset of HTML that covers everything Markdown
// produces (headings, lists, tables, code, quotes, links), so the agent's Markdown is rendered as
// marked does by default. HTML the agent wrote itself is shown as text, not passed to clients.
const matrix = new Marked({
  gfm: true,
  async: false,
  renderer: {
    html({ text }) {
      return escape(text);
    },
  },
});

/** Markdown (as the agent and the shared notes write it) -> `formatted_body`. */
export function markdownToMatrixHtml(markdown: string): string {
  return (matrix.parse(markdown) as string).trim();
}
