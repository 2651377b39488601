import { RequestError } from "@nats-io/nats-core";
import { RequestOne } from "@nats-io/nats-core/internal";
import type { Logger } from "pino";

type Cancel = (this: unknown, err?: Error) => void;

const SHARED = Symbol.for("mom.bus.sharedCancelError");
/** What a request that ends without an error of its own is rejected with; nobody awaits it by then. */
const CANCELLED = new RequestError("cancelled");

/**
 * nats.js ends every request, answered or not, by rejecting its promise with a new
 * `RequestError("cancelled")`, a no-op once the answer has resolved it. Building that error
 * captures a stack each time: about 14 µs per JetStream publish, over a percent of the runner's
 * CPU per message (each message costs about six publishes with acks). One shared error does the
 * same job; an error of the request's own (a timeout, no responders) still reaches its caller.
 *
 * nats.js has no option for it, so this wraps `RequestOne.prototype.cancel` once per process.
 * Should a nats.js release rename it, it says so and leaves requests as they are.
 */
export function shareCancelError(log: Logger): boolean {
  const proto = (RequestOne as unknown as { prototype?: { cancel?: Cancel; [SHARED]?: true } } | undefined)?.prototype;
  if (!proto || typeof proto.cancel !== "function") {
    log.warn("nats.js internals changed: every request builds its own cancel error (correct, but more CPU per message)");
    return false;
  }
  if (proto[SHARED]) return true;
  const cancel = proto.cancel;
  proto.cancel = function (this: unknown, err?: Error): void {
    cancel.call(this, err ?? CANCELLED);
  };
  proto[SHARED] = true;
  return true;
}
