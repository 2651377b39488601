import { MAX_EVENT_TEXT, type OutboundEvent, spellCodePoint } from "@mom/ingress-sdk";
import { formatUsage } from "@mom/ingress-sdk";
import { AnswerStream } from "./answer-stream.js";
import { activityLines, approvalOutcomeLine, approvalPromptText, endNotes, plainDialect, RunTracker, statusText, stepLine } from "@mom/ingress-sdk";
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
 * The line the person is typing (a terminal read in raw mode, readline echoing it), kept on the
 * last rows of the screen: everything mom writes goes above it, the working line just above it,
 * so what is typed never lands on the spinner's row and the spinner never erases it.
 */
export interface InputLine {
  /** Rows from the prompt's first row down to the cursor (0 while the input fits one row). */
  cursorRow(): number;
  /** Writes the prompt and what is typed so far at the cursor's row, the cursor where it was in it. */
  redraw(): void;
}

/** `text` cut to `width` columns, its end kept (the newest words of a line being written). */
function fitEnd(text: string, width: number): string {
  if (stringWidth(text) <= width) return text;
  const chars = [...text];
  let out = "";
  for (let i = chars.length - 1; i >= 0; i--) {
    if (stringWidth(`…${chars[i]}${out}`) > width) break;
    out = chars[i] + out;
  }
  return `…${out}`;
}

/** What a run queued or running in this chat was asked, for the lines `stop` leaves. */
interface KnownRun {
  text: string;
  started: boolean;
}

/** What one `stop` did, collected from the ends of the runs it cut short. */
interface StopReport {
  /** Runs queued or running when stop was typed. */
  waiting: Set<string>;
  aborted: number;
  cancelled: number;
  timer: NodeJS.Timeout;
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
  /** Interactive terminal: the person's input line, kept below everything else. */
  private input?: InputLine;
  /** Interactive terminal: the part of the last line written that has no newline yet (shown on the live row). */
  private partial = "";
  /** Interactive terminal: a live row (working line or partial line) is on screen above the input. */
  private liveRow = false;
  /** Runs of this chat that are queued or running, as far as the events said. */
  private readonly known = new Map<string, KnownRun>();
  private stopping?: StopReport;

  constructor(private readonly out: RendererOutput) {}

  /**
   * The person types on this terminal while mom writes (readline in raw mode): from now on the
   * input line stays on the last row(s), mom's lines and the working line above it.
   */
  attachInput(input: InputLine): void {
    this.input = input;
    this.drawLive();
  }

  /**
   * Enter was pressed on the input line (readline has moved the cursor below it): `echo` (the
   * prompt and the line) stays in the transcript above the live rows, which are drawn anew.
   */
  entered(echo: string): void {
    if (!this.input) return;
    const rows = Math.floor(stringWidth(echo) / this.columns) + 1;
    this.out.write(`\r\x1b[${rows + (this.liveRow ? 1 : 0)}A\x1b[J${echo}\n`);
    this.liveRow = false;
    this.drawLive();
  }

  /**
   * `stop` was sent: once the runs queued or running now have ended, one line says what it did
   * ("stop: aborted the run; 2 queued messages cancelled"). The runner cancels the queued ones.
   */
  stopSent(): void {
    if (this.stopping) return;
    const waiting = new Set(this.known.keys());
    // Nothing known to be running: a run may still be starting; the report waits a moment for it.
    const timer = setTimeout(() => this.reportStop(), waiting.size ? 15_000 : 3_000);
    timer.unref();
    this.stopping = { waiting, aborted: 0, cancelled: 0, timer };
  }

  private reportStop(): void {
    const s = this.stopping;
    if (!s) return;
    clearTimeout(s.timer);
    this.stopping = undefined;
    const parts = [
      s.aborted ? "aborted the run" : "no run was running",
      s.cancelled ? `${s.cancelled} queued message${s.cancelled === 1 ? "" : "s"} cancelled` : "nothing was queued",
    ];
    this.line(`stop: ${parts.join("; ")}`);
  }

  private get columns(): number {
    return Math.max(this.out.columns ?? 80, 10);
  }

