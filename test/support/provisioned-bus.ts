import { Bus } from "@mom/bus";
import type { TestNats } from "@mom/testing";
import { pino } from "pino";

/**
 * The test's own connection to `nats`, with mom's streams created (at `replicas` where given, as on
 * a cluster). It reconnects every 250 ms: the faults under test take servers away.
 */
export async function provisionedBus(nats: TestNats, name: string, replicas?: number): Promise<Bus> {
  const bus = await Bus.connect({
    url: nats.url,
    name,
    namespace: nats.namespace,
    logger: pino({ level: "silent" }),
    reconnectTimeWaitMs: 250,
    ...(replicas !== undefined && { streams: { replicas } }),
  });
  // A cluster just formed can time out creating several replicated streams at once on a busy machine.
  for (let attempt = 1; ; attempt++) {
    try {
      await bus.provision();
      return bus;
    } catch (err) {
      if (!replicas || attempt >= 3) {
        await bus.drain().catch(() => {});
        throw err;
      }
    }
  }
}
