import { afterEach, describe, expect, it } from "@jest/globals";
import { uniqueNamespace } from "@mom/testing";
import { Controller, type DynamicModule, Inject, Injectable, Module, type INestMicroservice } from "@nestjs/common";
import { Ctx, EventPattern, Payload } from "@nestjs/microservices";
import Type from "typebox";
import { type Bus, connectionOf } from "./bus.js";
import { type Delivery, RejectedInput } from "./consume-types.js";
import { JETSTREAM, JetStreamHandler } from "./jetstream-handler.js";
import { startJetStreamService } from "./jetstream-app.js";
import { type BeforeJetStreamDrain, JetStreamContext } from "./jetstream-server.js";
import { BusModule } from "./nest.js";
import { busesOnTestNats, captureLogs, collectDeadLetters, sleep, waitFor } from "./test-support/helpers.js";

const Item = Type.Object({ n: Type.Number() }, { additionalProperties: false });
type Item = { n: number };

/** What the test module is given at run time: the consumer is named after `adapter`, as an ingress's is. */
interface Wiring {
  adapter: string;
  handle(d: Delivery<Item>, ctx: JetStreamContext): Promise<void>;
}
const WIRING = Symbol("wiring");

@Controller()
class ItemsController {
  constructor(@Inject(WIRING) private readonly wiring: Wiring) {}

  @JetStreamHandler({
    schema: Item,
    inject: [WIRING],
    consumer: (subjects, w: Wiring) => ({
      stream: "IN",
      durable: `items-${w.adapter}`,
      filterSubject: subjects.wildcard("in", w.adapter),
      stage: `items-${w.adapter}`,
      maxDeliver: 3,
      ackWaitMs: 2000,
    }),
  })
  take(@Payload() d: Delivery<Item>, @Ctx() ctx: JetStreamContext): Promise<void> {
    return this.wiring.handle(d, ctx);
  }
}

const { buses, server } = busesOnTestNats();
const apps: INestMicroservice[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close()));
});

function itemsModule(namespace: string, wiring: Wiring, controllers: DynamicModule["controllers"] = [ItemsController]): DynamicModule {
  @Module({})
  class ItemsModule {}
  return {
    module: ItemsModule,
    imports: [BusModule.forRoot({ url: server().url, name: "jetstream-test", namespace, logger: captureLogs().logger, drainTimeoutMs: 5000 })],
    controllers,
    providers: [{ provide: WIRING, useValue: wiring }],
  };
}

async function start(namespace: string, wiring: Wiring): Promise<INestMicroservice> {
  const app = await startJetStreamService(itemsModule(namespace, wiring));
  apps.push(app);
  return app;
}

/** A bus of the test's own on the app's namespace: it publishes and looks at the consumer. */
async function observer(namespace: string): Promise<Bus> {
  const bus = await buses.open({ namespace });
  await bus.provision();
  return bus;
}

async function ackFloor(bus: Bus, durable: string): Promise<number> {
  return (await connectionOf(bus).jsm.consumers.info(bus.subjects.stream("IN"), durable)).ack_floor.stream_seq;
}

const channel = (bus: Bus, adapter = "acme") => bus.subjects.channel("in", { adapter, channelId: "C1" });

