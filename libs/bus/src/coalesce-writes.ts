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
  const transport = transportOf(nc);
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
      const waiting = riders.get(this);
      if (waiting) runRiders(waiting);
    }
    send.call(this, frame);
  };
  proto[COALESCING] = true;
  return true;
}

interface Riders {
  fns: Array<() => void>;
  timer?: NodeJS.Timeout;
}

/** Sends that wait for their connection's next write, by transport (a reconnect makes a new one). */
const riders = new WeakMap<Transport, Riders>();

/** The connection's current Node transport (nats.js internals: a reconnect makes a new one). */
function transportOf(nc: NatsConnection): Transport | undefined {
  return (nc as unknown as { protocol?: { transport?: Transport } }).protocol?.transport;
}

/** The transport when its writes are coalesced (the only ones a send can wait with). */
function coalescedTransportOf(nc: NatsConnection): Transport | undefined {
  const transport = transportOf(nc);
  return transport && (Object.getPrototypeOf(transport) as { [COALESCING]?: true })[COALESCING] ? transport : undefined;
}

function runRiders(r: Riders): void {
  clearTimeout(r.timer);
  r.timer = undefined;
  for (const fn of r.fns.splice(0)) {
    try {
      fn();
    } catch {
      // the connection closed meanwhile: what was not sent is the caller's loss to bear (an ack: a redelivery)
    }
  }
}

/**
 * Runs `send` (something that writes a little to NATS, such as an ack) together with the
 * connection's next write, or after maxDelayMs when nothing else is written meanwhile — one write
 * syscall less per message when messages come one at a time. Only for what may arrive late or,
 * if the process dies first, not at all.
 */
export function withNextWrite(nc: NatsConnection, send: () => void, maxDelayMs = 100): void {
  const transport = coalescedTransportOf(nc);
  const socket = transport?.socket;
  // Corked: this loop turn writes anyway, and `send` joins it.
  if (!transport || !socket || socket.destroyed || socket.writableCorked > 0) return send();
  let r = riders.get(transport);
  if (!r) riders.set(transport, (r = { fns: [] }));
  r.fns.push(send);
  if (!r.timer) {
    const waiting = r;
    waiting.timer = setTimeout(() => runRiders(waiting), maxDelayMs);
    waiting.timer.unref();
  }
}
