import type { OutboundEvent } from "@mom/contracts";
import { formatUsage } from "@mom/format";

const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

export interface RendererOutput {
  write(text: string): void;
  /** True on a terminal: the working line is redrawn in place; otherwise every change is a line. */
  isTTY?: boolean;
}

/**
 * Draws mom's outbound events in a terminal: a working indicator with the current tool label,
 * one line per finished tool, then the final markdown answer, errors and usage.
 */
export class CliRenderer {
  private status?: string;
  private frame = 0;
  private timer?: NodeJS.Timeout;

  constructor(private readonly out: RendererOutput) {}

  render(e: OutboundEvent): void {
    const ev = e.event;
    switch (ev.type) {
      case "run_queued":
        this.line(`… queued behind the current run (position ${ev.position})`);
        break;
      case "run_rejected":
        this.line(ev.text);
        break;
      case "run_started":
        this.setStatus("working…");
        break;
      case "tool_execution_start":
        this.setStatus(`→ ${ev.label}`);
        break;
      case "tool_execution_end":
        this.line(`  ${ev.isError ? "✗" : "✓"} ${ev.label} (${ev.durationMs} ms)${ev.isError ? `: ${firstLine(ev.resultText)}` : ""}`);
        this.setStatus("working…");
        break;
      case "compaction_start":
        this.setStatus("compacting context…");
        break;
      case "compaction_end":
        if (ev.errorMessage) this.line(`  ✗ compaction failed: ${firstLine(ev.errorMessage)}`);
        this.setStatus("working…");
        break;
      case "auto_retry_start":
        this.line(`  ↻ provider error, retry ${ev.attempt}/${ev.maxAttempts} in ${Math.round(ev.delayMs / 1000)}s: ${firstLine(ev.errorMessage)}`);
        break;
      case "run_ended":
        this.clearStatus();
        if (ev.silent) break; // a scheduled check with nothing to report: no trace at all
        if (ev.finalText) this.out.write(`${ev.finalText}\n`);
        if (ev.stopReason === "aborted") this.out.write(`■ stopped${ev.errorMessage ? `: ${ev.errorMessage}` : ""}\n`);
        else if (ev.stopReason === "error") this.out.write(`✗ error: ${ev.errorMessage ?? "unknown error"}\n`);
        // What the receipts say happened, whatever the answer claims.
        for (const a of (ev.toolActivity ?? []).filter((x) => x.status !== "succeeded" || x.risk !== "read")) {
          const mark = { succeeded: "✓", failed: "✗", denied: "⊘", pending: "…" }[a.status];
          this.out.write(`  ${mark} ${a.toolId}${a.label ? ` — ${a.label}` : ""}: ${a.status}${a.detail ? ` (${firstLine(a.detail)})` : ""}\n`);
        }
        this.out.write(`  ${formatUsage(ev.usage, ev.durationMs)}\n`);
        break;
      case "approval_requested":
        this.line(`⚠ mom wants to run ${ev.toolId} (${ev.risk}): ${ev.argsSummary}\n  allow once? type y or n (expires ${ev.expiresAt.slice(11, 19)} UTC)`);
        break;
      case "auth.profile.rotated":
        this.line(`  ↻ ${ev.provider} credential ${ev.from} refused (${ev.reason.replace("_", " ")}), continuing with ${ev.to}`);
        break;
      case "approval_resolved":
        this.line(`  ${ev.outcome === "approved" ? "✓ approved" : ev.outcome === "denied" ? "⊘ denied" : "⌛ approval expired"}${ev.decidedBy ? ` by ${ev.decidedBy}` : ""}`);
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

  private setStatus(text: string): void {
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
    if (this.out.isTTY && this.status !== undefined) this.out.write(`\r\x1b[2K${text}\n`), this.draw();
    else this.out.write(`${text}\n`);
  }
}

function firstLine(text: string): string {
  const line = text.trim().split("\n")[0] ?? "";
  return line.length > 200 ? `${line.slice(0, 197)}...` : line;
}
