import type { NatsConnection } from "@nats-io/nats-core";
import type { Socket } from "node:net";
import type { Logger } from "pino";

interface Transport {
  socket?: Socket;
  send(frame: Uint8Array): void;
}

const COALESCING = Symbol.for("mom.bus.coalescedWrites");

/**
 * nats.js hands its buffered protocol to the socket at every microtask checkpoint, so each
 * callback that publishes (an event of one run, the ack of another channel's message, a KV write)
 * costs a write syscall of its own. Corking the socket on the first write of an event-loop turn
 * and uncorking it at the end of the turn sends the whole turn in one writev — the same bytes in
 * the same order, at most one loop turn later. On a busy runner that was about a tenth of its CPU
 * per message (bench/README.md).
 *
 * nats.js has no option for it, so this wraps the Node transport's `send` (shared by every
 * connection of the process, hence once). Should a nats.js release rename what it relies on, it
 * says so and leaves the connection as it is.
 */
export function coalesceWrites(nc: NatsConnection, log: Logger): boolean {
  const transport = (nc as unknown as { protocol?: { transport?: Transport } }).protocol?.transport;
  const proto = transport && (Object.getPrototypeOf(transport) as Transport & { [COALESCING]?: true });
  if (!proto || typeof proto.send !== "function" || !("socket" in transport)) {
    log.warn("nats.js internals changed: socket writes are not coalesced (correct, but more CPU per message)");
    return false;
  }
  if (proto[COALESCING]) return true;
  const send = proto.send;
  proto.send = function (this: Transport, frame: Uint8Array): void {
    const socket = this.socket;
    if (socket && socket.writableCorked === 0 && !socket.destroyed) {
      socket.cork();
      setImmediate(() => socket.uncork());
    }
    send.call(this, frame);
  };
  proto[COALESCING] = true;
  return true;
}
