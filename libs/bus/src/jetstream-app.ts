import type { DynamicModule, INestApplication, INestMicroservice, NestApplicationOptions, Type } from "@nestjs/common";
import { ModuleRef, ModulesContainer, NestFactory } from "@nestjs/core";
import type { AsyncMicroserviceOptions } from "@nestjs/microservices";
import { Bus } from "./bus.js";
import { JetStreamServer } from "./jetstream-server.js";

// The strategy is built from the app's own Bus (BusModule connected it) once the providers exist;
// the app resolves the tokens a handler's consumer is built from and holds the drain hooks.
const jetStreamStrategy: AsyncMicroserviceOptions = {
  inject: [Bus, ModuleRef, ModulesContainer],
  useFactory: (bus: Bus, ref: ModuleRef, modules: ModulesContainer) => ({
    strategy: new JetStreamServer(bus, {
      resolve: (token) => ref.get(token, { strict: false }),
      instances: () => [...modules.values()].flatMap((m) => [...m.providers.values(), ...m.controllers.values()].map((w) => w.instance)),
    }),
  }),
};

/**
 * Starts a mom service: a Nest microservice on the JetStream transport (its module imports
 * BusModule). Resolves once the bootstrap hooks ran and every @JetStreamHandler's consumer is
 * bound; on a failure, closes what started and rejects. `close()` runs the BeforeJetStreamDrain
 * hooks and stops the consumers (their handlers in flight finish), then the shutdown hooks run.
 */
export async function startJetStreamService(module: Type<unknown> | DynamicModule, options: Pick<NestApplicationOptions, "logger" | "abortOnError"> = {}): Promise<INestMicroservice> {
  const app = await NestFactory.createMicroservice(module, { logger: false, abortOnError: false, ...options, ...jetStreamStrategy });
  try {
    await app.listen();
  } catch (err) {
    await app.close().catch(() => {});
    throw err;
  }
  return app;
}

/**
 * The JetStream transport in an app that has an HTTP server too; start it with
 * `app.startAllMicroservices()`. Such an app stops the consumers after its HTTP server, between
 * the beforeApplicationShutdown and onApplicationShutdown hooks.
 */
export function connectJetStream(app: INestApplication): INestMicroservice {
  return app.connectMicroservice(jetStreamStrategy, { inheritAppConfig: true });
}
