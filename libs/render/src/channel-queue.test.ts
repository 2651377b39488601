import { describe, expect, it } from "@jest/globals";
import { ChannelQueue } from "./channel-queue.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("ChannelQueue", () => {
  it("runs one task at a time per key, in order, keys side by side, failures do not block", async () => {
    const q = new ChannelQueue();
    const log: string[] = [];
    const task = (k: string, i: number, ms: number, fail = false) => () =>
      sleep(ms).then(() => {
        log.push(`${k}${i}`);
        if (fail) throw new Error("boom");
      });
    const a1 = q.push("a", task("a", 1, 40));
    const a2 = q.push("a", task("a", 2, 0, true));
    const a3 = q.push("a", task("a", 3, 0));
    const b1 = q.push("b", task("b", 1, 10));
    await expect(a2).rejects.toThrow("boom");
    await Promise.all([a1, a3, b1]);
    await q.idle();
    expect(log).toEqual(["b1", "a1", "a2", "a3"]);
  });
});
