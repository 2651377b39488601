import { describe, expect, it } from "@jest/globals";
import { createAttachTool } from "@mom/agent";
import type { Bus } from "@mom/bus";
import { Sandbox } from "@mom/sandbox";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { ActiveRun, type RunInProgress } from "./active-run.js";
import { attachmentSender } from "./attachment-sender.js";
import type { RunPublisher } from "./run-publisher.js";

describe("attach through the runner's attachment sender", () => {
  it("a stop while the file is being put into the files bucket: no attachment event, which would come after the run's end", async () => {
    const root = mkdtempSync(join(tmpdir(), "mom-attach-send-"));
    try {
      const workspaceDir = join(root, "workspace");
      const cwd = join(workspaceDir, "channels", "cli", "local");
      mkdirSync(join(cwd, "scratch"), { recursive: true });
      writeFileSync(join(cwd, "scratch", "report.pdf"), "pdf-bytes");
      // The files bucket is the outer edge here: the put waits until the test lets it end.
      let putting!: () => void;
      const putStarted = new Promise<void>((r) => (putting = r));
      let finishPut!: () => void;
      const putDone = new Promise<void>((r) => (finishPut = r));
      const bus = {
        putFile: async () => {
          putting();
          await putDone;
          return {};
        },
      } as unknown as Bus;
      const emitted: { type: string }[] = [];
      const active = new ActiveRun();
      active.current = {
        runId: "run-1",
        message: { id: "m1", sender: { id: "U1", username: "ann" } } as RunInProgress["message"],
        publisher: { emit: (e: { type: string }) => emitted.push(e) } as unknown as RunPublisher,
        receipts: [],
      };
      const sandbox = new Sandbox({ type: "host" }, { dataDir: root, workspaceDir }).forChannel(cwd);
      const tool = createAttachTool({
        sandbox,
        workspaceDir,
        attach: { maxBytes: 1024, send: attachmentSender({ bus, ref: { adapter: "cli", channelId: "local" }, active, log: pino({ level: "silent" }) }) },
      });
      const stop = new AbortController();
      const call = tool.execute("call-1", { label: "Share", path: "scratch/report.pdf" } as never, stop.signal, undefined, undefined as never);
      await putStarted;
      // The stop: pi gives up the call at once and the run ends (its run_ended goes out).
      stop.abort();
      finishPut();
      await expect(call).rejects.toThrow(/aborted/);
      expect(emitted).toEqual([]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
