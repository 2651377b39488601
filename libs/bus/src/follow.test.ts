import { describe, expect, it } from "@jest/globals";
import Type from "typebox";
import type { FollowOptions } from "./follow.js";
import { busesOnTestNats, waitFor } from "./test-support/helpers.js";
import { connectionOf } from "./bus.js";

const Item = Type.Object({ n: Type.Number() }, { additionalProperties: false });

const { buses } = busesOnTestNats();

/** A feed of one channel's subject from its start, with what it handed out and its first message in. */
async function feedWithOneMessage(timing: Pick<FollowOptions<typeof Item>, "stallMs" | "heartbeatMs">) {
  const bus = await buses.open();
  await bus.provision();
  const subject = bus.subjects.channel("in", { adapter: "slack-acme", channelId: "C1" });
  const seen: number[] = [];
  const feed = bus.follow({ stream: "IN", filterSubject: subject, from: 1, schema: Item, ...timing, handler: (d) => void seen.push(d.data.n) });
  const { seq } = await bus.publish(subject, { n: 1 }, "m1");
  await waitFor(() => seen.length === 1, 5000, "the first message");
  const stalls = () => bus.logs.lines.filter((l) => String(l.msg).includes("feed stalled"));
  /** The feed's consumer vanishes under it, as a server can lose it. */
  const deleteConsumer = async () => {
    const stream = bus.subjects.stream("IN");
    for await (const c of await connectionOf(bus).jsm.consumers.list(stream)) await connectionOf(bus).jsm.consumers.delete(stream, c.name);
  };
  return { bus, subject, seen, feed, firstSeq: seq, stalls, deleteConsumer };
}

describe("follow", () => {
  it("re-opens a feed that does not bring a message it was told of, and says so", async () => {
    // nats.js holds still until two heartbeats are missed (set long here): only the hint re-opens it.
    const { bus, subject, seen, feed, stalls } = await feedWithOneMessage({ stallMs: 300, heartbeatMs: 10_000 });
    // Told of a sequence the feed cannot bring (another subject's): what a lost pull looks like to it.
    const { seq } = await bus.publish(bus.subjects.channel("in", { adapter: "slack-acme", channelId: "C2" }), { n: 9 }, "other");
    feed.expect(seq);
    await waitFor(() => stalls().length > 0, 5000, "the stall warning");
    expect(stalls().map((l) => l.waitingFor)).toContain(seq);
    await bus.publish(subject, { n: 2 }, "m2");
    await waitFor(() => seen.length === 2, 10_000, "the message after the re-open");
    expect(seen).toEqual([1, 2]);
    feed.stop();
    await feed.done;
  });

  it("re-opens at once a feed whose consumer vanished (its server died), not after nats.js's backoff", async () => {
    const { bus, subject, seen, feed, deleteConsumer } = await feedWithOneMessage({ heartbeatMs: 5000 });
    await deleteConsumer();
    const at = Date.now();
    await bus.publish(subject, { n: 2 }, "m2");
    // Nobody calls expect(): the consumer's loss, as nats.js reports it, brings it.
    await waitFor(() => seen.length === 2, 10_000, "the message after the consumer vanished");
    expect(seen).toEqual([1, 2]);
    expect(Date.now() - at).toBeLessThan(3000);
    expect(bus.logs.lines.some((l) => String(l.msg).includes("lost its consumer"))).toBe(true);
    feed.stop();
    await feed.done;
  });

  it("leaves a feed alone when the message it was told of has come", async () => {
    const { feed, firstSeq, stalls } = await feedWithOneMessage({ stallMs: 100 });
    feed.expect(firstSeq);
    await new Promise((r) => setTimeout(r, 300));
    expect(stalls()).toEqual([]);
    feed.stop();
    await feed.done;
  });
});
