import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, waitForPort } from "./nats-server.js";

/** A real IRC server (Debian's ngircd) on a loopback port, for an IRC ingress's tests. */
export interface TestIrcServer {
  host: string;
  port: number;
  /** What ngircd printed (its log), for a failing test's message. */
  log(): string;
  /** Stops the server (every client is cut off), waits `downMs`, and starts it again on the same port. */
  restart(downMs?: number): Promise<void>;
  stop(): Promise<void>;
}

export const NGIRCD_BIN = process.env.NGIRCD_BIN ?? "/usr/sbin/ngircd";

export function ngircdAvailable(): boolean {
  return existsSync(NGIRCD_BIN);
}

/**
 * Starts `ngircd -n` (in the foreground, logging to stderr) with a config of its own: loopback
 * only, no ident/DNS/PAM look-ups (they would wait on the network). Started as root it runs as
 * nobody (ngircd refuses root), which needs nothing beyond the port.
 */
export async function startIrcServer(): Promise<TestIrcServer> {
  if (!ngircdAvailable()) throw new Error(`ngircd not found at ${NGIRCD_BIN}: apt-get install -y ngircd (or set NGIRCD_BIN)`);
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "mom-ngircd-"));
  const conf = join(dir, "ngircd.conf");
  writeFileSync(
    conf,
    [
      "[Global]",
      "Name = irc.mom.test",
      "Info = mom test server",
      "Listen = 127.0.0.1",
      `Ports = ${port}`,
      "MotdPhrase = mom test server",
      "[Limits]",
      "MaxConnectionsIP = 0",
      "[Options]",
      "DNS = no",
      "Ident = no",
      "PAM = no",
      "",
    ].join("\n"),
  );
  let output = "";
  let child: ChildProcess;
  const start = async () => {
    child = spawn(NGIRCD_BIN, ["-n", "-f", conf], { stdio: ["ignore", "pipe", "pipe"] });
    child.stdout!.setEncoding("utf8").on("data", (d: string) => (output += d));
    child.stderr!.setEncoding("utf8").on("data", (d: string) => (output += d));
    await waitForPort(port, child, 10_000);
  };
  const kill = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGTERM");
    await exited;
  };
  try {
    await start();
  } catch (err) {
    child!.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`ngircd did not start: ${(err as Error).message}\n${output}`);
  }
  return {
    host: "127.0.0.1",
    port,
    log: () => output,
    async restart(downMs = 0) {
      await kill();
      await new Promise((r) => setTimeout(r, downMs));
      await start();
    },
    async stop() {
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