describe("the JetStream transport", () => {
  it("hands the handler a validated Delivery from the consumer its injected options name, and acks it", async () => {
    const namespace = uniqueNamespace();
    const bus = await observer(namespace);
    const got: Array<{ d: Delivery<Item>; consumer: string }> = [];
    await start(namespace, { adapter: "acme", handle: async (d, ctx) => void got.push({ d, consumer: ctx.getConsumer() }) });
    await bus.publish(channel(bus, "other"), { n: 0 }, "other:1"); // another adapter's: not this consumer's
    await bus.publish(channel(bus), { n: 1 }, "acme:1", { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" });
    await waitFor(() => got.length === 1);
    expect(got[0]!.d).toMatchObject({
      data: { n: 1 },
      msgId: "acme:1",
      traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
      deliveryCount: 1,
      channel: { adapter: "acme", channelId: "C1" },
    });
    expect(got[0]!.consumer).toBe(`${bus.subjects.stream("IN")}/items-acme`);
    await waitFor(async () => (await ackFloor(bus, "items-acme")) === 2, 3000, "the ack");
  });

  it("naks a message whose handler threw, and it comes back", async () => {
    const namespace = uniqueNamespace();
    const bus = await observer(namespace);
    const counts: number[] = [];
    await start(namespace, {
      adapter: "acme",
      handle: async (d) => {
        counts.push(d.deliveryCount);
        if (d.deliveryCount === 1) throw new Error("platform down");
      },
    });
    await bus.publish(channel(bus), { n: 1 }, "acme:1");
    await waitFor(() => counts.length === 2);
    expect(counts).toEqual([1, 2]);
    await waitFor(async () => (await ackFloor(bus, "items-acme")) === 1, 3000, "the ack");
  });

  it("dead-letters an invalid payload and a rejected one with their reasons, and one that failed every delivery with the handler's error", async () => {
    const namespace = uniqueNamespace();
    const bus = await observer(namespace);
    const { letters } = await collectDeadLetters(bus, "items-acme");
    const handled: number[] = [];
    await start(namespace, {
      adapter: "acme",
      handle: async (d) => {
        handled.push(d.data.n);
        if (d.data.n === 2) throw new RejectedInput("item 2 belongs elsewhere");
        if (d.data.n === 3) throw new Error("item 3 cannot be drawn");
      },
    });
    await bus.publish(channel(bus), { n: "one" }, "acme:1");
    await bus.publish(channel(bus), { n: 2 }, "acme:2");
    await bus.publish(channel(bus), { n: 3 }, "acme:3");
    await waitFor(() => letters.length === 3, 8000, "three dead letters");
    const reasons = Object.fromEntries(letters.map((l) => [l.data.msgId, l.data.reason]));
    expect(reasons["acme:1"]).toMatch(/\/n/);
    expect(reasons["acme:2"]).toBe("item 2 belongs elsewhere");
    expect(reasons["acme:3"]).toBe("handler failed after 3 deliveries: item 3 cannot be drawn");
    expect(handled).toEqual([2, 3, 3, 3]);
    expect(letters.every((l) => l.data.stage === "items-acme")).toBe(true);
  });

  it("on close stops pulling, lets the handler in flight finish and ack, and leaves the rest for the next start", async () => {
    const namespace = uniqueNamespace();
    const bus = await observer(namespace);
    const handled: number[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let entered = false;
    const first = await start(namespace, {
      adapter: "acme",
      handle: async (d) => {
        if (d.data.n === 1) (entered = true), await gate;
        handled.push(d.data.n);
      },
    });
    for (let n = 1; n <= 3; n++) await bus.publish(channel(bus), { n }, `acme:${n}`);
    // In its handler, not only delivered: a message pulled but not yet handed over is left for the next start.
    await waitFor(() => entered, 3000, "the first message in its handler");
    expect((await connectionOf(bus).jsm.consumers.info(bus.subjects.stream("IN"), "items-acme")).num_ack_pending).toBe(1);
    let closed = false;
    const closing = first.close().then(() => (closed = true));
    apps.splice(apps.indexOf(first), 1);
    await sleep(300);
    expect(closed).toBe(false);
    release();
    await closing;
    expect(handled).toEqual([1]);
    expect(await ackFloor(bus, "items-acme")).toBe(1);

    await start(namespace, { adapter: "acme", handle: async (d) => void handled.push(d.data.n) });
    await waitFor(() => handled.length === 3);
    await sleep(200);
    expect(handled).toEqual([1, 2, 3]);
  });

  it("on close first runs the BeforeJetStreamDrain hooks, while the consumers still run, and once", async () => {
    const namespace = uniqueNamespace();
    const bus = await observer(namespace);
    const handled: number[] = [];
    let hookRuns = 0;

    // A service that still hands work in while it stops taking more (an ingress's last messages).
    @Injectable()
    class Intake implements BeforeJetStreamDrain {
      async beforeJetStreamDrain(): Promise<void> {
        hookRuns++;
        await bus.publish(channel(bus), { n: 9 }, "acme:9");
        await waitFor(() => handled.includes(9), 3000, "the last message handled");
      }
    }
    const module = itemsModule(namespace, { adapter: "acme", handle: async (d) => void handled.push(d.data.n) });
    const app = await startJetStreamService({ ...module, providers: [...(module.providers ?? []), Intake] });
    await bus.publish(channel(bus), { n: 1 }, "acme:1");
    await waitFor(() => handled.length === 1);
    await app.close();
    expect(handled).toEqual([1, 9]);
    expect(hookRuns).toBe(1);
  });

  it("starts a new-only consumer at the service's start, so what is published during the bootstrap hooks is delivered", async () => {
    const namespace = uniqueNamespace();
    const bus = await observer(namespace);
    await bus.publish(channel(bus), { n: 0 }, "acme:0"); // before the service: not delivered
    const got: number[] = [];

    @Controller()
    class NewOnlyController {
      constructor(@Inject(WIRING) private readonly wiring: Wiring) {}

      // A bootstrap hook that publishes, as an ingress that opens its platform there may.
      async onApplicationBootstrap(): Promise<void> {
        await bus.publish(channel(bus), { n: 1 }, "acme:1");
      }

      @JetStreamHandler({ schema: Item, consumer: (subjects) => ({ stream: "IN", durable: "new-only", deliver: "new", filterSubject: subjects.wildcard("in"), stage: "new-only" }) })
      take(d: Delivery<Item>): Promise<void> {
        return this.wiring.handle(d, new JetStreamContext([""]));
      }
    }
    apps.push(await startJetStreamService(itemsModule(namespace, { adapter: "acme", handle: async (d) => void got.push(d.data.n) }, [NewOnlyController])));
    await waitFor(() => got.length === 1);
    await sleep(200);
    expect(got).toEqual([1]);
  });

  it("refuses to start, naming the handler, when a handler of its transport was not declared with @JetStreamHandler", async () => {
    @Controller()
    class PlainController {
      @EventPattern("items", JETSTREAM)
      take(_d: unknown): void {}
    }
    const err = await startJetStreamService(itemsModule(uniqueNamespace(), { adapter: "acme", handle: async () => {} }, [PlainController])).catch((e: unknown) => e);
    expect((err as Error).message).toBe("handler items is not a JetStream handler: declare it with @JetStreamHandler");
  });

  it("refuses to start when a consumer cannot be made", async () => {
    @Controller()
    class BadController {
      @JetStreamHandler({ schema: Item, consumer: (subjects) => ({ stream: "IN", durable: "bad", filterSubject: subjects.wildcard("in"), stage: "not a stage" }) })
      take(): void {}
    }
    const err = await startJetStreamService(itemsModule(uniqueNamespace(), { adapter: "acme", handle: async () => {} }, [BadController])).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/not a stage/);
  });
});
