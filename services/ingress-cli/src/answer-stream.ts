const SILENT = "[SILENT]";

/**
 * The answer as the model writes it: streamed text deltas of one block at a time, written as they
 * arrive. A block that may still turn out to be `[SILENT]` is held back, so a silent run shows
 * nothing; the run's end then needs to print its answer only when it was not streamed whole.
 */
export class AnswerStream {
  private block?: string;
  private text = "";
  private shown = 0;
  /** A line is open: text was written without its newline yet. */
  private open = false;
  /** Blocks of this run that had deltas. */
  private readonly seen = new Set<string>();

  /** What to write for a delta of block `key` (a new key ends the previous block first). */
  delta(key: string, delta: string): string {
    const prefix = key === this.block ? "" : this.end();
    if (key !== this.block) {
      this.seen.add(key);
      this.block = key;
      this.text = "";
      this.shown = 0;
    }
    this.text += delta;
    if (SILENT.startsWith(this.text.trimStart())) return prefix;
    const pending = this.text.slice(this.shown);
    this.shown = this.text.length;
    if (pending) this.open = !pending.endsWith("\n");
    return prefix + pending;
  }

  /**
   * What to write of block `key` now that its message ended with the whole text `full`: the runner
   * does not stream the last words again when the message's end carries them (a short answer is
   * then not streamed at all), and a model that does not stream sends only the end.
   */
  complete(key: string, full: string): string {
    if (key === this.block) return full.startsWith(this.text) ? this.delta(key, full.slice(this.text.length)) : "";
    return this.seen.has(key) ? "" : this.delta(key, full);
  }

  /** Ends the block being streamed (a tool starts, the message ends): the newline it still needs. */
  end(): string {
    const out = this.open ? "\n" : "";
    this.open = false;
    this.block = undefined;
    return out;
  }

  /** Whether `finalText` is exactly what was streamed last, all of it on screen. */
  showed(finalText: string): boolean {
    return this.shown > 0 && this.shown === this.text.length && this.text.trim() === finalText.trim();
  }

  /** A new run starts from nothing. */
  reset(): void {
    this.seen.clear();
    this.block = undefined;
    this.text = "";
    this.shown = 0;
    this.open = false;
  }

  get streaming(): boolean {
    return this.open;
  }
}
