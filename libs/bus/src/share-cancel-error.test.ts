import { describe, expect, it } from "@jest/globals";
import { NoRespondersError, RequestError, TimeoutError } from "@nats-io/nats-core";
import { MuxSubscription, RequestOne } from "@nats-io/nats-core/internal";
import { busesOnTestNats } from "./test-support/helpers.js";
import { connectionOf } from "./bus.js";

const { buses } = busesOnTestNats();

/** What a request's own promise is rejected with when it is cancelled without a reason. */
async function cancelledWith(): Promise<unknown> {
  const r = new RequestOne(new MuxSubscription(), "share.cancel", { timeout: 60_000 }, false);
  r.cancel();
  return r.deferred.catch((err: unknown) => err);
}

describe("the cancel error nats.js builds for every request", () => {
  it("is one shared error once a bus is connected", async () => {
    await buses.open();
    const first = await cancelledWith();
    expect(first).toBeInstanceOf(RequestError);
    expect((first as Error).message).toBe("cancelled");
    // Without the change every request built (and captured a stack for) an error of its own.
    expect(await cancelledWith()).toBe(first);
  });

  it("leaves answers, timeouts and missing responders as they were", async () => {
    const bus = await buses.open();
    const sub = connectionOf(bus).nc.subscribe("share.echo", { callback: (_err, m) => m.respond(m.data) });
    await connectionOf(bus).nc.flush();
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => connectionOf(bus).nc.request("share.echo", String(i), { timeout: 5000 })));
    expect(answers.map((m) => m.string())).toEqual(Array.from({ length: 20 }, (_, i) => String(i)));

    const silent = connectionOf(bus).nc.subscribe("share.silent", { callback: () => {} });
    await connectionOf(bus).nc.flush();
    await expect(connectionOf(bus).nc.request("share.silent", "x", { timeout: 200 })).rejects.toBeInstanceOf(TimeoutError);
    const missing = await connectionOf(bus).nc.request("share.nobody", "x", { timeout: 5000 }).catch((err: unknown) => err);
    expect(missing).toBeInstanceOf(RequestError);
    expect((missing as RequestError).cause).toBeInstanceOf(NoRespondersError);
    sub.unsubscribe();
    silent.unsubscribe();
  });
});
