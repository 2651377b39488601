import { describe, expect, it } from "@jest/globals";
import { uniqueNamespace } from "@mom/testing";
import { nanos } from "@nats-io/nats-core";
import { randomBytes } from "node:crypto";
import { FileTooLargeError, fileObjectName, filesBucketName } from "./files.js";
import { DEFAULT_STREAM_SETTINGS } from "./options.js";
import { busesOnTestNats } from "./test-support/helpers.js";

const { buses } = busesOnTestNats();

describe("files bucket (JetStream Object Store)", () => {
  it("is named after the namespace", () => {
    expect(filesBucketName("mom")).toBe("MOM_FILES");
    expect(filesBucketName("mom-dev")).toBe("MOM_DEV_FILES");
  });

  it("provision() creates it with TTL = stream maxAge and file storage, idempotently and race-safe", async () => {
    const namespace = uniqueNamespace();
    const [a, b] = await Promise.all([buses.open({ namespace }), buses.open({ namespace })]);
    await Promise.all([a.provision(), b.provision()]);
    await a.provision();
    expect(a.filesBucket).toBe(filesBucketName(namespace));
    const { config } = await a.jsm.streams.info(`OBJ_${a.filesBucket}`);
    expect(config.max_age).toBe(nanos(DEFAULT_STREAM_SETTINGS.maxAgeMs));
    expect(config.storage).toBe("file");
    expect(config.num_replicas).toBe(1);

    const changed = await buses.open({ namespace, streams: { maxAgeMs: 3_600_000 } });
    await changed.provision();
    expect((await a.jsm.streams.info(`OBJ_${a.filesBucket}`)).config.max_age).toBe(nanos(3_600_000));
  });

  it("round-trips bytes of several chunks with metadata, and another connection reads them", async () => {
    const namespace = uniqueNamespace();
    const writer = await buses.open({ namespace });
    await writer.provision();
    const bytes = new Uint8Array(randomBytes(700 * 1024)); // > 5 chunks of 128 KiB
    const name = fileObjectName({ adapter: "cli", channelId: "a.b/c" }, "../report final.pdf");
    expect(name).toMatch(/^cli\/a~2Eb~2Fc\/[0-9a-f-]{36}\/\.\._report final\.pdf$/);
    const put = await writer.putFile(name, bytes, { mimeType: "application/pdf", description: "Q3 report" });
    expect(put).toMatchObject({ name, size: bytes.length, digest: expect.stringMatching(/^SHA-256=/) });

    const reader = await buses.open({ namespace }); // never provisions: opens the bucket on first use
    expect(await reader.fileInfo(name)).toEqual({ name, size: bytes.length, mimeType: "application/pdf", description: "Q3 report" });
    const got = await reader.getFile(name);
    expect(got).toBeInstanceOf(Uint8Array);
    expect(Buffer.from(got!).equals(Buffer.from(bytes))).toBe(true);

    const empty = fileObjectName({ adapter: "cli", channelId: "local" }, "empty.txt");
    await writer.putFile(empty, new Uint8Array(0));
    expect((await reader.getFile(empty))!.length).toBe(0);
  });

  it("reports a missing object as undefined and refuses one larger than maxBytes", async () => {
    const bus = await buses.open();
    await bus.provision();
    expect(await bus.fileInfo("cli/local/nope/x.txt")).toBeUndefined();
    expect(await bus.getFile("cli/local/nope/x.txt")).toBeUndefined();
    await bus.putFile("cli/local/big/big.bin", new Uint8Array(300 * 1024));
    await expect(bus.getFile("cli/local/big/big.bin", { maxBytes: 1024 })).rejects.toBeInstanceOf(FileTooLargeError);
    expect((await bus.getFile("cli/local/big/big.bin", { maxBytes: 300 * 1024 }))!.length).toBe(300 * 1024);
  });

  it("fails with an error naming the bucket when it was never provisioned", async () => {
    const bus = await buses.open();
    await expect(bus.putFile("x", new Uint8Array(1))).rejects.toThrow(bus.filesBucket);
  });

  it("gives every call a fresh object name", () => {
    const ref = { adapter: "slack-acme", channelId: "C1" };
    expect(fileObjectName(ref, "a.txt")).not.toBe(fileObjectName(ref, "a.txt"));
    expect(fileObjectName(ref, "")).toMatch(/\/file$/);
    expect(fileObjectName(ref, "x/../../y")).toMatch(/\/x_\.\._\.\._y$/);
  });
});
