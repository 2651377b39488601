import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { spawn } from "node:child_process";
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { logsCommand } from "./logs-command.js";

const mom = join(dirname(fileURLToPath(import.meta.url)), "../bin/mom.js");
const line = (o: Record<string, unknown>) => `${JSON.stringify({ time: "2026-11-23T13:11:53.000Z", pid: 7, hostname: "h", ...o })}\n`;

describe("mom logs", () => {
  let dir: string;
  let file: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "mom-logs-"));
    mkdirSync(join(dir, "logs"));
    file = join(dir, "logs", "mom.log");
    writeFileSync(
      file,
      [
        line({ level: "info", service: "mom", msg: "mom up ready" }),
        line({ level: "debug", service: "agent-runner", channel: "cli/local", msg: "run started" }),
        line({ level: "warn", service: "agent-runner", channel: "slack-acme/C1", msg: "slow model" }),
        line({ level: "error", service: "ingress-slack-acme", channel: "slack-acme/C1", msg: "post failed" }),
        "some non-JSON output of a child\n",
      ].join(""),
    );
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const run = async (o: Record<string, string | boolean>) => {
    let out = "";
    await logsCommand({ data: dir, ...o }, (t) => (out += t));
    return out;
  };

  it("pretty-prints every line, the service and channel before the message", async () => {
    const out = await run({});
    expect(out).toMatch(/\[2026-11-2\d \d\d:\d\d:53\.000\] INFO: mom: mom up ready\n/);
    expect(out).toMatch(/WARN: agent-runner slack-acme\/C1: slow model\n/);
    expect(out).toContain("some non-JSON output of a child\n");
    expect(out).not.toContain('"pid"');
  });

  it("filters by service (or a prefix), channel (or adapter) and level", async () => {
    expect((await run({ service: "agent-runner" })).trim().split("\n")).toHaveLength(2);
    expect(await run({ service: "ingress" })).toContain("post failed");
    expect(await run({ service: "ingress" })).not.toContain("slow model");
    const acme = await run({ channel: "slack-acme" });
    expect(acme).toContain("slow model");
    expect(acme).toContain("post failed");
    expect(acme).not.toContain("run started");
    const warn = await run({ level: "warn" });
    expect(warn).not.toContain("run started");
    expect(warn).not.toContain("mom up ready");
    expect(warn).toContain("post failed");
    expect((await run({ json: true, level: "error" })).trim()).toBe(line({ level: "error", service: "ingress-slack-acme", channel: "slack-acme/C1", msg: "post failed" }).trim());
    await expect(run({ level: "loud" })).rejects.toThrow("--level: expected one of trace, debug, info, warn, error, fatal");
  });

  it("-f prints what is appended, filtered, until stopped", async () => {
    const child = spawn(process.execPath, [mom, "logs", "-f", "-d", dir, "--service", "scheduler", "-n", "0"], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (t: string) => (out += t));
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    try {
      // Appended until the follower, however long it takes to start on a busy machine, prints it.
      const deadline = Date.now() + 20_000;
      while (!out.includes("fired daily.json") && Date.now() < deadline) {
        appendFileSync(file, line({ level: "info", service: "agent-runner", msg: "not this" }) + line({ level: "info", service: "scheduler", msg: "fired daily.json" }));
        await new Promise((r) => setTimeout(r, 700));
      }
      expect(out).toContain("INFO: scheduler: fired daily.json");
      expect(out).not.toContain("not this");
    } finally {
      child.kill("SIGINT");
    }
    expect(await exited).toBe(0);
  }, 30_000);

  it("says where the log comes from when there is none", async () => {
    const empty = mkdtempSync(join(tmpdir(), "mom-logs-none-"));
    try {
      await expect(logsCommand({ data: empty }, () => {})).rejects.toThrow(`no log at ${join(empty, "logs", "mom.log")}: \`mom up\` writes it`);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
