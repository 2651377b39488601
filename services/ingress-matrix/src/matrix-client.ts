import { FailureWatch, waitOutRateLimits } from "@mom/ingress-sdk";
import type { IStorageProvider, MatrixClient } from "matrix-bot-sdk";
import type { Logger } from "pino";
import type { MatrixEvents } from "./matrix-events.js";
import type { MatrixEvent } from "./matrix-inbound.js";
import type { MatrixSdk } from "./matrix-sdk.js";

const DEFAULT_RETRY_AFTER_MS = 1000;

/** The wait a `429 M_LIMIT_EXCEEDED` asks for, or undefined for any other failure. */
export function retryAfterMs(err: unknown): number | undefined {
  const e = err as { errcode?: string; statusCode?: number; retryAfterMs?: number } | undefined;
  if (e?.errcode !== "M_LIMIT_EXCEEDED" && e?.statusCode !== 429) return undefined;
  return typeof e.retryAfterMs === "number" && e.retryAfterMs >= 0 ? e.retryAfterMs : DEFAULT_RETRY_AFTER_MS;
}

/** The client, with what the ingress adds to it. */
export type MomMatrixClient = MatrixClient & { handlers?: MatrixEvents; readonly sync: FailureWatch; limited(waitMs: number, path: string): void };

/**
 * matrix-bot-sdk's SynchronousMatrixClient: events are handed over one by one and awaited, and
 * with `persistTokenAfterSync` the stored sync token moves on only once a whole sync response is
 * handled — a failure (NATS away) makes the SDK sync again from the old token, so nothing is lost,
 * and what was handled already is dropped as a duplicate by the shell. Every request waits out
 * 429s for as long as the homeserver asks: matrix-bot-sdk throws a 429 like any error (only its
 * sync loop backs off, and not for as long as asked).
 */
export function createMatrixClient(
  sdk: MatrixSdk,
  o: {
    homeserverUrl: string;
    accessToken: string;
    storage: IStorageProvider;
    rateLimited: () => void;
    log: Logger;
  },
): MomMatrixClient {
  class Client extends sdk.SynchronousMatrixClient {
    /** Set once the handlers can be built (they need the client): before `start`. */
    handlers?: MatrixEvents;
    /** matrix-bot-sdk retries a failing sync forever, with a back-off, while the client stays "started". */
    readonly sync = new FailureWatch("matrix sync", o.log);
    private stopping = false;

    constructor() {
      super(new sdk.MatrixClient(o.homeserverUrl, o.accessToken, o.storage));
      this.persistTokenAfterSync = true;
    }

    override stop(): void {
      this.stopping = true;
      super.stop();
    }

    /** Once stopping, a sync response is not taken: the token stays where it was, and the next start syncs from there. */
    private running(): MatrixEvents {
      if (this.stopping) throw new Error("the matrix ingress is stopping");
      return this.handlers!;
    }

    protected override onRoomInvite(roomId: string, event: MatrixEvent): Promise<void> {
      return this.running().invite(roomId, event);
    }

    protected override onRoomJoin(roomId: string): Promise<void> {
      return this.running().joined(roomId);
    }

    protected override onRoomEvent(roomId: string, event: MatrixEvent): Promise<void> {
      return this.running().event(roomId, event);
    }

    protected override async doSync(token: string): Promise<any> {
      try {
        const response = await super.doSync(token);
        this.sync.works();
        return response;
      } catch (err) {
        // The long poll in flight when stopping ends with the connection; that is no failure.
        if (!this.stopping) this.sync.failed(describeFailure(err));
        throw err;
      }
    }

    override doRequest(...args: Parameters<MatrixClient["doRequest"]>): Promise<any> {
      return waitOutRateLimits(() => super.doRequest(...args), { retryAfterMs, limited: (waitMs) => this.limited(waitMs, args[1]) });
    }

    /** A 429 waited out (a request of the client's, or a media download): logged and counted. */
    limited(waitMs: number, path: string): void {
      o.log.warn({ waitMs, path }, "matrix rate limit (429): waiting as the homeserver asks");
      o.rateLimited();
    }
  }
  return new Client();
}

/** A failed request in a few words: matrix-bot-sdk's MatrixError ("M_…: why"), the status of a response without one, or the network error. */
export function describeFailure(err: unknown): string {
  const e = err as { errcode?: string; statusCode?: number; message?: string } | undefined;
  return !e?.errcode && typeof e?.statusCode === "number" ? `HTTP ${e.statusCode}` : (e?.message ?? String(err));
}

/** matrix-bot-sdk's log (a process-wide LogService) into the ingress's pino logger. */
export function routeSdkLogs(sdk: MatrixSdk, log: Logger): void {
  const child = log.child({ lib: "matrix-bot-sdk" });
  const text = (parts: unknown[]) => parts.map((p) => (typeof p === "string" ? p : p instanceof Error ? p.message : JSON.stringify(p))).join(" ");
  const at = (level: "debug" | "warn") => (module: string, ...parts: unknown[]) => child[level]({ module }, text(parts));
  sdk.LogService.setLogger({ trace: () => {}, debug: at("debug"), info: at("debug"), warn: at("warn"), error: at("warn") });
  sdk.LogService.setLevel(sdk.LogLevel.INFO);
  // Every failed request is logged there at error, expected ones too (a room without encryption
  // state is a 404); the ingress logs the failures that matter itself.
  sdk.LogService.muteModule("MatrixHttpClient");
}
