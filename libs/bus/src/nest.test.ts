import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { freePort, startTestNats, type TestNats, uniqueNamespace } from "@mom/testing";
import { Inject, Injectable, Module } from "@nestjs/common";
import { NestFactory } from "@nestjs/core";
import { Bus } from "./bus.js";
import { BusModule } from "./nest.js";
import { captureLogs } from "./test-support/helpers.js";
import { connectionOf } from "./bus.js";

let nats: TestNats;
beforeAll(async () => {
  nats = await startTestNats();
});
afterAll(() => nats.stop());

@Injectable()
class Publisher {
  constructor(@Inject(Bus) readonly bus: Bus) {}
}

// A feature module that does not import BusModule: Bus reaches it because the module is global.
@Module({ providers: [Publisher], exports: [Publisher] })
class FeatureModule {}

const CONFIG = Symbol("config");
@Module({ providers: [{ provide: CONFIG, useFactory: () => ({ nats: nats.url, namespace: uniqueNamespace() }) }], exports: [CONFIG] })
class ConfigModule {}

describe("BusModule", () => {
  it("forRoot provides a connected, provisioned Bus globally and drains it on shutdown", async () => {
    const namespace = uniqueNamespace();
    @Module({ imports: [BusModule.forRoot({ url: nats.url, name: "nest-test", namespace, logger: captureLogs().logger }), FeatureModule] })
    class AppModule {}
    const app = await NestFactory.createApplicationContext(AppModule, { logger: false, abortOnError: false });
    const bus = app.get(Publisher).bus;
    expect(bus).toBe(app.get(Bus));
    expect(bus.subjects.namespace).toBe(namespace);
    const info = await connectionOf(bus).jsm.streams.info(bus.subjects.stream("IN"));
    expect(info.config.subjects).toEqual([`${namespace}.in.>`]);
    await app.close();
    expect(connectionOf(bus).nc.isClosed()).toBe(true);
  });

  it("forRootAsync builds the options from injected providers", async () => {
    @Module({
      imports: [
        BusModule.forRootAsync({
          imports: [ConfigModule],
          inject: [CONFIG],
          useFactory: (cfg: { nats: string; namespace: string }) => ({ url: cfg.nats, name: "nest-async", namespace: cfg.namespace, logger: captureLogs().logger }),
        }),
        FeatureModule,
      ],
    })
    class AppModule {}
    const app = await NestFactory.createApplicationContext(AppModule, { logger: false, abortOnError: false });
    const bus = app.get(Publisher).bus;
    await expect(connectionOf(bus).jsm.streams.info(bus.subjects.stream("DLQ"))).resolves.toBeTruthy();
    await app.close();
    expect(connectionOf(bus).nc.isClosed()).toBe(true);
  });

  it("fails the application start with an error naming the URL when NATS is unreachable", async () => {
    const url = `nats://127.0.0.1:${await freePort()}`;
    @Module({ imports: [BusModule.forRoot({ url, name: "nest-down", logger: captureLogs().logger })] })
    class AppModule {}
    await expect(NestFactory.createApplicationContext(AppModule, { logger: false, abortOnError: false })).rejects.toThrow(url);
  });
});
