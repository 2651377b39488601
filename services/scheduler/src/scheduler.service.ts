import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from "@nestjs/common";
import { Bus, serviceReadiness } from "@mom/bus";
import { endSpan, metrics, SpanKind, startSpan, traceparentOf } from "@mom/observability";
import type { ChannelMessage, ChannelRef } from "@mom/contracts";
import { WorkspaceLayout } from "@mom/store";
import { EventScheduler } from "./event-scheduler.js";
import { SCHEDULER_OPTIONS, type SchedulerOptions } from "./scheduler-options.js";

/** The scheduler service: an EventScheduler over workspace/events/ and every channel's own events/ that publishes through the bus. */
@Injectable()
export class SchedulerService implements OnApplicationBootstrap, OnApplicationShutdown {
  readonly scheduler: EventScheduler;
  private unready?: () => void;

  constructor(
    @Inject(Bus) private readonly bus: Bus,
    @Inject(SCHEDULER_OPTIONS) opts: SchedulerOptions,
  ) {
    const { config, paths } = opts.loaded;
    const layout = new WorkspaceLayout(paths.workspaceDir);
    this.scheduler = new EventScheduler({
      eventsDir: layout.eventsDir,
      channelsDir: layout.channelsDir,
      settings: config.scheduler,
      context: { adapters: new Set(Object.keys(config.adapters)) },
      publish: (ref, message) => this.publish(ref, message),
      log: opts.logger,
      ...(opts.clock && { clock: opts.clock }),
      ...(opts.settleMs !== undefined && { settleMs: opts.settleMs }),
      ...(opts.retryMs !== undefined && { retryMs: opts.retryMs }),
    });
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.scheduler.start();
    this.unready = serviceReadiness("scheduler", this.bus);
  }

  async onApplicationShutdown(): Promise<void> {
    this.unready?.();
    await this.scheduler.stop();
  }

  private async publish(ref: ChannelRef, message: ChannelMessage): Promise<{ duplicate: boolean; seq: number }> {
    const span = startSpan("mom.scheduler.fire", { kind: SpanKind.PRODUCER, attributes: { "mom.channel": `${ref.adapter}/${ref.channelId}`, "mom.message_id": message.id } });
    try {
      const r = await this.bus.publish(this.bus.subjects.channel("in", ref), message, message.id, { timeoutMs: 5000, traceparent: traceparentOf(span) });
      if (!r.duplicate) metrics.messagesIn.inc({ adapter: ref.adapter, source: "scheduler" });
      endSpan(span);
      return { duplicate: r.duplicate, seq: r.seq };
    } catch (err) {
      endSpan(span, (err as Error).message);
      throw err;
    }
  }
}
