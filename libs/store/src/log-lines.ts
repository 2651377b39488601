import { LogEntry, Receipt, type Validator, validator } from "@mom/contracts";
import type { Static, TSchema } from "typebox";

export const logEntryValidator = validator(LogEntry);
export const receiptValidator = validator(Receipt);

export interface SkippedLine {
  /** 1-based line number in log.jsonl. */
  line: number;
  reason: string;
}

/**
 * Parses log.jsonl text. A crash can tear the last line, and a hand edit can break any line; both
 * are reported and skipped, so one bad line never hides the rest of a channel's history.
 */
export function parseLogLines(text: string): { entries: LogEntry[]; skipped: SkippedLine[] } {
  return parseJsonLines(text, logEntryValidator, "LogEntry");
}

/** The same tolerant reading for any JSON-lines file of one schema (log.jsonl, receipts.jsonl). */
export function parseJsonLines<S extends TSchema>(text: string, v: Validator<S>, what: string): { entries: Static<S>[]; skipped: SkippedLine[] } {
  const entries: Static<S>[] = [];
  const skipped: SkippedLine[] = [];
  const lines = text.split("\n");
  lines.forEach((raw, index) => {
    if (raw.trim() === "") return;
    const unterminated = index === lines.length - 1;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (err) {
      const reason = unterminated ? "torn last line (no trailing newline)" : `invalid JSON: ${(err as Error).message}`;
      return void skipped.push({ line: index + 1, reason });
    }
    const check = v.check(value);
    if (check.ok) entries.push(check.value);
    else skipped.push({ line: index + 1, reason: `not a ${what}: ${check.reason}` });
  });
  return { entries, skipped };
}
