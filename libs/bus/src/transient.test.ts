import { describe, expect, it } from "@jest/globals";
import { pino } from "pino";
import { isTransient, retryTransient } from "./transient.js";

const log = pino({ level: "silent" });

describe("retryTransient", () => {
  it("tells an election's failures from real ones", () => {
    expect(isTransient(new Error("timeout"))).toBe(true);
    expect(isTransient(Object.assign(new Error("JetStream system temporarily unavailable"), { code: 10008 }))).toBe(true);
    expect(isTransient(new Error("jetstream is not enabled: no responders: '$JS.API.STREAM.CREATE.X'"))).toBe(true);
    expect(isTransient(new Error("subjects overlap with an existing stream"))).toBe(false);
    expect(isTransient(new Error("insufficient resources"))).toBe(false);
  });

  it("retries a call that fails while a leader is elected, and gives up at once on a real failure", async () => {
    let calls = 0;
    await expect(retryTransient("x", async () => (++calls < 3 ? Promise.reject(new Error("timeout")) : "ok"), log)).resolves.toBe("ok");
    expect(calls).toBe(3);
    calls = 0;
    await expect(retryTransient("x", async () => (++calls, Promise.reject(new Error("subjects overlap"))), log)).rejects.toThrow("subjects overlap");
    expect(calls).toBe(1);
    await expect(retryTransient("x", () => Promise.reject(new Error("timeout")), log, 600)).rejects.toThrow("timeout");
  });
});
