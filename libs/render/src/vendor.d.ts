// Type declarations for small libraries that ship none.
declare module "markdown-escape" {
  /** Escapes Markdown control characters (`*`, `_`, `` ` ``, `#`, brackets, …). */
  export default function markdownEscape(text: string, skips?: string[]): string;
}
declare module "html-escaper" {
  export function escape(text: string): string;
}
