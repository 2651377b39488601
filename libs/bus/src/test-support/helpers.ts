// Shared by the bus tests only (excluded from the build).
import { afterAll, afterEach, beforeAll } from "@jest/globals";
import { startTestNats, type TestNats, uniqueNamespace } from "@mom/testing";
import { DeadLetter } from "@mom/contracts";
import { pino, type Logger } from "pino";
import { Bus } from "../bus.js";
import type { Consumption, Delivery } from "../consume-types.js";
import type { BusOptions } from "../options.js";

export interface LogCapture {
  logger: Logger;
  lines: Record<string, unknown>[];
}

/** A pino logger whose JSON lines are kept in memory (and parsed, proving they are JSON). */
export function captureLogs(): LogCapture {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: "debug" }, { write: (s: string) => void lines.push(JSON.parse(s)) });
  return { logger, lines };
}

export async function waitFor(pred: () => boolean | Promise<boolean>, timeoutMs = 5000, what = "condition"): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(20);
  }
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Opens buses on a fresh namespace each and drains them all in `closeAll()`. */
export function busFactory(url: () => string) {
  const open: Bus[] = [];
  return {
    async open(extra: Partial<BusOptions> = {}): Promise<Bus & { logs: LogCapture }> {
      const logs = captureLogs();
      const bus = await Bus.connect({ url: url(), name: "bus-test", namespace: uniqueNamespace(), logger: logs.logger, drainTimeoutMs: 3000, ...extra });
      open.push(bus);
      return Object.assign(bus, { logs });
    },
    async closeAll(): Promise<void> {
      await Promise.all(open.splice(0).map((b) => b.drain()));
    },
  };
}

/**
 * A test file's nats-server (started before its tests, stopped after them) and buses on it, each
 * test's drained after it. `start` is spawnNatsServer for tests that stop or restart the server.
 */
export function busesOnTestNats(start: () => Promise<TestNats> = startTestNats) {
  let nats: TestNats | undefined;
  const server = (): TestNats => {
    if (!nats) throw new Error("the test nats-server is not started yet (use it inside a test or hook)");
    return nats;
  };
  const buses = busFactory(() => server().url);
  beforeAll(async () => {
    nats = await start();
  });
  afterEach(() => buses.closeAll());
  afterAll(() => nats?.stop());
  return { buses, server };
}

/** Collects the dead letters of one stage through the bus itself (validating the DeadLetter schema). */
export async function collectDeadLetters(bus: Bus, stage: string): Promise<{ letters: Delivery<DeadLetter>[]; consumption: Consumption }> {
  const letters: Delivery<DeadLetter>[] = [];
  const consumption = await bus.consume({
    stream: "DLQ",
    durable: `dlq-${stage}`,
    filterSubject: bus.subjects.dlq(stage),
    schema: DeadLetter,
    stage: "dlq-reader",
    handler: async (d) => void letters.push(d),
  });
  return { letters, consumption };
}
