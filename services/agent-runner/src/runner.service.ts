import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from "@nestjs/common";
import { ChannelAgent } from "@mom/agent";
import { Bus, type Consumption, type Delivery } from "@mom/bus";
import { ChannelMessage, type ChannelRef, ControlMessage, qualifiedChannelId } from "@mom/contracts";
import { WorkspaceLayout } from "@mom/store";
import { join } from "node:path";
import pLimit from "p-limit";
import type { Logger } from "pino";
import { channelMaterializer } from "./attachment-materializer.js";
import { attachmentSender } from "./attachment-sender.js";
import { ChannelWorker } from "./channel-worker.js";
import { RUNNER_OPTIONS, type RunnerOptions } from "./runner-options.js";

/** Consumes mom.in and mom.ctl and routes each message to its channel's worker. */
@Injectable()
export class RunnerService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly workers = new Map<string, ChannelWorker>();
  private readonly layout: WorkspaceLayout;
  private readonly log: Logger;
  private consumptions: Consumption[] = [];
  private evictTimer?: NodeJS.Timeout;
  private readonly runSlot: ReturnType<typeof pLimit>;

  constructor(
    @Inject(Bus) private readonly bus: Bus,
    @Inject(RUNNER_OPTIONS) private readonly opts: RunnerOptions,
  ) {
    this.layout = new WorkspaceLayout(opts.loaded.paths.workspaceDir);
    this.log = opts.logger;
    this.runSlot = pLimit(opts.loaded.config.runner.maxConcurrentRuns);
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.layout.ensureWorkspace();
    const durable = this.opts.durable ?? "agent-runner";
    this.consumptions.push(
      await this.bus.consume({
        stream: "IN",
        durable,
        filterSubject: this.bus.subjects.wildcard("in"),
        schema: ChannelMessage,
        stage: "agent-runner",
        // Handlers resolve when their run ends; many channels run at once, order per channel is kept by the worker.
        maxInFlight: 512,
        handler: (d) => this.onMessage(d),
      }),
      await this.bus.consume({
        stream: "CTL",
        durable: `${durable}-ctl`,
        deliver: "new",
        filterSubject: this.bus.subjects.wildcard("ctl"),
        schema: ControlMessage,
        stage: "agent-runner",
        maxInFlight: 64,
        handler: (d) => this.onControl(d),
      }),
    );
    const idleMs = this.opts.loaded.config.runner.idleEvictMinutes * 60_000;
    this.evictTimer = setInterval(() => void this.evictIdle(idleMs), Math.min(idleMs, 60_000));
    this.evictTimer.unref();
    this.log.info({ model: this.opts.loaded.config.model, workspace: this.layout.workspaceDir }, "agent runner ready");
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.evictTimer);
    await Promise.all([...this.workers.values()].map((w) => w.shutdown()));
    await Promise.all(this.consumptions.map((c) => c.stop()));
    for (const w of this.workers.values()) await w.dispose();
  }

  private async onMessage(d: Delivery<ChannelMessage>): Promise<void> {
    const ref = this.refOf(d);
    if (d.data.channelId !== ref.channelId) {
      throw new Error(`payload channelId ${JSON.stringify(d.data.channelId)} does not match subject channel ${JSON.stringify(ref.channelId)}`);
    }
    await this.worker(ref).accept(d.data, d.redelivered);
  }

  private async onControl(d: Delivery<ControlMessage>): Promise<void> {
    const worker = this.workers.get(qualifiedChannelId(this.refOf(d)));
    if (d.data.type === "abort") await worker?.stop(d.data.requestedBy?.username ? `@${d.data.requestedBy.username}` : "abort", d.data.runId);
  }

  private refOf(d: Delivery<unknown>): ChannelRef {
    if (!d.channel) throw new Error(`not a channel subject: ${d.subject}`);
    return d.channel;
  }

  private worker(ref: ChannelRef): ChannelWorker {
    const key = qualifiedChannelId(ref);
    let w = this.workers.get(key);
    if (!w) {
      const store = this.layout.channel(ref);
      const { loaded, models } = this.opts;
      const { resolved, thinkingLevel } = models.forChannel(key);
      w = new ChannelWorker({
        bus: this.bus,
        ref,
        store,
        log: this.log.child({ channel: key }),
        runTimeoutMs: loaded.config.runner.runTimeoutMinutes * 60_000,
        runSlot: (fn) => this.runSlot(fn),
        materialize: channelMaterializer({ files: this.bus, store, workspaceDir: this.layout.workspaceDir, maxBytes: loaded.config.attachments.maxBytes, log: this.log.child({ channel: key }) }),
        busyMode: loaded.config.adapters[ref.adapter]?.busy ?? "queue",
        createAgent: () =>
          ChannelAgent.create({
            qualifiedChannelId: key,
            workspaceDir: this.layout.workspaceDir,
            store,
            resolved,
            thinkingLevel,
            agentDir: join(loaded.paths.dataDir, ".pi"),
            listChannels: () => this.layout.listChannels().map(qualifiedChannelId),
            attach: {
              maxBytes: loaded.config.attachments.maxBytes,
              send: attachmentSender({ bus: this.bus, ref, currentRun: () => w?.currentRun, log: this.log.child({ channel: key }) }),
            },
            onSkillProblems: (problems) => this.log.warn({ channel: key, problems }, "some skills could not be loaded"),
          }),
      });
      this.workers.set(key, w);
    }
    return w;
  }

  private async evictIdle(idleMs: number): Promise<void> {
    const now = Date.now();
    for (const [key, w] of this.workers) {
      if (!w.busy && now - w.lastActivity > idleMs) {
        this.workers.delete(key);
        await w.dispose();
        this.log.debug({ channel: key }, "evicted idle channel session");
      }
    }
  }
}
