// A real CalDAV server for calendar tests: Debian's radicale, an instance of its own in a temp
// dir on a free loopback port, with htpasswd logins (plain: radicale's other schemes need Python
// packages Debian's radicale does not pull in) and owner-only rights (each user sees only
// /<user>/), as a personal server is usually set up.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, waitForPort } from "./nats-server.js";

export const RADICALE_BIN = process.env.RADICALE_BIN ?? "/usr/bin/radicale";

/** Why radicale cannot run here (a test skips with it), or undefined when it can. */
export function radicaleUnavailable(): string | undefined {
  if (!existsSync(RADICALE_BIN)) return `radicale not found at ${RADICALE_BIN}: apt-get install -y radicale (or set RADICALE_BIN)`;
  return undefined;
}

export interface TestRadicale {
  /** The server's root, e.g. `http://127.0.0.1:43121/` (what a client's settings name). */
  url: string;
  port: number;
  /** The storage folder (collection-root/<user>/<calendar>/<item>.ics). */
  dir: string;
  /**
   * Creates a calendar collection `/<user>/<id>/` over CalDAV (MKCALENDAR, as a client does),
   * with a display name and, when given, a calendar-timezone: an iCalendar object holding one
   * VTIMEZONE (RFC 4791), as clients set it.
   * Resolves with its absolute URL.
   */
  createCalendar(user: string, id: string, o: { displayName: string; timezone?: string }): Promise<string>;
  /** The iCalendar objects radicale stored in `/<user>/<calendar>/`, read from its storage (what the server kept). */
  items(user: string, calendar: string): string[];
  /** What radicale printed (its log), for a failing test's message. */
  log(): string;
  stop(): Promise<void>;
}

const xmlText = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/** Starts radicale for `users` (name → password); stop() ends it and removes its directory. */
export async function startRadicale(o: { users: Record<string, string> }): Promise<TestRadicale> {
  const why = radicaleUnavailable();
  if (why) throw new Error(why);
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "mom-radicale-"));
  const storage = join(dir, "storage");
  writeFileSync(join(dir, "users"), Object.entries(o.users).map(([u, p]) => `${u}:${p}\n`).join(""));
  writeFileSync(
    join(dir, "config"),
    [
      "[server]",
      `hosts = 127.0.0.1:${port}`,
      "[auth]",
      "type = htpasswd",
      `htpasswd_filename = ${join(dir, "users")}`,
      "htpasswd_encryption = plain",
      // No delay after a failed login: the wrong-password tests would wait for it.
      "delay = 0",
      "[rights]",
      "type = owner_only",
      "[storage]",
      `filesystem_folder = ${storage}`,
      "[web]",
      "type = none",
      "[logging]",
      "level = info",
      "",
    ].join("\n"),
  );
  let output = "";
  const child: ChildProcess = spawn(RADICALE_BIN, ["--config", join(dir, "config")], { stdio: ["ignore", "pipe", "pipe"] });
  child.stdout!.setEncoding("utf8").on("data", (d: string) => (output += d));
  child.stderr!.setEncoding("utf8").on("data", (d: string) => (output += d));
  const stopChild = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
    await exited;
    clearTimeout(timer);
  };
  try {
    await waitForPort(port, child, 20_000, "radicale");
  } catch (err) {
    await stopChild();
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`radicale did not start: ${(err as Error).message}\n${output}`);
  }
  const url = `http://127.0.0.1:${port}/`;
  return {
    url,
    port,
    dir: storage,
    async createCalendar(user, id, c) {
      const password = o.users[user];
      if (password === undefined) throw new Error(`no radicale user ${user}`);
      const at = new URL(`${encodeURIComponent(user)}/${encodeURIComponent(id)}/`, url).href;
      const timezone = c.timezone ? `<C:calendar-timezone>${xmlText(c.timezone)}</C:calendar-timezone>` : "";
      const res = await fetch(at, {
        method: "MKCALENDAR",
        headers: { authorization: `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`, "content-type": "application/xml; charset=utf-8" },
        body: `<?xml version="1.0" encoding="utf-8"?><C:mkcalendar xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav"><D:set><D:prop><D:displayname>${xmlText(c.displayName)}</D:displayname>${timezone}</D:prop></D:set></C:mkcalendar>`,
      });
      if (res.status !== 201) throw new Error(`MKCALENDAR ${at}: ${res.status} ${await res.text()}\n${output}`);
      return at;
    },
    items(user, calendar) {
      const folder = join(storage, "collection-root", user, calendar);
      return readdirSync(folder)
        .filter((f) => !f.startsWith("."))
        .sort()
        .map((f) => readFileSync(join(folder, f), "utf8"));
    },
    log: () => output,
    async stop() {
      await stopChild();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
