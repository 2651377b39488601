// Type declarations for small libraries that ship none, and for what Node 24 has that the ES2023 lib does not.
declare module "markdown-escape" {
  /** Escapes Markdown control characters (`*`, `_`, `` ` ``, `#`, brackets, …). */
  export default function markdownEscape(text: string, skips?: string[]): string;
}
declare module "html-escaper" {
  export function escape(text: string): string;
}
interface RegExpConstructor {
  /** ES2025 (V8 13.6, Node 24): `text` as a pattern that matches it literally. */
  escape(text: string): string;
}