  render(e: OutboundEvent): void {
    const ev = e.event;
    if (ev.type === "run_rejected") return this.line(ev.text);
    const accepted = this.tracker.accept(e);
    if (!accepted) return;
    if (ev.type === "run_queued") this.known.set(e.runId, { text: ev.trigger.text, started: false });
    if (ev.type === "run_started") this.known.set(e.runId, { text: ev.trigger.text, started: true });
    if (ev.type === "run_ended") return this.ended(e.runId, ev, accepted.before !== undefined);
    const { view } = accepted;
    const lastStep = view.steps.length > (accepted.before?.steps.length ?? 0) ? view.steps.at(-1) : undefined;
    switch (ev.type) {
      case "message_update": {
        const d = ev.assistantMessageEvent;
        if (d.type !== "text_delta" || !d.delta) break;
        const text = this.answer.delta(`${e.runId}:${d.contentIndex ?? 0}`, d.delta);
        if (text) {
          this.clearStatus();
          this.print(forTerminal(text));
        }
        break;
      }
      case "message_end":
        this.completeAnswer(e.runId, ev.message);
        this.endAnswer();
        break;
      case "run_queued":
        this.line(`… queued behind the current run (position ${ev.position})`);
        break;
      case "run_started":
        this.answer.reset();
        this.setStatus(statusText(view.activity));
        break;
      case "tool_execution_start":
      case "compaction_start":
        this.setStatus(statusText(view.activity));
        break;
      case "tool_execution_update":
        // The status line follows the command's latest output line.
        this.setStatus(statusText(view.activity, { oneLine: true }));
        break;
      case "tool_execution_end":
      case "compaction_end":
        if (lastStep) this.line(`  ${stepLine(lastStep, TERMINAL)}`);
        this.setStatus(statusText(view.activity));
        break;
      case "auto_retry_start":
        if (lastStep) this.line(`  ${stepLine(lastStep, TERMINAL)}`);
        break;
      case "approval_requested":
        this.line(`${approvalPromptText(ev, TERMINAL)}\n  allow once? type y or n`);
        break;
      case "auth.profile.rotated":
        this.line(`  ↻ ${ev.provider} credential ${ev.from} refused (${ev.reason.replace("_", " ")}), continuing with ${ev.to}`);
        break;
      case "approval_resolved":
        this.line(`  ${approvalOutcomeLine(ev, TERMINAL)}`);
        break;
      default:
        break;
    }
  }

  private ended(runId: string, ev: Extract<OutboundEvent["event"], { type: "run_ended" }>, seenBefore: boolean): void {
    const run = this.known.get(runId);
    this.known.delete(runId);
    const stop = this.stopping?.waiting.has(runId) ? this.stopping : undefined;
    stop?.waiting.delete(runId);
    // Cancelled by `stop` before it started: one line naming the message, no empty usage line.
    const cancelled = ev.stopReason === "aborted" && run !== undefined && !run.started;
    if (stop && ev.stopReason === "aborted") {
      if (cancelled) stop.cancelled++;
      else stop.aborted++;
    }
    if (cancelled) {
      this.line(`${TERMINAL.marks.stopped} cancelled before it started: “${clip(run.text)}”${ev.errorMessage ? ` (${ev.errorMessage.replace(/ before it started$/, "")})` : ""}`);
    } else {
      this.clearStatus();
      this.endAnswer();
      if (!ev.silent) {
        // a scheduled check with nothing to report ([SILENT]) leaves no trace at all
        if (ev.finalText && !this.answer.showed(ev.finalText)) this.print(`${forTerminal(ev.finalText)}\n`);
        for (const note of endNotes(ev, TERMINAL)) this.print(`${forTerminal(note)}\n`);
        for (const a of activityLines(ev.toolActivity, TERMINAL)) this.print(`  ${forTerminal(a)}\n`);
        // A reply that was no model run (e.g. `/new`'s) has no usage to show.
        if (seenBefore || ev.usage.totalTokens > 0) this.print(`  ${formatUsage(ev.usage, ev.durationMs)}\n`);
      }
    }
    if (stop && stop.waiting.size === 0) this.reportStop();
  }

  close(): void {
    if (this.stopping) clearTimeout(this.stopping.timer);
    this.clearStatus();
    if (this.input && (this.liveRow || this.partial)) {
      this.clearLive();
      if (this.partial) this.out.write(`${this.partial}\n`);
      this.partial = "";
    }
  }

