import { spawn } from "node:child_process";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { type CustomToolApi, DEFAULT_TOOL_TIMEOUT_MS } from "./tool-contract.js";

export interface HostToolApiOptions {
  dataDir: string;
  workspaceDir: string;
  /** exec's timeout when the caller gives none. Default DEFAULT_TOOL_TIMEOUT_MS (2 min). */
  defaultTimeoutMs?: number;
  /** Bytes kept of each of stdout and stderr; the rest is dropped and a note appended. Default 1 MiB. */
  maxOutputBytes?: number;
  /** After SIGTERM, how long the process group gets before SIGKILL. Default 2 s. */
  killGraceMs?: number;
  /** Environment of executed commands. Default process.env. */
  env?: NodeJS.ProcessEnv;
  /** config.json `tools.settings`: each integration's settings by name. */
  settings?: Record<string, unknown>;
  /** Resolves `env:`/`file:`/`profile:` references; without it `secret` refuses every reference. */
  secret?: (ref: string) => string;
}

/** What exec rejects with on timeout or abort; carries the output seen so far. */
export class HostExecError extends Error {
  constructor(
    message: string,
    readonly reason: "timeout" | "aborted",
    readonly stdout: string,
    readonly stderr: string,
  ) {
    super(message);
    this.name = "HostExecError";
  }
}

/**
 * The `api` custom tool factories get, running on the runner's host (not in the sandbox).
 * exec runs `bash -c <command>` in its own process group (cwd relative to the workspace); on
 * timeout or abort the whole group gets SIGTERM, then SIGKILL, and exec rejects with a
 * HostExecError. A non-zero exit is not an error: it is in `exitCode` (null when killed by a
 * signal). readFile/writeFile resolve relative paths against the workspace; writeFile creates
 * missing parent directories.
 */
export function createHostToolApi(opts: HostToolApiOptions): CustomToolApi {
  const workspaceDir = resolve(opts.workspaceDir);
  const dataDir = resolve(opts.dataDir);
  const maxBytes = opts.maxOutputBytes ?? 1024 * 1024;
  const grace = opts.killGraceMs ?? 2000;
  const at = (p: string) => resolve(workspaceDir, p);

  function exec(command: string, o: { cwd?: string; timeoutMs?: number; signal?: AbortSignal } = {}) {
    const timeoutMs = o.timeoutMs ?? opts.defaultTimeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS;
    return new Promise<{ stdout: string; stderr: string; exitCode: number | null }>((done, fail) => {
      if (o.signal?.aborted) {
        fail(new HostExecError(`command aborted before it started: ${command}`, "aborted", "", ""));
        return;
      }
      const child = spawn("bash", ["-c", command], {
        cwd: at(o.cwd ?? "."),
        env: opts.env ?? process.env,
        stdio: ["ignore", "pipe", "pipe"],
        detached: true,
      });
      const out = capped(maxBytes);
      const err = capped(maxBytes);
      child.stdout.on("data", out.push);
      child.stderr.on("data", err.push);

      let stopped: "timeout" | "aborted" | undefined;
      let killTimer: NodeJS.Timeout | undefined;
      const killGroup = (sig: NodeJS.Signals) => {
        try {
          if (child.pid) process.kill(-child.pid, sig);
        } catch {
          // Already gone.
        }
      };
      const stop = (why: "timeout" | "aborted") => {
        if (stopped) return;
        stopped = why;
        killGroup("SIGTERM");
        killTimer = setTimeout(() => {
          killGroup("SIGKILL");
          // Something outside the group may still hold the pipes open: stop waiting for them.
          setTimeout(() => {
            child.stdout.destroy();
            child.stderr.destroy();
            finish(null);
          }, 1000).unref();
        }, grace);
        killTimer.unref();
      };
      const timer = setTimeout(() => stop("timeout"), timeoutMs);
      const onAbort = () => stop("aborted");
      o.signal?.addEventListener("abort", onAbort, { once: true });
      const cleanup = () => {
        clearTimeout(timer);
        o.signal?.removeEventListener("abort", onAbort);
      };

      let settled = false;
      const finish = (code: number | null) => {
        if (settled) return;
        settled = true;
        cleanup();
        const stdout = out.text();
        const stderr = err.text();
        if (stopped === "timeout") fail(new HostExecError(`command timed out after ${timeoutMs} ms: ${command}`, "timeout", stdout, stderr));
        else if (stopped === "aborted") fail(new HostExecError(`command aborted: ${command}`, "aborted", stdout, stderr));
        else done({ stdout, stderr, exitCode: code });
      };
      child.on("close", (code) => finish(code));
      child.on("error", (e) => {
        if (settled) return;
        settled = true;
        cleanup();
        if (killTimer) clearTimeout(killTimer);
        fail(e);
      });
    });
  }

  return {
    dataDir,
    workspaceDir,
    exec,
    readFile: (p) => readFile(at(p), "utf8"),
    writeFile: async (p, content) => {
      const file = at(p);
      await mkdir(dirname(file), { recursive: true });
      await writeFile(file, content);
    },
    settings: (name) => opts.settings?.[name],
    secret: (ref) => {
      if (!opts.secret) throw new Error(`secret ${ref}: this host gives tools no credentials`);
      return opts.secret(ref);
    },
  };
}

function capped(max: number) {
  const chunks: Buffer[] = [];
  let kept = 0;
  let dropped = 0;
  return {
    push: (chunk: Buffer) => {
      const room = max - kept;
      if (room <= 0) {
        dropped += chunk.length;
        return;
      }
      const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
      chunks.push(part);
      kept += part.length;
      dropped += chunk.length - part.length;
    },
    text: () => {
      const s = Buffer.concat(chunks).toString("utf8");
      return dropped ? `${s}\n[output truncated: ${dropped} more bytes]` : s;
    },
  };
}
