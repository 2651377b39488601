import { spawn, type ChildProcess } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { IngressUnderTest } from "@mom/ingress-sdk/testing";
import { OutputCapture } from "./output-capture.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
export const momBin = join(root, "services/cli/bin/mom.js");

/**
 * An ingress as deployed: its own process (`args` after node), ready once `ready` is in its log;
 * stop is SIGTERM (and waits for exit 0), kill is SIGKILL.
 */
export function ingressProcess(o: { args: () => string[]; env: () => NodeJS.ProcessEnv; ready: string; buffersWhileDown?: boolean }): IngressUnderTest & { output(): string } {
  let child: ChildProcess | undefined;
  let out = new OutputCapture();
  const exit = (c: ChildProcess) => new Promise<number | null>((r) => (c.exitCode !== null || c.signalCode !== null ? r(c.exitCode) : c.once("exit", (code) => r(code))));
  return {
    ...(o.buffersWhileDown && { buffersWhileDown: true }),
    output: () => out.text,
    async start() {
      out = new OutputCapture();
      child = spawn(process.execPath, o.args(), { env: { ...process.env, ...o.env() }, stdio: ["ignore", "pipe", "pipe"] });
      child.stderr!.setEncoding("utf8").on("data", out.write);
      child.stdout!.setEncoding("utf8").on("data", out.write);
      const died = exit(child).then((code) => {
        throw new Error(`the ingress exited (${code}) before it was ready:\n${out.text}`);
      });
      died.catch(() => {}); // only the race below reports it
      await Promise.race([out.waitFor(o.ready, 30_000), died]);
    },
    async stop() {
      if (!child) return;
      const c = child;
      child = undefined;
      c.kill("SIGTERM");
      const code = await exit(c);
      if (code !== 0) throw new Error(`the ingress exited ${code} on SIGTERM:\n${out.text}`);
    },
    async kill() {
      if (!child) return;
      const c = child;
      child = undefined;
      c.kill("SIGKILL");
      await exit(c);
    },
  };
}
