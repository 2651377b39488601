import type { NatsConnection } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import type { Logger } from "pino";
import { coalesceWrites } from "./coalesce-writes.js";
import { serverCaveat } from "./server-caveat.js";
import { shareCancelError } from "./share-cancel-error.js";

const warnedAbout = new Set<string>();

export interface ConnectParams {
  url: string;
  name: string;
  reconnectTimeWaitMs?: number;
  logger: Logger;
}

/**
 * Connects once (failing fast with an error that names the URL), then reconnects forever.
 * Connection state changes are logged until the connection closes.
 */
export async function connectNats(p: ConnectParams): Promise<NatsConnection> {
  const { servers, auth, shown } = splitCredentials(p.url);
  let nc: NatsConnection;
  try {
    nc = await connect({
      servers,
      ...auth,
      name: p.name,
      maxReconnectAttempts: -1,
      reconnectTimeWait: p.reconnectTimeWaitMs ?? 2000,
      waitOnFirstConnect: false,
      // A server that hangs (SIGSTOP, a frozen VM) keeps its socket open: with nats.js's default
      // (a ping every 2 min) a client waits that long before moving to another server of the
      // cluster. Two unanswered pings 2 s apart move it within about 6 s (docs/scaling.md).
      pingInterval: 2000,
      maxPingOut: 2,
      // A hung server still accepts TCP connections (the kernel does), then never says hello: one
      // reconnect attempt to it waited nats.js's default 20 s before trying the next server.
      timeout: 5000,
      // Every request would otherwise capture a stack trace up front (~10% of the runner's CPU per
      // message); failures are wrapped with their subject and msg-id by the callers anyway.
      noAsyncTraces: true,
    });
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new Error(`cannot connect to NATS at ${shown} (connection "${p.name}"): ${reason}`, { cause: err });
  }
  coalesceWrites(nc, p.logger);
  shareCancelError(p.logger);
  p.logger.info({ url: shown, server: nc.info?.server_name, version: nc.info?.version }, "connected to NATS");
  const caveat = serverCaveat(nc.info?.version, nc.info?.cluster);
  if (caveat && !warnedAbout.has(caveat)) {
    warnedAbout.add(caveat); // once per process: a service opens several connections
    p.logger.warn({ url: shown, version: nc.info?.version }, caveat);
  }
  void watchStatus(nc, p.logger);
  return nc;
}

async function watchStatus(nc: NatsConnection, logger: Logger): Promise<void> {
  try {
    for await (const s of nc.status()) {
      switch (s.type) {
        case "disconnect":
          logger.warn({ server: s.server }, "NATS disconnected; reconnecting");
          break;
        case "reconnect":
          logger.info({ server: s.server }, "NATS reconnected");
          break;
        case "error":
          logger.error({ err: s.error }, "NATS error");
          break;
        case "slowConsumer":
          logger.warn({ sub: s.sub.getSubject() }, "NATS slow consumer");
          break;
        default:
          break;
      }
    }
  } catch (err) {
    logger.debug({ err }, "NATS status watcher ended");
  }
}

/**
 * nats.js ignores `user:pass@` (or `token@`) in server URLs, so credentials written the usual way
 * are lifted out into connect options; what gets logged never contains them.
 */
export function splitCredentials(url: string): { servers: string[]; auth: { user?: string; pass?: string; token?: string }; shown: string } {
  const auth: { user?: string; pass?: string; token?: string } = {};
  const servers = url
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)
    .map((server) => {
      const m = /^([a-z]+:\/\/)?([^@/]*)@(.+)$/.exec(server);
      if (!m) return server;
      const [user, pass] = m[2]!.split(":").map(decodeURIComponent);
      if (pass !== undefined) Object.assign(auth, { user, pass });
      else Object.assign(auth, { token: user });
      return `${m[1] ?? ""}${m[3]}`;
    });
  return { servers, auth, shown: servers.join(",") };
}
