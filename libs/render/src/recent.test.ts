import { describe, expect, it } from "@jest/globals";
import { RecentIds, RecentMap } from "./recent.js";

describe("RecentIds", () => {
  it("says true the first time only, and forgets the oldest past its capacity (looking does not keep an id)", () => {
    const ids = new RecentIds(3);
    expect(["a", "b", "c"].map((id) => ids.add(id))).toEqual([true, true, true]);
    expect(ids.add("a")).toBe(false);
    expect(ids.has("a")).toBe(true);
    expect(ids.add("d")).toBe(true); // "a" is the oldest, seen or not
    expect(["a", "b", "c", "d"].map((id) => ids.has(id))).toEqual([false, true, true, true]);
    ids.delete("c");
    expect(ids.add("c")).toBe(true);
  });
});

describe("RecentMap", () => {
  it("forgets the least recently set entry; setting again keeps it, reading does not", () => {
    const m = new RecentMap<number>(2);
    m.set("a", 1);
    m.set("b", 2);
    m.set("a", 3); // "b" is now the least recently set
    m.set("c", 4);
    expect([m.get("a"), m.get("b"), m.get("c")]).toEqual([3, undefined, 4]);
    expect(m.get("a")).toBe(3); // read, but "a" is still older than "c"
    m.set("d", 5);
    expect([m.get("a"), m.get("c"), m.get("d")]).toEqual([undefined, 4, 5]);
    m.delete("c");
    expect(m.get("c")).toBeUndefined();
  });

  it("remember: a lookup asked once and kept; one that failed is asked again", async () => {
    const m = new RecentMap<{ name?: string }>(10);
    let asked = 0;
    const lookup = async () => (asked++ === 0 ? Promise.reject(new Error("down")) : { name: "Ana" });
    await expect(m.remember("u1", lookup)).rejects.toThrow("down");
    expect(await m.remember("u1", lookup)).toEqual({ name: "Ana" });
    expect(await m.remember("u1", lookup)).toEqual({ name: "Ana" });
    expect(asked).toBe(2);
  });
});
