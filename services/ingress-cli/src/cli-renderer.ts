import { activityLines, AnswerStream, approvalOutcomeLine, approvalPromptText, endNotes, type Ev, formatUsage, type OutboundEvent, plainDialect, RunTracker, spellCodePoint, statusText, stepLine } from "@mom/ingress-sdk";
import { StopReport } from "./stop-report.js";
import type { Interface } from "node:readline";
import cliTruncate from "cli-truncate";
import stringWidth from "string-width";

const TERMINAL = plainDialect();

/**
 * Text from the model, tools or the bus as the terminal shows it: control characters (escape
 * sequences, carriage returns, backspaces…) spelled out (`\x1b`, `\r`), so nothing written
 * before or after an approval prompt can move the cursor, erase it or hide it.
 */
export const forTerminal = (text: string): string => text.replace(/[^\P{Cc}\n\t]/gu, spellCodePoint);

const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

export interface RendererOutput {
  write(text: string): void;
  /** True on a terminal: the working line is redrawn in place; otherwise every change is a line. */
  isTTY?: boolean;
  /** The terminal's width (default 80): the working line is cut to fit one row. */
  columns?: number;
}

/**
 * Draws mom's outbound events in a terminal: a working indicator with the current tool label,
 * one line per finished tool, the answer as the model streams it (or whole at the end when it
 * was not streamed), errors and usage.
 */
export class CliRenderer {
  private status?: string;
  private frame = 0;
  private timer?: NodeJS.Timeout;
  private readonly tracker = new RunTracker();
  private readonly answer = new AnswerStream();
  /** Interactive terminal: readline, reading what the person types; its prompt is the live rows. */
  private rl?: Interface;
  private prompt = "";
  /** Interactive terminal: the part of the last line written that has no newline yet (shown on the live row). */
  private partial = "";
  /** What a `stop` did (`stops.sent()` once it went out), said when the runs it cut short have ended. */
  readonly stops = new StopReport(TERMINAL, (line) => this.notice(line));

  constructor(private readonly out: RendererOutput) {}

  /**
   * The person types on this terminal while mom writes (readline in raw mode, echoing what is
   * typed). From now on readline's prompt is the live rows — the line being written or the working
   * line, then the prompt and what is typed — kept below mom's lines, so what is typed never lands
   * on the spinner's row and the spinner never erases it.
   */
  attachInput(rl: Interface): void {
    this.rl = rl;
    this.prompt = rl.getPrompt();
    // Closed (Ctrl-D, shutdown): the live rows go, a line being written stays, and mom writes on as to any terminal.
    rl.once("close", () => {
      this.clearLive();
      this.out.write(this.partial);
      this.partial = "";
      this.rl = undefined;
      this.draw();
    });
    this.drawLive();
  }

  /**
   * Enter was pressed (readline has moved the cursor below the line): `echo` (the prompt and the
   * line) stays in the transcript above the live rows, which are drawn anew.
   */
  entered(echo: string): void {
    if (!this.rl) return;
    const rows = Math.floor(stringWidth(echo) / this.columns) + this.rl.getPrompt().split("\n").length;
    this.out.write(`\r\x1b[${rows}A\x1b[J${echo}\n`);
    this.drawLive();
  }

  private get columns(): number {
    return Math.max(this.out.columns ?? 80, 10);
  }

  render(e: OutboundEvent): void {
    const ev = e.event;
    if (ev.type === "run_rejected") return this.notice(ev.text);
    const accepted = this.tracker.accept(e);
    if (!accepted) return;
    const cancelled = this.stops.seen(e);
    if (cancelled) return this.notice(cancelled);
    if (ev.type === "run_started") this.answer.reset();
    if (ev.type === "run_ended") return this.ended(ev, accepted.before !== undefined);
    const { view, before } = accepted;
    // The steps grow by one when a tool call, a compaction or a provider's retry is done.
    if (view.steps.length > (before?.steps.length ?? 0)) this.notice(`  ${stepLine(view.steps.at(-1)!, TERMINAL)}`);
    switch (ev.type) {
      case "message_update":
        return this.streamed(this.answer.update(e.runId, ev));
      case "message_end":
        return this.streamed(this.answer.messageEnd(e.runId, ev));
      case "run_queued":
        return this.notice(`… queued behind the current run (position ${ev.position})`);
      case "approval_requested":
        return this.notice(`${approvalPromptText(ev, TERMINAL)}\n  allow once? type y or n`);
      case "approval_resolved":
        return this.notice(`  ${approvalOutcomeLine(ev, TERMINAL)}`);
      case "auth.profile.rotated":
        return this.notice(`  ↻ ${ev.provider} credential ${ev.from} refused (${ev.reason.replace("_", " ")}), continuing with ${ev.to}`);
      case "run_started":
      case "tool_execution_start":
      case "tool_execution_update":
      case "tool_execution_end":
      case "compaction_start":
      case "compaction_end":
        // A running tool's latest output line follows its label on the working line.
        return this.setStatus(statusText(view.activity, { oneLine: true }));
    }
  }

