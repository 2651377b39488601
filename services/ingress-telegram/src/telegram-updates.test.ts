import { describe, expect, it } from "@jest/globals";
import { pino } from "pino";
import { HeldUpdates } from "./telegram-updates.js";

const log = pino({ level: "silent" });

describe("HeldUpdates: Telegram's getUpdates offset stays behind what is not stored", () => {
  it("confirms nothing past an update whose message is not stored yet, then confirms it once stored", async () => {
    const held = new HeldUpdates(log);
    let stored11!: () => void;
    held.track(10, Promise.resolve(true));
    held.track(11, new Promise<void>((r) => (stored11 = r)));
    let sent: number | undefined;
    const asking = held.offset(12).then((o) => (sent = o));
    await new Promise((r) => setTimeout(r, 20));
    expect(sent).toBeUndefined(); // waiting: no getUpdates yet
    stored11();
    await asking;
    expect(sent).toBe(12);
  });

  it("asks again from the lowest update whose message could not be stored, once", async () => {
    const held = new HeldUpdates(log);
    held.track(20, Promise.resolve());
    held.track(21, Promise.reject(new Error("NATS away")));
    held.track(22, Promise.reject(new Error("NATS away")));
    held.track(23, Promise.resolve());
    expect(await held.offset(24)).toBe(21);
    // Telegram sends 21.. again; they are tracked anew and stored this time.
    held.track(21, Promise.resolve());
    held.track(22, Promise.resolve());
    expect(await held.offset(24)).toBe(24);
  });

  it("does not wait when getUpdates is aborted or polling stops: it confirms only what is stored", async () => {
    const held = new HeldUpdates(log);
    held.track(30, Promise.resolve());
    held.track(31, new Promise(() => {}));
    const abort = new AbortController();
    const asking = held.offset(33, abort.signal);
    abort.abort();
    expect(await asking).toBe(31);
    held.stop();
    expect(await held.offset(33)).toBe(31);
  });
});
