import { describe, expect, it } from "@jest/globals";
import { batches } from "./batches.js";

describe("batches", () => {
  it("groups by count alone", () => {
    expect(batches([1, 2, 3, 4, 5], { count: 2 })).toEqual([[1, 2], [3, 4], [5]]);
    expect(batches([], { count: 2 })).toEqual([]);
  });

  it("starts a new batch when the weight would be exceeded; an item heavier than the limit goes alone", () => {
    const words = ["aaaa", "bb", "cc", "ddddddd", "e"];
    expect(batches(words, { count: 10, weight: 6, weigh: (w) => w.length })).toEqual([["aaaa", "bb"], ["cc"], ["ddddddd"], ["e"]]);
  });
});
