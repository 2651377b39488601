import { MAX_EVENT_TEXT } from "@mom/contracts";
import type { Ev } from "./run-view.js";

const SILENT = "[SILENT]";

/**
 * The answer of a run as an EventSurface streams it (a terminal, a UI writing the answer as the
 * model does): the text each `message_update` and `message_end` adds, to be written as it comes.
 * One content block is written at a time; a block that may still turn out to be `[SILENT]` is held
 * back, so a silent run shows nothing. A `message_end` completes what was not streamed — the
 * runner does not stream again the words its end carries, a model that does not stream sends only
 * the end — except a block longer than MAX_EVENT_TEXT, cut for the bus, whose deltas carry it
 * whole. `showed(finalText)` says whether the run's end still has to write its answer.
 */
export class AnswerStream {
  private block?: string;
  private text = "";
  private shown = 0;
  /** A line is open: text was written without its newline yet. */
  private open = false;
  /** Blocks of this run that had deltas. */
  private readonly seen = new Set<string>();

  /** What to write for a `message_update` of run `runId` (its text deltas; nothing for the others). */
  update(runId: string, ev: Ev<"message_update">): string {
    const d = ev.assistantMessageEvent;
    return d.type === "text_delta" && d.delta ? this.delta(`${runId}:${d.contentIndex ?? 0}`, d.delta) : "";
  }

  /** What to write for a `message_end`: the assistant's text blocks beyond what was streamed, then the streamed line's newline. */
  messageEnd(runId: string, ev: Ev<"message_end">): string {
    const { role, content } = ev.message as { role: string; content?: unknown };
    let out = "";
    if (role === "assistant" && Array.isArray(content)) {
      content.forEach((block: { type?: unknown; text?: unknown }, i) => {
        if (block.type === "text" && typeof block.text === "string" && block.text.length <= MAX_EVENT_TEXT) out += this.complete(`${runId}:${i}`, block.text);
      });
    }
    return out + this.end();
  }

  /** Ends the block being streamed (a tool starts, the run ends): the newline its line still needs, or "". */
  end(): string {
    const out = this.open ? "\n" : "";
    this.open = false;
    this.block = undefined;
    return out;
  }

  /** Whether `finalText` is exactly what was streamed last, all of it written. */
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

  /** What to write for a delta of block `key` (a new key ends the previous block first). */
  private delta(key: string, delta: string): string {
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

  /** What to write of block `key` now that its message ended with the whole text `full`. */
  private complete(key: string, full: string): string {
    if (key === this.block) return full.startsWith(this.text) ? this.delta(key, full.slice(this.text.length)) : "";
    return this.seen.has(key) ? "" : this.delta(key, full);
  }
}
