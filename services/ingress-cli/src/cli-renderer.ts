import { MAX_EVENT_TEXT, type OutboundEvent, spellCodePoint } from "@mom/contracts";
import { formatUsage } from "@mom/format";
import { AnswerStream } from "./answer-stream.js";
import { activityLines, approvalOutcomeLine, approvalPromptText, endNotes, plainDialect, RunTracker, statusText, stepLine } from "@mom/render";

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

  constructor(private readonly out: RendererOutput) {}

  render(e: OutboundEvent): void {
    const ev = e.event;
    if (ev.type === "run_rejected") return this.line(ev.text);
    const accepted = this.tracker.accept(e);
    if (!accepted) return;
    const { view } = accepted;
    const lastStep = view.steps.length > (accepted.before?.steps.length ?? 0) ? view.steps.at(-1) : undefined;
    switch (ev.type) {
      case "message_update": {
        const d = ev.assistantMessageEvent;
        if (d.type !== "text_delta" || !d.delta) break;
        const text = this.answer.delta(`${e.runId}:${d.contentIndex ?? 0}`, d.delta);
        if (text) {
          this.clearStatus();
          this.out.write(forTerminal(text));
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
      case "tool_execution_end":
      case "compaction_end":
        if (lastStep) this.line(`  ${stepLine(lastStep, TERMINAL)}`);
        this.setStatus(statusText(view.activity));
        break;
      case "auto_retry_start":
        if (lastStep) this.line(`  ${stepLine(lastStep, TERMINAL)}`);
        break;
      case "run_ended":
        this.clearStatus();
        this.endAnswer();
        if (ev.silent) break; // a scheduled check with nothing to report: no trace at all
        if (ev.finalText && !this.answer.showed(ev.finalText)) this.out.write(`${forTerminal(ev.finalText)}\n`);
        for (const note of endNotes(ev, TERMINAL)) this.out.write(`${forTerminal(note)}\n`);
        for (const a of activityLines(ev.toolActivity, TERMINAL)) this.out.write(`  ${forTerminal(a)}\n`);
        this.out.write(`  ${formatUsage(ev.usage, ev.durationMs)}\n`);
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

  close(): void {
    this.clearStatus();
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
        this.out.write(forTerminal(text));
      }
    });
  }

  /** Finishes the line of a streamed answer, if one is open. */
  private endAnswer(): void {
    const nl = this.answer.end();
    if (nl) this.out.write(nl);
  }

  private setStatus(text: string): void {
    this.endAnswer();
    text = forTerminal(text);
    if (!this.out.isTTY) {
      if (text !== this.status) this.out.write(`${text}\n`);
      this.status = text;
      return;
    }
    this.status = text;
    this.draw();
    if (!this.timer) {
      this.timer = setInterval(() => this.draw(), 100);
      this.timer.unref();
    }
  }

  private draw(): void {
    if (this.status === undefined) return;
    this.frame = (this.frame + 1) % FRAMES.length;
    this.out.write(`\r\x1b[2K${FRAMES[this.frame]} ${this.status}`);
  }

  private clearStatus(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    if (this.out.isTTY && this.status !== undefined) this.out.write("\r\x1b[2K");
    this.status = undefined;
  }

  private line(text: string): void {
    this.endAnswer();
    text = forTerminal(text);
    if (this.out.isTTY && this.status !== undefined) this.out.write(`\r\x1b[2K${text}\n`), this.draw();
    else this.out.write(`${text}\n`);
  }
}
