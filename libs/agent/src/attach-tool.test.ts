import { describe, expect, it } from "@jest/globals";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Sandbox } from "@mom/sandbox";
import { type AttachFile, createAttachTool } from "./attach-tool.js";
import { formatChatLine } from "./log-sync.js";
import { loadTriggerImages } from "./trigger-images.js";

function setup(maxBytes = 1024) {
  const root = mkdtempSync(join(tmpdir(), "mom-attach-"));
  const workspaceDir = join(root, "workspace");
  const cwd = join(workspaceDir, "channels", "cli", "local");
  const other = join(workspaceDir, "channels", "cli", "other");
  mkdirSync(join(cwd, "scratch"), { recursive: true });
  mkdirSync(other, { recursive: true });
  writeFileSync(join(other, "log.jsonl"), '{"text":"private"}\n');
  writeFileSync(join(root, "config.json"), '{"secret": true}');
  const sent: AttachFile[] = [];
  const sandbox = new Sandbox({ type: "host" }, { dataDir: root, workspaceDir }).forChannel(cwd);
  const tool = createAttachTool({ sandbox, workspaceDir, attach: { maxBytes, send: async (f) => void sent.push(f) } });
  const call = (params: { path: string; title?: string }) => tool.execute("call-1", { label: "Share", ...params }, undefined, undefined, undefined as never);
  return { root, workspaceDir, cwd, other, sent, call, sandbox };
}

describe("attach tool", () => {
  it("sends a workspace file with its workspace-relative path, title and type", async () => {
    const t = setup();
    writeFileSync(join(t.cwd, "scratch", "chart.png"), "png-bytes");
    const result = await t.call({ path: "scratch/chart.png", title: "Sales chart" });
    expect(result.content[0]).toMatchObject({ type: "text", text: expect.stringContaining("Attached chart.png") });
    expect(t.sent).toHaveLength(1);
    expect(t.sent[0]).toMatchObject({ filename: "chart.png", path: "channels/cli/local/scratch/chart.png", title: "Sales chart", mimeType: "image/png", size: 9 });
    expect(Buffer.from(t.sent[0]!.bytes).toString()).toBe("png-bytes");
    // absolute paths inside the workspace work too
    await t.call({ path: join(t.workspaceDir, "channels", "cli", "local", "scratch", "chart.png") });
    expect(t.sent).toHaveLength(2);
  });

  it("refuses files outside the workspace or in another channel, also through .. and symlinks", async () => {
    const t = setup();
    await expect(t.call({ path: "/etc/passwd" })).rejects.toThrow(/refused, only files inside the workspace/);
    await expect(t.call({ path: "../../../../config.json" })).rejects.toThrow(/not visible to this channel/);
    await expect(t.call({ path: "../other/log.jsonl" })).rejects.toThrow(/not visible to this channel/);
    symlinkSync(join(t.root, "config.json"), join(t.cwd, "scratch", "innocent.txt"));
    await expect(t.call({ path: "scratch/innocent.txt" })).rejects.toThrow(/not visible/);
    symlinkSync(t.root, join(t.cwd, "up"));
    await expect(t.call({ path: "up/config.json" })).rejects.toThrow(/not visible/);
    symlinkSync(join(t.other, "log.jsonl"), join(t.cwd, "their-log"));
    await expect(t.call({ path: "their-log" })).rejects.toThrow(/not visible/);
    expect(t.sent).toEqual([]);
  });

  it("refuses missing files, directories, empty paths and files over the limit", async () => {
    const t = setup(10);
    await expect(t.call({ path: "nope.txt" })).rejects.toThrow("nope.txt: no such file");
    execFileSync("mkfifo", [join(t.cwd, "fifo")]);
    await expect(t.call({ path: "fifo" })).rejects.toThrow(/not a regular file/);
    await expect(t.call({ path: "scratch" })).rejects.toThrow(/is a directory/);
    await expect(t.call({ path: "  " })).rejects.toThrow(/path is empty/);
    writeFileSync(join(t.cwd, "big.bin"), Buffer.alloc(11));
    await expect(t.call({ path: "big.bin" })).rejects.toThrow("big.bin: too large to attach (11 bytes > 10 bytes limit)");
    expect(t.sent).toEqual([]);
  });

  it("reports an error when the runner gave no way to send files", async () => {
    const tool = createAttachTool({ sandbox: setup().sandbox, workspaceDir: tmpdir() });
    await expect(tool.execute("c", { label: "x", path: "a" }, undefined, undefined, undefined as never)).rejects.toThrow(/not available/);
  });
});

describe("attachments as the model sees them", () => {
  it("lists saved files relative to the channel dir and unavailable ones with the reason", () => {
    const line = formatChatLine({
      date: "2026-11-21T10:00:00.000Z",
      userName: "alice",
      text: "files",
      attachments: [
        { filename: "report.pdf", localPath: "channels/cli/local/attachments/1-report.pdf" },
        { filename: "huge.zip", localPath: "", note: "too large: 31 MB > 20 MB limit" },
        { filename: "old.txt", localPath: "" },
      ],
    });
    expect(line).toBe(
      "[2026-11-21T10:00:00.000Z] [@alice]: files\n\nAttachments:\n- attachments/1-report.pdf\n- huge.zip (not available: too large: 31 MB > 20 MB limit)\n- old.txt (not available)",
    );
  });

  it("turns materialised images into image content and skips the rest", async () => {
    const t = setup();
    mkdirSync(join(t.cwd, "attachments"));
    writeFileSync(join(t.cwd, "attachments", "1-a.png"), "PNGDATA");
    writeFileSync(join(t.cwd, "attachments", "1-b.txt"), "text");
    // Another channel's image, and a symlink the agent made to it: neither reaches this channel's model.
    mkdirSync(join(t.workspaceDir, "channels", "cli", "other", "attachments"), { recursive: true });
    writeFileSync(join(t.workspaceDir, "channels", "cli", "other", "attachments", "1-o.png"), "THEIRS");
    symlinkSync(join(t.workspaceDir, "channels", "cli", "other", "attachments", "1-o.png"), join(t.cwd, "attachments", "1-linked.png"));
    const images = await loadTriggerImages(
      [
        { filename: "a.png", localPath: "channels/cli/local/attachments/1-a.png", mimeType: "image/png" },
        { filename: "b.txt", localPath: "channels/cli/local/attachments/1-b.txt" },
        { filename: "c.jpg", localPath: "" },
        { filename: "gone.gif", localPath: "channels/cli/local/attachments/gone.gif" },
        { filename: "escape.png", localPath: "../config.json" },
        { filename: "other.png", localPath: "channels/cli/other/attachments/1-o.png" },
        { filename: "linked.png", localPath: "channels/cli/local/attachments/1-linked.png" },
      ],
      t.workspaceDir,
      t.cwd,
    );
    expect(images).toEqual([{ type: "image", data: Buffer.from("PNGDATA").toString("base64"), mimeType: "image/png" }]);
  });
});
