import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { eventually, ScriptedMom } from "@mom/ingress-sdk/testing";
import { spawnNatsServer, type TestNats } from "@mom/testing";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { pino } from "pino";
import { type RunningCliIngress, startCliIngress } from "@mom/ingress-cli";

/** One terminal: what is typed into it, and everything it wrote. */
interface Terminal {
  running: RunningCliIngress;
  type(line: string): void;
  output: () => string;
}

// The terminal chat on the ingress SDK's shell, against a real NATS with mom played by the
// conformance kit's ScriptedMom: what it must keep doing that no other ingress does.
describe("the terminal chat on the ingress shell", () => {
  let nats: TestNats;
  let mom: ScriptedMom;
  let dir: string;
  const terminals: Terminal[] = [];

  async function terminal(channelId: string): Promise<Terminal> {
    const input = new PassThrough();
    let text = "";
    const logger = pino({ level: "silent" });
    const running = await startCliIngress(
      { adapter: "cli", channelId, user: { id: "u-tester", username: "tester" }, input, output: { write: (t) => void (text += t) }, logger, cwd: dir, downloadsDir: join(dir, "downloads"), maxAttachmentBytes: 1024 },
      { url: nats.url, name: "ingress-cli", namespace: nats.namespace, reconnectTimeWaitMs: 200, logger },
    );
    const t = { running, type: (line: string) => void input.write(`${line}\n`), output: () => text };
    terminals.push(t);
    return t;
  }
  const shows = (t: Terminal, what: string | RegExp) => eventually(() => (typeof what === "string" ? t.output().includes(what) : what.test(t.output())), `${String(what)} in the terminal`);

  beforeAll(async () => {
    nats = await spawnNatsServer();
    mom = await ScriptedMom.connect({ natsUrl: nats.url, namespace: nats.namespace, adapter: "cli" });
    dir = mkdtempSync(join(tmpdir(), "mom-terminal-"));
  });
  afterAll(async () => {
    for (const t of terminals) await t.running.close().catch(() => {});
    await mom?.close();
    await nats?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("streams the answer as it is written, each terminal of one adapter drawing its own conversation whole", async () => {
    const local = await terminal("local");
    const other = await terminal("other");
    local.type("hello from local");
    other.type("hello from other");
    const [ml, mo] = [await mom.message("local", "hello from local"), await mom.message("other", "hello from other")];
    expect(ml).toMatchObject({ isMention: true, isDirect: true, sender: { id: "u-tester", username: "tester", isBot: false } });
    const rl = await mom.startRun("local", ml);
    const ro = await mom.startRun("other", mo);
    await rl.emit({ type: "message_update", assistantMessageEvent: { type: "text_delta", contentIndex: 0, delta: "Written " } });
    await shows(local, "Written ");
    // On screen while the model still writes: nothing waits for the run's end.
    expect(local.output()).not.toContain("as it comes.");
    await rl.emit({ type: "message_update", assistantMessageEvent: { type: "text_delta", contentIndex: 0, delta: "as it comes." } });
    await rl.end("Written as it comes.");
    await ro.end("Answer for the other terminal.");
    await shows(local, /Written as it comes\.\n[\s\S]* in · /);
    await shows(other, /Answer for the other terminal\.\n[\s\S]* in · /);
    expect(local.output().split("Written as it comes.").length).toBe(2);
    expect(local.output()).not.toContain("other terminal");
    expect(other.output()).not.toContain("Written");
  }, 30_000);

  it("/attach sends the file with the line, y answers the approval prompt, a file mom shares is saved", async () => {
    const [local] = terminals;
    writeFileSync(join(dir, "notes.txt"), "three lines\nof notes\n.\n");
    local!.type("/attach notes.txt read this");
    const m = await mom.message("local", "read this");
    expect(m.attachments).toEqual([expect.objectContaining({ filename: "notes.txt", size: 23, objectKey: expect.any(String) })]);
    expect(new TextDecoder().decode(await mom.bus.getFile(m.attachments[0]!.objectKey!))).toBe("three lines\nof notes\n.\n");
    writeFileSync(join(dir, "big.bin"), Buffer.alloc(1025));
    local!.type("/attach big.bin too big");
    await shows(local!, "✗ cannot attach big.bin: too large");

    const run = await mom.startRun("local", m);
    await run.emit({ type: "approval_requested", approvalId: "ap-1", toolId: "bash", risk: "destructive", argsSummary: "rm notes.txt", requestedBy: { id: "u-tester", username: "tester" }, expiresAt: new Date(Date.now() + 60_000).toISOString(), approvers: ["u-tester"] });
    await shows(local!, "allow once? type y or n");
    local!.type("y");
    const d = await eventually(async () => (await mom.decisions("local")).find((x) => x.approvalId === "ap-1"), "the decision on mom.ctl");
    expect(d).toMatchObject({ decision: "allow-once", decidedBy: { id: "u-tester", username: "tester" } });
    await run.emit({ type: "approval_resolved", approvalId: "ap-1", outcome: "approved", decidedBy: "tester" });
    await run.emit(await mom.shareFile("local", "summary.txt", new TextEncoder().encode("a summary")));
    await run.end("Read it.");
    await shows(local!, `📎 summary.txt saved to ${join(dir, "downloads", "summary.txt")}`);
    // Nothing of the big file was sent.
    expect((await mom.messages("local")).some((x) => x.text === "too big")).toBe(false);
  }, 30_000);

  it("says at once when NATS is away, and the line typed again afterwards is sent", async () => {
    const [local] = terminals;
    const back = nats.restart!(8_000);
    await new Promise((r) => setTimeout(r, 300));
    const began = Date.now();
    local!.type("said while NATS is away");
    await shows(local!, "✗ could not send (NATS)");
    expect(Date.now() - began).toBeLessThan(7_000);
    await back;
    // The terminal reconnects every 200 ms here; then the person types the line again.
    await new Promise((r) => setTimeout(r, 1_500));
    local!.type("said again");
    await eventually(async () => (await mom.messages("local").catch(() => [])).some((x) => x.text === "said again"), `"said again" published once NATS is back`);
    expect((await mom.messages("local")).some((x) => x.text === "said while NATS is away")).toBe(false);
  }, 40_000);
});
