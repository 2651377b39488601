import { waitOutRateLimits } from "@mom/ingress-sdk";
import type { IStorageProvider, MatrixClient } from "matrix-bot-sdk";
import type { Logger } from "pino";
import type { MatrixEvent } from "./matrix-inbound.js";
import type { MatrixSdk } from "./matrix-sdk.js";

/** What the sync loop hands over; each is awaited before the sync token moves past its event. */
export interface SyncHandlers {
  invite(roomId: string, event: MatrixEvent): Promise<void>;
  joined(roomId: string): Promise<void>;
  event(roomId: string, event: MatrixEvent): Promise<void>;
}

const DEFAULT_RETRY_AFTER_MS = 1000;

/** The wait a `429 M_LIMIT_EXCEEDED` asks for, or undefined for any other failure. */
export function retryAfterMs(err: unknown): number | undefined {
  const e = err as { errcode?: string; statusCode?: number; retryAfterMs?: number } | undefined;
  if (e?.errcode !== "M_LIMIT_EXCEEDED" && e?.statusCode !== 429) return undefined;
  return typeof e.retryAfterMs === "number" && e.retryAfterMs >= 0 ? e.retryAfterMs : DEFAULT_RETRY_AFTER_MS;
}

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
    rateLimited: (waitMs: number) => void;
    /** Each request's outcome once rate limits are waited out: undefined, or why it failed. */
    observe?: (path: string, failure: string | undefined) => void;
    log: Logger;
  },
): MatrixClient & { handlers?: SyncHandlers } {
  class MomMatrixClient extends sdk.SynchronousMatrixClient {
    /** Set once the handlers can be built (they need the client): before `start`. */
    handlers?: SyncHandlers;

    constructor() {
      super(new sdk.MatrixClient(o.homeserverUrl, o.accessToken, o.storage));
      this.persistTokenAfterSync = true;
    }

    protected override onRoomInvite(roomId: string, event: MatrixEvent): Promise<void> {
      return this.handlers!.invite(roomId, event);
    }

    protected override onRoomJoin(roomId: string): Promise<void> {
      return this.handlers!.joined(roomId);
    }

    protected override onRoomEvent(roomId: string, event: MatrixEvent): Promise<void> {
      return this.handlers!.event(roomId, event);
    }

    override async doRequest(...args: Parameters<MatrixClient["doRequest"]>): Promise<any> {
      try {
        const result = await waitOutRateLimits(() => super.doRequest(...args), {
          retryAfterMs,
          limited: (waitMs) => {
            o.log.warn({ waitMs, method: args[0], path: args[1] }, "matrix rate limit (429): waiting as the homeserver asks");
            o.rateLimited(waitMs);
          },
        });
        o.observe?.(args[1], undefined);
        return result;
      } catch (err) {
        o.observe?.(args[1], describeFailure(err));
        throw err;
      }
    }
  }
  return new MomMatrixClient();
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
  sdk.LogService.setLogger({
    trace: () => {},
    debug: (module: string, ...parts: unknown[]) => child.debug({ module }, text(parts)),
    info: (module: string, ...parts: unknown[]) => child.debug({ module }, text(parts)),
    warn: (module: string, ...parts: unknown[]) => child.warn({ module }, text(parts)),
    error: (module: string, ...parts: unknown[]) => child.warn({ module }, text(parts)),
  });
  sdk.LogService.setLevel(sdk.LogLevel.INFO);
  // Every failed request is logged there at error, expected ones too (a room without encryption
  // state is a 404); the ingress logs the failures that matter itself.
  sdk.LogService.muteModule("MatrixHttpClient");
}