  /** A line of its own that does not disturb the working indicator (e.g. "📎 chart.png saved to …"). */
  notice(text: string): void {
    this.line(text);
  }

  /** Writes what an assistant message's end has of its text blocks beyond what was streamed. */
  private completeAnswer(runId: string, message: { role: string; content?: unknown }): void {
    if (message.role !== "assistant" || !Array.isArray(message.content)) return;
    message.content.forEach((block: { type?: unknown; text?: unknown }, i) => {
      // A longer block was cut for the bus: its deltas carry the rest.
      if (block.type !== "text" || typeof block.text !== "string" || block.text.length > MAX_EVENT_TEXT) return;
      const text = this.answer.complete(`${runId}:${i}`, block.text);
      if (text) {
        this.clearStatus();
        this.print(forTerminal(text));
      }
    });
  }

  /** Finishes the line of a streamed answer, if one is open. */
  private endAnswer(): void {
    const nl = this.answer.end();
    if (nl) this.print(nl);
  }

  /**
   * Writes text for the transcript. With an input line on screen the live rows are taken away
   * first and drawn again after, and a line still being written (no newline yet) waits on the
   * live row until its newline comes.
   */
  private print(text: string): void {
    if (!this.input) return void this.out.write(text);
    this.clearLive();
    const all = this.partial + text;
    const cut = all.lastIndexOf("\n") + 1;
    if (cut) this.out.write(all.slice(0, cut));
    this.partial = all.slice(cut);
    this.drawLive();
  }

  /** Interactive: moves from the input's cursor to the top of the live rows and erases them all. */
  private clearLive(): void {
    const up = this.input!.cursorRow() + (this.liveRow ? 1 : 0);
    this.out.write(`\r${up ? `\x1b[${up}A` : ""}\x1b[J`);
    this.liveRow = false;
  }

  /** Interactive: the live row (the line being written, or the working line), then the input line. */
  private drawLive(): void {
    const row = this.liveText();
    if (row !== undefined) {
      this.out.write(`${row}\n`);
      this.liveRow = true;
    }
    this.input!.redraw();
  }

  private liveText(): string | undefined {
    // One column spare: a row filled to the last column wraps on some terminals.
    const width = this.columns - 1;
    if (this.partial) return fitEnd(this.partial, width);
    if (this.status !== undefined) return fitEnd(`${FRAMES[this.frame]} ${this.status}`, width);
    return undefined;
  }

  private setStatus(text: string): void {
    this.endAnswer();
    text = forTerminal(text);
    if (!this.out.isTTY) {
      if (text !== this.status) this.out.write(`${text}\n`);
      this.status = text;
      return;
    }
    const shown = this.status !== undefined;
    this.status = text;
    if (this.input && !shown) {
      this.clearLive();
      this.drawLive();
    } else this.draw();
    if (!this.timer) {
      this.timer = setInterval(() => this.draw(), 100);
      this.timer.unref();
    }
  }

  private draw(): void {
    if (this.status === undefined) return;
    this.frame = (this.frame + 1) % FRAMES.length;
    if (!this.input) return void this.out.write(`\r\x1b[2K${FRAMES[this.frame]} ${this.status}`);
    if (!this.liveRow || this.partial) return;
    // Only the working row changes: the cursor goes up to it and back to where the person types.
    const row = this.liveText()!;
    this.out.write(`\x1b7\x1b[${this.input.cursorRow() + 1}A\r\x1b[2K${row}\x1b8`);
  }

  private clearStatus(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    const shown = this.status !== undefined;
    this.status = undefined;
    if (!this.out.isTTY || !shown) return;
    if (!this.input) return void this.out.write("\r\x1b[2K");
    if (!this.partial) {
      this.clearLive();
      this.drawLive();
    }
  }

  private line(text: string): void {
    this.endAnswer();
    text = forTerminal(text);
    if (this.input) this.print(`${text}\n`);
    else if (this.out.isTTY && this.status !== undefined) this.out.write(`\r\x1b[2K${text}\n`), this.draw();
    else this.out.write(`${text}\n`);
  }
}

/** A message as one short line. */
function clip(text: string, max = 60): string {
  const one = text.replace(/\s+/g, " ").trim();
  return one.length <= max ? one : `${one.slice(0, max - 1)}…`;
}
