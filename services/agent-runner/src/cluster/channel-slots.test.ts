import { describe, expect, it } from "@jest/globals";
import { ChannelSlots } from "./channel-slots.js";

describe("ChannelSlots", () => {
  it("holds a channel in one state at a time and never starts it twice", () => {
    const s = new ChannelSlots<string>();
    s.own("a", () => "worker-a");
    expect(() => s.own("a", () => "second worker")).toThrow(/already owned/);
    expect(s.active("a")).toBe("worker-a");
    expect(s.drain("a")).toBe("worker-a");
    expect(s.drain("a")).toBeUndefined(); // one hand-over at a time
    expect(s.active("a")).toBe("worker-a"); // still read while draining
    expect(s.activeCount).toBe(1);
    // Lost while being handed over: the loss wins, and the hand-over's end does not free it early.
    expect(s.stop("a")).toBe("worker-a");
    expect(s.forget("a", "draining")).toBe(false);
    expect(s.holds("a")).toBe(true);
    expect(s.active("a")).toBeUndefined();
    expect(() => s.own("a", () => "again")).toThrow(/already stopping/);
    expect(s.forget("a", "stopping")).toBe(true);
    expect(s.holds("a")).toBe(false);
  });

  it("sets running channels down, and lets go of one only from the state it is in", () => {
    const s = new ChannelSlots<string>();
    s.own("a", () => "A");
    s.own("b", () => "B");
    s.drain("b");
    s.own("c", () => "C");
    s.stop("c");
    for (const [key] of s.entries()) s.setDown(key);
    expect(s.entries("down").map(([k]) => k).sort()).toEqual(["a", "b"]);
    expect(s.state("c")).toBe("stopping");
    expect(s.setDown("c")).toBeUndefined();
    expect(s.activeCount).toBe(0);
    expect(s.stop("a")).toBeUndefined(); // a down channel has nothing running to stop
    expect(s.forget("a", "down")).toBe(true);
    s.own("a", () => "A2");
    expect(s.entries("owned")).toEqual([["a", "A2"]]);
  });

  it("shows each tenure its own state: the slot of a channel let go of stays let go of when it is taken again", () => {
    const s = new ChannelSlots<string>();
    let first!: { state: string | undefined };
    s.own("a", (slot) => ((first = slot), "A1"));
    expect(first.state).toBe("owned");
    s.drain("a");
    expect(first.state).toBe("draining");
    s.stop("a");
    expect(first.state).toBe("stopping");
    s.forget("a", "stopping");
    expect(first.state).toBeUndefined();
    let second!: { state: string | undefined };
    s.own("a", (slot) => ((second = slot), "A2"));
    expect(second.state).toBe("owned");
    expect(first.state).toBeUndefined();
  });
});
