import { describe, expect, it } from "@jest/globals";
import { plainDialect } from "./dialect.js";
import { pino } from "pino";
import { FileRefused, importAttachment, InboundIntake, inboundMsgId, mayDirectMessage, readDownload } from "./ingress-kit.js";
import { notApproverText } from "./notes.js";

const ref = { adapter: "tg", channelId: "-100" };

function sink() {
  const put: Array<{ name: string; size: number; mimeType?: string }> = [];
  return { put, files: { putFile: async (name: string, bytes: Uint8Array, meta?: { mimeType?: string }) => void put.push({ name, size: bytes.length, ...(meta?.mimeType && { mimeType: meta.mimeType }) }) } };
}

describe("ingress kit", () => {
  it("dm policy: admins always, then everyone / none / listed", () => {
    expect(mayDirectMessage("U1", {})).toBe(true);
    expect(mayDirectMessage("U1", { dm: "everyone" })).toBe(true);
    expect(mayDirectMessage("U1", { dm: "none" })).toBe(false);
    expect(mayDirectMessage("U1", { dm: "none", admins: ["U1"] })).toBe(true);
    expect(mayDirectMessage("U1", { dm: ["U2"] })).toBe(false);
    expect(mayDirectMessage("U2", { dm: ["U2"] })).toBe(true);
  });

  it("one msg-id rule: adapter, channel and platform id", () => {
    expect(inboundMsgId("tg", { channelId: "-100", id: "42" })).toBe("tg:-100:42");
  });

  it("imports a file into the bucket, or lists it with why it was not", async () => {
    const s = sink();
    const ok = await importAttachment({ filename: "a.txt", size: 3, download: async () => ({ bytes: new Uint8Array([1, 2, 3]) }) }, ref, { files: s.files, maxBytes: 10 });
    expect(ok).toMatchObject({ filename: "a.txt", localPath: "", size: 3, mimeType: "text/plain", objectKey: expect.stringContaining("a.txt") });
    expect(s.put).toHaveLength(1);
    const big = await importAttachment({ filename: "b.bin", size: 11, download: async () => ({ bytes: new Uint8Array(11) }) }, ref, { files: s.files, maxBytes: 10 });
    expect(big.note).toBe("too large: 11 bytes > 10 bytes limit");
    const gone = await importAttachment({ filename: "c.bin", download: async () => { throw new FileRefused("download failed: HTTP 404"); } }, ref, { files: s.files, maxBytes: 10 });
    expect(gone).toEqual({ filename: "c.bin", localPath: "", note: "download failed: HTTP 404" });
    expect(s.put).toHaveLength(1);
  });

  it("gives up on a download that takes longer than timeoutMs, and tells the download to stop", async () => {
    const s = sink();
    let signal: AbortSignal | undefined;
    const stalled = { filename: "slow.bin", size: 5, download: (_max: number, sig?: AbortSignal) => ((signal = sig), new Promise<never>(() => {})) };
    const got = await importAttachment(stalled, ref, { files: s.files, maxBytes: 10, timeoutMs: 300 });
    expect(got).toEqual({ filename: "slow.bin", localPath: "", size: 5, note: "not downloaded: it took longer than 0.3 s (attachments.downloadSeconds)" });
    expect(signal?.aborted).toBe(true);
    expect(s.put).toHaveLength(0);
  });

  it("reads a download up to the limit", async () => {
    const res = (body: string, headers: Record<string, string> = {}, status = 200) => new Response(body, { status, headers });
    expect((await readDownload(res("hello", { "content-type": "text/plain; charset=utf-8" }), 10))).toEqual({ bytes: new TextEncoder().encode("hello"), mimeType: "text/plain" });
    await expect(readDownload(res("hello world!"), 5)).rejects.toThrow("too large");
    await expect(readDownload(res("", {}, 404), 5)).rejects.toThrow("download failed: HTTP 404");
  });

  it("tells non-approvers who can decide", () => {
    expect(notApproverText(["u9", "u8"], plainDialect())).toBe("Only @u9, @u8 can decide this.");
    expect(notApproverText([], plainDialect())).toBe("Only nobody (adapters.<name>.admins is empty) can decide this.");
  });
});

