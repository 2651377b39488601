import "reflect-metadata";
import { NestFactory } from "@nestjs/core";
import { ExpressAdapter, type NestExpressApplication } from "@nestjs/platform-express";
import { Bus, type BusOptions } from "@mom/bus";
import type { LoadedConfig } from "@mom/config";
import cookieParser from "cookie-parser";
import type { NextFunction, Request, Response } from "express";
import { randomBytes } from "node:crypto";
import type { AddressInfo } from "node:net";
import type { Logger } from "pino";
import { SESSION_COOKIE } from "./console.controller.js";
import { ConsoleModule } from "./console.module.js";
import { ConsoleService } from "./console.service.js";
import { assertConsoleConfig, type ConsoleIdentity, type Identities } from "./identity.js";

export interface StartConsoleOptions {
  /** Loaded with `{ console: true }` so that login tokens are resolved. */
  loaded: LoadedConfig;
  bus: BusOptions;
  logger: Logger;
  /** Overrides console.port (env MOM_CONSOLE_PORT; 0 picks a free one). */
  port?: number;
  host?: string;
  /** Signs the session cookie; default: random per process (sign-ins end when it restarts). */
  sessionSecret?: string;
  retryMs?: number;
  /** A redrive still running after this is stopped (default 5 minutes). */
  redriveTimeoutMs?: number;
}

export interface RunningConsole {
  /** http://host:port */
  url: string;
  port: number;
  service: ConsoleService;
  close(): Promise<void>;
}

/** Paths anyone may fetch: probes, the sign-in page, the page's own styles and scripts. */
const PUBLIC = [/^\/healthz$/, /^\/readyz$/, /^\/metrics$/, /^\/login$/, /^\/static\/[a-z.]+$/];

/** Who the request is: the identity proxy's header when one is configured and present, else the signed session cookie. */
function identify(ids: Identities, req: Request): { user?: ConsoleIdentity; unknown?: string } {
  const header = ids.headerName;
  // From anywhere but the proxy, the header is a claim anyone can make: the session cookie decides.
  const fromProxy = header && ids.trustsProxyAt(req.socket.remoteAddress) ? req.headers[header] : undefined;
  if (typeof fromProxy === "string" && fromProxy.trim()) {
    const user = ids.byName(fromProxy.trim());
    return user ? { user } : { unknown: fromProxy.trim() };
  }
  const session = (req.signedCookies as Record<string, unknown> | undefined)?.[SESSION_COOKIE];
  return typeof session === "string" ? { user: ids.byName(session) } : {};
}

/**
 * The web console: a Nest HTTP application (Express) that reads NATS only — buckets, streams —
 * and writes only what an approver does from a page: approval decisions on control subjects, a
 * fixed dead letter back on its subject, a changed spend limit in the runners' limits bucket, a
 * tool approval asked of a runner. Every page needs a signed-in console user; every change is
 * checked against cross-site requests (Nest's CSRF protection).
 */
export async function startConsole(o: StartConsoleOptions): Promise<RunningConsole> {
  assertConsoleConfig(o.loaded.config, o.loaded.paths.configFile);
  const bus = await Bus.connect(o.bus);
  try {
    const app = await NestFactory.create<NestExpressApplication>(ConsoleModule.forRoot({ loaded: o.loaded, bus, logger: o.logger, retryMs: o.retryMs, redriveTimeoutMs: o.redriveTimeoutMs }), new ExpressAdapter(), {
      logger: false,
      abortOnError: false,
    });
    const cfg = o.loaded.config.console;
    const trustedOrigins = cfg.publicUrl ? [new URL(cfg.publicUrl).origin] : [];
    app.enableCsrfProtection({ trustedOrigins });
    app.useSecurityHeaders();
    // A dead letter's payload (up to 64 KiB, escaped in the form) comes back as a form post.
    app.useBodyParser("urlencoded", { extended: true, limit: "1mb" });
    app.disable("x-powered-by");
    app.use(cookieParser(o.sessionSecret ?? randomBytes(32).toString("hex")));
    const ids = app.get(ConsoleService).identities;
    app.use((req: Request & { consoleUser?: ConsoleIdentity }, res: Response, next: NextFunction) => {
      const who = identify(ids, req);
      if (who.user) req.consoleUser = who.user;
      if (PUBLIC.some((p) => p.test(req.path)) || who.user) return next();
      if (who.unknown !== undefined) {
        o.logger.warn({ user: who.unknown }, "console: the identity proxy names someone who is not in console.users");
        return void res.status(403).type("text").send(`${who.unknown} is not a console user (console.users in config.json)\n`);
      }
      if (req.method === "GET" && req.accepts("html")) return res.redirect(303, "/login");
      res.status(401).type("text").send("sign in first\n");
    });
    await app.listen(o.port ?? cfg.port, o.host ?? cfg.host);
    const port = (app.getHttpServer().address() as AddressInfo).port;
    const host = o.host ?? cfg.host;
    o.logger.info({ port, host }, "console ready");
    return {
      url: `http://${host.includes(":") ? `[${host}]` : host}:${port}`,
      port,
      service: app.get(ConsoleService),
      async close() {
        // Live pages hold their event streams open: end them, or closing would wait for every tab.
        const server = app.getHttpServer();
        const closing = app.close();
        server.closeAllConnections();
        await closing;
        await bus.drain().catch(() => {});
      },
    };
  } catch (err) {
    await bus.drain().catch(() => {});
    throw err;
  }
}
