import { type Bus, readChannelWindow } from "@mom/bus";
import type { LoadedConfig } from "@mom/config";
import { type ChannelRef, qualifiedChannelId } from "@mom/contracts";
import type { RedriveResult } from "@mom/agent-runner";
import ms from "ms";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** At most this many messages that asked mom something per redrive. */
export const REDRIVE_MAX_TRIGGERS = 50;
/** A redrive still running after this is aborted (default; ConsoleOptions.redriveTimeoutMs). */
export const REDRIVE_TIMEOUT_MS = 5 * 60_000;

export class RedriveError extends Error {
  constructor(
    readonly status: 400 | 403 | 409 | 504,
    message: string,
  ) {
    super(message);
  }
}

export interface RedriveReport {
  channel: string;
  window: string;
  model: string;
  messages: number;
  results: RedriveResult[];
  /** Set when the timeout cut the redrive short (the results so far are kept). */
  timedOut?: string;
}

/** A window is a duration back from now (30m, 1h, 1d) or a count of the channel's last inbound messages (20). */
export function parseRedriveWindow(value: string, now = Date.now()): { since: Date } | { last: number } {
  const v = value.trim();
  if (/^\d+$/.test(v)) {
    const last = Number(v);
    if (last < 1) throw new RedriveError(400, `window: a message count must be 1 or more, got ${v}`);
    return { last };
  }
  const back = /^\d+(\.\d+)?\s*[a-z]+$/i.test(v) ? ms(v as ms.StringValue) : undefined;
  if (back === undefined || !Number.isFinite(back) || back <= 0) throw new RedriveError(400, `window: expected a duration back from now (30m, 1h, 1d) or a message count (20), got ${JSON.stringify(value)}`);
  return { since: new Date(now - back) };
}

/**
 * One redrive at a time per console: reads the window from NATS, runs @mom/agent-runner's
 * redriveWindow (the code of `mom replay --redrive`) in a temporary scratch dir, removed after.
 */
export class RedriveRunner {
  private busy?: string;

  constructor(
    private readonly loaded: LoadedConfig,
    private readonly bus: Bus,
    private readonly timeoutMs = REDRIVE_TIMEOUT_MS,
  ) {}

  get running(): string | undefined {
    return this.busy;
  }

  async run(ref: ChannelRef, windowText: string, model: string | undefined, by: string): Promise<RedriveReport> {
    const window = parseRedriveWindow(windowText);
    if (this.busy) throw new RedriveError(409, `a redrive is already running (${this.busy}); this console runs one at a time — try again when it is done`);
    const channel = qualifiedChannelId(ref);
    this.busy = `${channel} for ${by}`;
    const scratch = mkdtempSync(join(tmpdir(), "mom-console-redrive-"));
    const abort = new AbortController();
    let timedOut: string | undefined;
    const timer = setTimeout(() => {
      timedOut = `the redrive took longer than ${ms(this.timeoutMs, { long: true })} and was stopped; the answers so far are shown`;
      abort.abort();
    }, this.timeoutMs);
    try {
      const w = await readChannelWindow(this.bus, ref, "since" in window ? { since: window.since } : {});
      let entries = w.entries;
      if ("last" in window) {
        const inbound = entries.flatMap((e, i) => (e.kind === "in" ? [i] : []));
        entries = inbound.length > window.last ? entries.slice(inbound[inbound.length - window.last]) : entries;
      }
      // The agent and its model SDKs load only when a redrive is asked for.
      const { redriveWindow, RedriveRefused } = await import("@mom/agent-runner");
      const results: RedriveResult[] = [];
      let messages = 0;
      try {
        await redriveWindow({
          loaded: this.loaded,
          ref,
          entries,
          model: model || undefined,
          workspace: scratch,
          maxTriggers: REDRIVE_MAX_TRIGGERS,
          signal: abort.signal,
          onStart: (i) => (messages = i.messages),
          onResult: (r) => results.push(r),
        });
      } catch (err) {
        if (err instanceof RedriveRefused) throw new RedriveError(400, `${err.field}: ${err.message}`);
        throw err;
      }
      return { channel, window: windowText.trim(), model: model || this.loaded.config.model, messages, results, timedOut };
    } finally {
      clearTimeout(timer);
      this.busy = undefined;
      rmSync(scratch, { recursive: true, force: true });
    }
  }
}
