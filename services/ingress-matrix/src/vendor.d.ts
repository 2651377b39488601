// What Node 24 has that the ES2023 lib does not.
interface RegExpConstructor {
  /** ES2025 (V8 13.6, Node 24): `text` as a pattern that matches it literally. */
  escape(text: string): string;
}