describe("InboundIntake (the inbound steps every ingress shares)", () => {
  const quiet = pino({ level: "silent" });

  it("handles each message once, in order per chat, chats side by side", async () => {
    const intake = new InboundIntake("Test", quiet);
    const done: string[] = [];
    const slow = (id: string, ms: number) => async () => {
      await new Promise((r) => setTimeout(r, ms));
      done.push(id);
    };
    expect(intake.take("a", "1", slow("a1", 30))).toBe(true);
    expect(intake.take("a", "2", slow("a2", 1))).toBe(true);
    expect(intake.take("b", "1", slow("b1", 1))).toBe(true); // same id, another chat
    expect(intake.take("a", "1", slow("a1 again", 1))).toBe(false);
    await intake.idle();
    expect(done).toEqual(["b1", "a1", "a2"]);
  });

  it("forgets a message whose handling failed, so the platform's redelivery is handled", async () => {
    const intake = new InboundIntake("Test", quiet);
    let attempts = 0;
    const handle = async () => {
      if (++attempts === 1) throw new Error("NATS unreachable");
    };
    intake.take("a", "1", handle);
    await intake.idle();
    await new Promise((r) => setImmediate(r));
    expect(intake.take("a", "1", handle)).toBe(true);
    await intake.idle();
    expect(attempts).toBe(2);
    expect(intake.take("a", "1", handle)).toBe(false); // handled now: a third delivery is a duplicate
  });

  it("a redelivery while the message is still being handled waits for that handling, and fails with it", async () => {
    const intake = new InboundIntake("Test", quiet);
    let store!: () => void;
    let fail!: (err: Error) => void;
    const first = intake.handle("a", "1", () => new Promise<void>((resolve) => (store = resolve)));
    const again = intake.handle("a", "1", async () => {
      throw new Error("a redelivery is not handled twice");
    });
    let settled = false;
    void again.then(() => (settled = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(settled).toBe(false); // not "known already" while the first is not stored
    store();
    expect(await first).toBe(true);
    expect(await again).toBe(false);
    expect(await intake.handle("a", "1", async () => {})).toBe(false); // stored: known at once

    const failing = intake.handle("a", "2", () => new Promise<void>((_, reject) => (fail = reject)));
    const resent = intake.handle("a", "2", async () => {});
    await new Promise((r) => setTimeout(r, 10)); // the chat's queue has started it
    fail(new Error("NATS unreachable"));
    await expect(failing).rejects.toThrow("NATS unreachable");
    await expect(resent).rejects.toThrow("NATS unreachable");
    expect(await intake.handle("a", "2", async () => {})).toBe(true); // forgotten: the next delivery is handled
  });

  it("catches a chat up ahead of what comes later, skipping messages taken already, and stops when told", async () => {
    const intake = new InboundIntake("Test", quiet);
    const done: string[] = [];
    let stop = false;
    const caught = intake.catchUp(
      "a",
      async () => {
        await new Promise((r) => setTimeout(r, 20));
        return [{ id: "1" }, { id: "2" }, { id: "3" }];
      },
      async (m) => {
        done.push(`backfill ${m.id}`);
        if (m.id === "2") stop = true;
      },
      () => stop,
    );
    expect(intake.take("a", "1", async () => void done.push("live 1"))).toBe(true);
    await intake.idle();
    expect(await caught).toBe(1);
    expect(done).toEqual(["backfill 2", "live 1"]);
    expect(intake.take("a", "2", async () => void done.push("live 2"))).toBe(false);
    expect(intake.take("a", "3", async () => void done.push("live 3"))).toBe(true);
  });
});
