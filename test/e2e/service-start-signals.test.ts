import { describe, expect, it } from "@jest/globals";
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { OutputCapture } from "../support/output-capture.js";

// A deployed `mom` service (runner, scheduler, console, ingress) told to stop while it still
// starts: a rollout's SIGTERM, or the end of the `mom up` that started it (its IPC channel). Both
// stop it as soon as it is up, closing what it started, exit code 0. Before, a SIGTERM met Node's
// default action mid-start, and a child whose `mom up` died then ran on, orphaned.
const fixture = fileURLToPath(new URL("../support/slow-start-service.mjs", import.meta.url));

function start() {
  const child = fork(fixture, [], { stdio: ["ignore", "pipe", "pipe", "ipc"] });
  const out = new OutputCapture();
  child.stderr!.setEncoding("utf8").on("data", out.write);
  const exited = new Promise<number | string>((r) => child.once("exit", (code, signal) => r(code ?? String(signal))));
  return { child, out, exited };
}

describe("a service stopped while it starts", () => {
  it("SIGTERM: it stops once it is up, closing what it started, exit 0", async () => {
    const s = start();
    await s.out.waitFor("starting", 15_000);
    s.child.kill("SIGTERM");
    expect(await s.exited).toBe(0);
    expect(s.out.text).toBe("starting\nup\nclosed\n");
  }, 30_000);

  it("the parent's IPC channel gone (`mom up` killed): it stops once it is up, exit 0", async () => {
    const s = start();
    await s.out.waitFor("starting", 15_000);
    s.child.disconnect();
    expect(await s.exited).toBe(0);
    expect(s.out.text).toBe("starting\nup\nclosed\n");
  }, 30_000);
});
