import {
  type DynamicModule,
  Global,
  Inject,
  Injectable,
  type InjectionToken,
  Module,
  type OnApplicationShutdown,
  type OptionalFactoryDependency,
} from "@nestjs/common";
import { Bus } from "./bus.js";
import type { BusOptions } from "./options.js";

/** Drains the bus when the Nest application shuts down (app.close() or enableShutdownHooks()). */
@Injectable()
export class BusShutdown implements OnApplicationShutdown {
  constructor(@Inject(Bus) private readonly bus: Bus) {}

  async onApplicationShutdown(): Promise<void> {
    await this.bus.drain();
  }
}

export interface BusModuleAsyncOptions {
  imports?: DynamicModule["imports"];
  inject?: Array<InjectionToken | OptionalFactoryDependency>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- Nest passes the injected values positionally
  useFactory: (...args: any[]) => BusOptions | Promise<BusOptions>;
}

async function connectAndProvision(opts: BusOptions): Promise<Bus> {
  const bus = await Bus.connect(opts);
  try {
    await bus.provision();
  } catch (err) {
    await bus.drain();
    throw err;
  }
  return bus;
}

/** Global module providing `Bus` (connected and provisioned) to every other module. */
@Global()
@Module({})
export class BusModule {
  static forRoot(opts: BusOptions): DynamicModule {
    return {
      module: BusModule,
      global: true,
      providers: [{ provide: Bus, useFactory: () => connectAndProvision(opts) }, BusShutdown],
      exports: [Bus],
    };
  }

  /** Like forRoot, with options built from injected providers (e.g. the loaded config). */
  static forRootAsync(o: BusModuleAsyncOptions): DynamicModule {
    return {
      module: BusModule,
      global: true,
      imports: o.imports ?? [],
      providers: [
        {
          provide: Bus,
          inject: o.inject ?? [],
          useFactory: async (...args: unknown[]) => connectAndProvision(await o.useFactory(...args)),
        },
        BusShutdown,
      ],
      exports: [Bus],
    };
  }
}
