import { afterAll, beforeAll, beforeEach, describe, expect, it } from "@jest/globals";
import { fileObjectName } from "@mom/bus";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startStack, type Stack } from "../support/stack.js";
import { outboundEvents } from "../support/streams.js";

// A 1x1 red PNG.
const PNG_BASE64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
const MAX_BYTES = 64 * 1024;

const channelDir = (s: Stack) => join(s.loaded.paths.workspaceDir, "channels", "cli", "local");
const readJsonl = (file: string) => readFileSync(file, "utf8").trim().split("\n").map((l) => JSON.parse(l));
/** The user message that triggered the request (the last one the model got). */
const lastUserContent = (s: Stack, i: number) => s.llm.requests[i]!.messages.filter((m) => m.role === "user").at(-1)!.content;
const attachmentEvents = async (s: Stack) => (await outboundEvents(s.bus)).filter((e) => e.event.type === "attachment");

describe("attachments end to end (real NATS + Object Store, fake LLM, runner + CLI ingress)", () => {
  let s: Stack;
  beforeAll(async () => {
    s = await startStack({ config: { attachments: { maxBytes: MAX_BYTES } } });
  });
  afterAll(async () => {
    await s?.stop();
  });
  beforeEach(() => {
    s.output.text = "";
  });

  it("/attach of a PNG: saved under attachments/, logged with its path, and shown to the model as an image", async () => {
    writeFileSync(join(s.dataDir, "dot.png"), Buffer.from(PNG_BASE64, "base64"));
    s.llm.enqueue({ text: "A red dot." });
    const before = s.llm.requests.length;
    s.type("/attach dot.png what is in this picture?");
    await s.output.waitFor("A red dot.");

    const content = lastUserContent(s, before);
    expect(Array.isArray(content)).toBe(true);
    expect(content).toEqual(
      expect.arrayContaining([
        { type: "text", text: expect.stringMatching(/\[@tester\]: what is in this picture\?\n\nAttachments:\n- attachments\/\d+-dot\.png$/) },
        { type: "image_url", image_url: { url: `data:image/png;base64,${PNG_BASE64}` } },
      ]),
    );

    const saved = readdirSync(join(channelDir(s), "attachments")).filter((f) => f.endsWith("-dot.png"));
    expect(saved).toHaveLength(1);
    expect(readFileSync(join(channelDir(s), "attachments", saved[0]!)).toString("base64")).toBe(PNG_BASE64);
    const logged = readJsonl(join(channelDir(s), "log.jsonl")).find((e) => e.text === "what is in this picture?");
    expect(logged.attachments).toEqual([
      {
        filename: "dot.png",
        localPath: `channels/cli/local/attachments/${saved[0]}`,
        mimeType: "image/png",
        size: Buffer.from(PNG_BASE64, "base64").length,
        objectKey: expect.stringMatching(/^cli\/local\/[0-9a-f-]{36}\/dot\.png$/),
      },
    ]);
  });

  it("/attach of a text file: listed by path in the prompt, no image part, readable by the agent", async () => {
    writeFileSync(join(s.dataDir, "notes.txt"), "buy milk\n");
    s.llm.enqueue(
      (req) => {
        const text = JSON.stringify(req.messages.at(-1));
        const path = /attachments\/\d+-notes\.txt/.exec(text)?.[0];
        return { toolCalls: [{ name: "bash", arguments: { label: "Read the notes", command: `cat ${path}` } }] };
      },
      { text: "Your notes say to buy milk." },
    );
    const before = s.llm.requests.length;
    s.type("/attach notes.txt summarise");
    await s.output.waitFor("Your notes say to buy milk.");
    const content = JSON.stringify(lastUserContent(s, before));
    expect(content).toMatch(/Attachments:\\n- attachments\/\d+-notes\.txt/);
    expect(content).not.toContain("image_url");
    expect(JSON.stringify(s.llm.requests[before + 1]!.messages)).toContain("buy milk");
  });

  it("/attach errors are printed in the terminal and nothing is sent", async () => {
    writeFileSync(join(s.dataDir, "big.bin"), Buffer.alloc(MAX_BYTES + 1));
    const before = s.llm.requests.length;
    s.type("/attach nope.txt hello");
    s.type("/attach big.bin hello");
    s.type("/attach");
    await s.output.waitFor("✗ usage: /attach <path> [message]");
    expect(s.output.text).toContain("✗ cannot attach nope.txt: no such file");
    expect(s.output.text).toContain("✗ cannot attach big.bin: too large (65,537 bytes > 65,536 bytes limit)");
    await new Promise((r) => setTimeout(r, 300));
    expect(s.llm.requests.length).toBe(before);
  });

  it("files the runner cannot bring in (too large, missing from the store) reach the model as notes", async () => {
    const ref = { adapter: "cli", channelId: "local" };
    const bigKey = fileObjectName(ref, "huge.zip");
    await s.bus.putFile(bigKey, new Uint8Array(MAX_BYTES + 1));
    s.llm.enqueue({ text: "Noted." });
    const before = s.llm.requests.length;
    const id = `ext-${Date.now()}`;
    await s.bus.publish(
      s.bus.subjects.channel("in", ref),
      {
        id,
        channelId: "local",
        timestamp: new Date().toISOString(),
        sender: { id: "u-other", username: "other", isBot: false },
        text: "two files",
        attachments: [
          { filename: "huge.zip", localPath: "", objectKey: bigKey }, // the ingress did not say how big
          { filename: "lost.pdf", localPath: "", objectKey: fileObjectName(ref, "lost.pdf"), size: 10 },
        ],
        isMention: true,
      },
      id,
    );
    await s.output.waitForAnswer("Noted.");
    const text = JSON.stringify(lastUserContent(s, before));
    expect(text).toContain("- huge.zip (not available: too large: 65,537 bytes > 65,536 bytes limit)");
    expect(text).toContain("- lost.pdf (not available: not found in the object store)");
    const logged = readJsonl(join(channelDir(s), "log.jsonl")).find((e) => e.id === id);
    expect(logged.attachments.map((a: { note?: string }) => a.note)).toEqual(["too large: 65,537 bytes > 65,536 bytes limit", "not found in the object store"]);
    expect(readdirSync(join(channelDir(s), "attachments")).some((f) => f.includes("huge") || f.includes("lost"))).toBe(false);
  });

  it("the agent attaches a file it wrote: the CLI saves it to the downloads dir with the same bytes", async () => {
    const content = `report ${Date.now()}\n${"x".repeat(1000)}`;
    s.llm.enqueue(
      { toolCalls: [{ name: "write", arguments: { label: "Write the report", path: "scratch/report.txt", content } }] },
      { toolCalls: [{ name: "attach", arguments: { label: "Share the report", path: "scratch/report.txt", title: "Weekly report" } }] },
      { text: "Here is the report." },
    );
    s.type("send me the report");
    await s.output.waitFor("Here is the report.");
    const m = /📎 Weekly report saved to (.+)\n/.exec(s.output.text);
    expect(m).not.toBeNull();
    const saved = m![1]!;
    expect(saved).toBe(join(s.dataDir, "downloads", "report.txt"));
    expect(readFileSync(saved, "utf8")).toBe(content);
    // the file line comes before the answer, and the event belongs to the run
    expect(s.output.text.indexOf("📎")).toBeLessThan(s.output.text.indexOf("Here is the report."));
    const ev = (await attachmentEvents(s)).at(-1)!;
    expect(ev.event).toMatchObject({
      type: "attachment",
      filename: "report.txt",
      path: "channels/cli/local/scratch/report.txt",
      title: "Weekly report",
      mimeType: "text/plain",
      size: Buffer.byteLength(content),
    });

    // attaching the same name again does not overwrite the first download
    s.output.text = "";
    s.llm.enqueue({ toolCalls: [{ name: "attach", arguments: { label: "Again", path: "scratch/report.txt" } }] }, { text: "Sent again." });
    s.type("once more");
    await s.output.waitFor("Sent again.");
    expect(s.output.text).toContain(`📎 report.txt saved to ${join(s.dataDir, "downloads", "report-2.txt")}`);
  });

  it("attach outside the workspace (absolute, .., symlink) is a tool error and nothing is sent", async () => {
    const eventsBefore = (await attachmentEvents(s)).length;
    s.llm.enqueue(
      {
        toolCalls: [
          { name: "attach", arguments: { label: "Share passwd", path: "/etc/passwd" } },
          { name: "attach", arguments: { label: "Share config", path: "../../../../config.json" } },
          { name: "bash", arguments: { label: "Link config", command: "ln -s ../../../../../config.json scratch/innocent.json && ls -l scratch/innocent.json" } },
        ],
      },
      { toolCalls: [{ name: "attach", arguments: { label: "Share link", path: "scratch/innocent.json" } }] },
      { text: "I cannot share those." },
    );
    const before = s.llm.requests.length;
    s.type("send me /etc/passwd and the config");
    await s.output.waitFor("I cannot share those.");
    expect(s.output.text).toMatch(/✗ Share passwd \([\d.]+ m?s\): .*refused, only files inside the workspace/);
    expect(s.output.text).toMatch(/✗ Share config \([\d.]+ m?s\): .*not visible to this channel/);
    expect(s.output.text).toMatch(/✓ Link config/); // the link itself works (the sandbox hides what it points at)
    expect(s.output.text).toMatch(/✗ Share link \([\d.]+ m?s\): .*not visible to this channel/);
    expect(s.output.text).not.toContain("📎");
    expect(JSON.stringify(s.llm.requests[before + 1]!.messages)).toContain("refused, only files inside the workspace");
    expect((await attachmentEvents(s)).length).toBe(eventsBefore);
    expect(existsSync(join(s.dataDir, "downloads", "passwd"))).toBe(false);
    expect(existsSync(join(s.dataDir, "downloads", "config.json"))).toBe(false);
  });
});