  private ended(ev: Ev<"run_ended">, seenBefore: boolean): void {
    this.clearStatus();
    this.endAnswer();
    // a scheduled check with nothing to report ([SILENT]) leaves no trace at all
    if (ev.silent) return;
    if (ev.finalText && !this.answer.showed(ev.finalText)) this.print(`${forTerminal(ev.finalText)}\n`);
    for (const note of endNotes(ev, TERMINAL)) this.print(`${forTerminal(note)}\n`);
    for (const a of activityLines(ev.toolActivity, TERMINAL)) this.print(`  ${forTerminal(a)}\n`);
    // A reply that was no model run (e.g. `/new`'s) has no usage to show.
    if (seenBefore || ev.usage.totalTokens > 0) this.print(`  ${formatUsage(ev.usage, ev.durationMs)}\n`);
  }

  close(): void {
    this.stops.close();
    this.clearStatus();
  }

  /** The answer's words as the model writes them (AnswerStream): the working line makes way. */
  private streamed(text: string): void {
    if (!text) return;
    this.clearStatus();
    this.print(forTerminal(text));
  }

  /** Finishes the line of a streamed answer, if one is open. */
  private endAnswer(): void {
    const nl = this.answer.end();
    if (nl) this.print(nl);
  }

  /**
   * Writes text for the transcript. Without an input line, a working line on a terminal makes way
   * and comes back below it. With one, the live rows are taken away first and drawn again after
   * (`print("")` redraws them), and a line still being written (no newline yet) waits on the
   * live row until its newline comes.
   */
  private print(text: string): void {
    if (!this.rl) {
      const working = this.out.isTTY && this.status !== undefined;
      this.out.write(working ? `\r\x1b[2K${text}` : text);
      if (working) this.draw();
      return;
    }
    this.clearLive();
    const all = this.partial + text;
    const cut = all.lastIndexOf("\n") + 1;
    if (cut) this.out.write(all.slice(0, cut));
    this.partial = all.slice(cut);
    this.drawLive();
  }

  /** Interactive: moves from the input's cursor to the top of the live rows and erases them all. */
  private clearLive(): void {
    const up = this.rl!.getCursorPos().rows;
    this.out.write(`\r${up ? `\x1b[${up}A` : ""}\x1b[J`);
  }

  /**
   * Interactive, the cursor where the live rows start: readline draws them as its prompt, the live
   * row (if any) above the input line. It must not move up first: where its cursor is, it does not
   * always know (a pasted line that wraps).
   */
  private drawLive(): void {
    const row = this.liveText();
    this.rl!.setPrompt(row === undefined ? this.prompt : `${row}\n${this.prompt}`);
    (this.rl as unknown as { prevRows: number }).prevRows = 0;
    this.rl!.prompt(true);
  }

  /** The live row: a line being written, else the working line, cut to fit one row with its end (the newest words) kept. */
  private liveText(): string | undefined {
    const row = this.partial || (this.status === undefined ? undefined : `${FRAMES[this.frame]} ${this.status}`);
    // One column spare: a row filled to the last column wraps on some terminals.
    return row && cliTruncate(row, this.columns - 1, { position: "start" });
  }

  private setStatus(text: string): void {
    this.endAnswer();
    text = forTerminal(text);
    // Not a terminal: a line each time it changes.
    if (!this.out.isTTY && text !== this.status) this.out.write(`${text}\n`);
    this.status = text;
    if (!this.out.isTTY) return;
    this.draw();
    this.timer ??= setInterval(() => this.draw(), 100).unref();
  }

  private draw(): void {
    if (this.status === undefined) return;
    this.frame = (this.frame + 1) % FRAMES.length;
    if (!this.rl) return void this.out.write(`\r\x1b[2K${FRAMES[this.frame]} ${this.status}`);
    if (this.partial) return;
    if (this.rl.getPrompt() === this.prompt) return this.print(""); // the working row is new
    // Only the working row changes: the cursor goes up to it and back to where the person types.
    this.rl.setPrompt(`${this.liveText()}\n${this.prompt}`);
    this.out.write(`\x1b7\x1b[${this.rl.getCursorPos().rows}A\r\x1b[2K${this.liveText()}\x1b8`);
  }

  private clearStatus(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    const shown = this.status !== undefined;
    this.status = undefined;
    if (!this.out.isTTY || !shown) return;
    if (!this.rl) return void this.out.write("\r\x1b[2K");
    if (!this.partial) this.print("");
  }

  /** A line of its own that does not disturb the working indicator (e.g. "📎 chart.png saved to …"). */
  notice(text: string): void {
    this.endAnswer();
    this.print(`${forTerminal(text)}\n`);
  }
}
