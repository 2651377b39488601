import { afterEach, describe, expect, it } from "@jest/globals";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createHostToolApi, HostExecError } from "./host-api.js";

const roots: string[] = [];
afterEach(() => {
  for (const d of roots.splice(0)) rmSync(d, { recursive: true, force: true });
});

function workspace() {
  const ws = mkdtempSync(join(tmpdir(), "mom-hostapi-"));
  roots.push(ws);
  return ws;
}

/** True while a process with this pid exists. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitGone(pid: number, ms = 5000): Promise<boolean> {
  const end = Date.now() + ms;
  while (alive(pid)) {
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 25));
  }
  return true;
}

describe("createHostToolApi", () => {
  it("runs bash commands in the workspace and reports output and exit code", async () => {
    const ws = workspace();
    const api = createHostToolApi({ dataDir: join(ws, "data"), workspaceDir: ws });
    expect(api.workspaceDir).toBe(ws);
    expect(await api.exec("pwd; echo oops >&2; exit 3")).toEqual({ stdout: `${ws}\n`, stderr: "oops\n", exitCode: 3 });
    await api.writeFile("sub/dir/f.txt", "hi");
    expect((await api.exec("cat f.txt", { cwd: "sub/dir" })).stdout).toBe("hi");
  });

  it("reads and writes files relative to the workspace, creating parent dirs", async () => {
    const ws = workspace();
    const api = createHostToolApi({ dataDir: ws, workspaceDir: ws });
    await api.writeFile("a/b/c.txt", "content");
    expect(readFileSync(join(ws, "a/b/c.txt"), "utf8")).toBe("content");
    expect(await api.readFile("a/b/c.txt")).toBe("content");
    expect(await api.readFile(join(ws, "a/b/c.txt"))).toBe("content");
    await expect(api.readFile("missing.txt")).rejects.toThrow(/ENOENT/);
  });

  it("kills the whole process group on timeout", async () => {
    const ws = workspace();
    const api = createHostToolApi({ dataDir: ws, workspaceDir: ws, killGraceMs: 200 });
    const started = Date.now();
    // The background sleep is a grandchild: killing only bash would leave it running.
    const err = await api.exec("sleep 30 & echo $! > child.pid; echo started; wait", { timeoutMs: 300 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HostExecError);
    expect((err as HostExecError).reason).toBe("timeout");
    expect((err as HostExecError).message).toContain("timed out after 300 ms");
    expect((err as HostExecError).stdout).toBe("started\n");
    expect(Date.now() - started).toBeLessThan(5000);
    const pid = Number(readFileSync(join(ws, "child.pid"), "utf8"));
    expect(await waitGone(pid)).toBe(true);
  });

  it("kills the process group when the signal aborts, and refuses an already aborted signal", async () => {
    const ws = workspace();
    const api = createHostToolApi({ dataDir: ws, workspaceDir: ws, killGraceMs: 200 });
    const controller = new AbortController();
    const pending = api.exec("sleep 30 & echo $! > child.pid; wait", { signal: controller.signal });
    await new Promise((r) => setTimeout(r, 300));
    controller.abort();
    const err = await pending.catch((e: unknown) => e);
    expect((err as HostExecError).reason).toBe("aborted");
    const pid = Number(readFileSync(join(ws, "child.pid"), "utf8"));
    expect(await waitGone(pid)).toBe(true);

    await expect(api.exec("touch never", { signal: controller.signal })).rejects.toThrow("aborted before it started");
    expect(existsSync(join(ws, "never"))).toBe(false);
  });

  it("escalates to SIGKILL when the command ignores SIGTERM", async () => {
    const ws = workspace();
    const api = createHostToolApi({ dataDir: ws, workspaceDir: ws, killGraceMs: 200 });
    const started = Date.now();
    const err = await api.exec("trap '' TERM; sleep 30 & wait; sleep 30", { timeoutMs: 200 }).catch((e: unknown) => e);
    expect((err as HostExecError).reason).toBe("timeout");
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it("caps output", async () => {
    const ws = workspace();
    const api = createHostToolApi({ dataDir: ws, workspaceDir: ws, maxOutputBytes: 100 });
    const r = await api.exec("head -c 1000 /dev/zero | tr '\\0' x");
    expect(r.stdout).toBe(`${"x".repeat(100)}\n[output truncated: 900 more bytes]`);
    expect(r.exitCode).toBe(0);
  });

  it("rejects when the working directory does not exist", async () => {
    const ws = workspace();
    const api = createHostToolApi({ dataDir: ws, workspaceDir: ws });
    await expect(api.exec("true", { cwd: "nope" })).rejects.toThrow(/ENOENT/);
  });
});
