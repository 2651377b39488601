import { describe, expect, it } from "@jest/globals";
import { uniqueNamespace } from "@mom/testing";
import { kvKey, namespacedName, openJsonKv } from "./json-kv.js";
import { openRecordStream } from "./record-stream.js";
import { busesOnTestNats, waitFor } from "./test-support/helpers.js";

const { buses } = busesOnTestNats();

describe("JSON KV buckets", () => {
  it("escape free text into keys, reversibly and without collisions", () => {
    expect(kvKey("anthropic", "work-key_1")).toBe("anthropic.work-key_1");
    expect(kvKey("my.provider", "a=b c")).toBe("my=2eprovider.a=3db=20c");
    expect(kvKey("a.b", "c")).not.toBe(kvKey("a", "b.c"));
  });

  it("are shared by two connections of one namespace", async () => {
    const namespace = uniqueNamespace();
    const [a, b] = await Promise.all([buses.open({ namespace }), buses.open({ namespace })]);
    const [ka, kb] = await Promise.all([openJsonKv<{ n: number }>(a, { name: "TEST_STATE", ttlMs: 60_000 }), openJsonKv<{ n: number }>(b, { name: "TEST_STATE" })]);
    expect(ka.bucket).toBe(namespacedName(a, "TEST_STATE"));
    await ka.put(kvKey("x", "1"), { n: 1 });
    expect(await kb.get(kvKey("x", "1"))).toEqual({ n: 1 });
    expect(await kb.get("missing")).toBeUndefined();
    await kb.delete(kvKey("x", "1"));
    expect(await ka.get(kvKey("x", "1"))).toBeUndefined();
    await ka.put("k2", { n: 2 });
    expect(await kb.entries()).toEqual([["k2", { n: 2 }]]);
  });
});

describe("record streams", () => {
  it("replay from a time, then follow; readSince stops at the last record present", async () => {
    const bus = await buses.open();
    const stream = await openRecordStream(bus, { key: "TEST_LEDGER", token: "ledger", maxAgeMs: 3600_000 });
    expect(stream.stream).toBe(namespacedName(bus, "TEST_LEDGER"));
    const empty: unknown[] = [];
    const f0 = await stream.follow(new Date(0), (r) => empty.push(r.data));
    await f0.caughtUp;
    await f0.stop();
    expect(empty).toEqual([]);

    await stream.append("a.x", { n: 1 }, "id-1");
    await stream.append("a.x", { n: 1 }, "id-1"); // same msg id: dropped
    const { seq } = await stream.append("b.y", { n: 2 }, "id-2");
    // The server stamps in nanoseconds, a Date has milliseconds: keep clear of the boundary.
    await new Promise((r) => setTimeout(r, 5));
    const cut = new Date();
    await new Promise((r) => setTimeout(r, 20));
    await stream.append("a.x", { n: 3 }, "id-3");
    expect((await stream.readSince(new Date(0))).map((r) => r.data)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
    expect((await stream.readSince(cut)).map((r) => [r.subject, r.data])).toEqual([[stream.subject("a.x"), { n: 3 }]]);

    const seen: unknown[] = [];
    const f = await stream.follow(new Date(0), (r) => seen.push(r.data));
    await f.caughtUp;
    expect(seen).toHaveLength(3);
    await stream.append("c.z", { n: 4 }, "id-4");
    await waitFor(() => seen.length === 4, 5000, "the followed record");
    expect(seq).toBe(2);
    await f.stop();
  });
});
