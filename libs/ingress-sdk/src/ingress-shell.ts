import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from "@nestjs/common";
import { Bus, serviceReadiness } from "@mom/bus";
import { type BeforeJetStreamDrain } from "@mom/bus/nest";
import type { OutboundEvent } from "@mom/contracts";
import type { Dialect, Ev, PendingApproval, PostHandling } from "@mom/render";
import {
  type ApprovalClick,
  approvalPromptText,
  type Arrival,
  busDrawnRuns,
  DeliveryReceipts,
  DM_REFUSAL,
  InboundIntake,
  type Layout,
  MessageLayout,
  Presenter,
  busReceipts,
  consoleRunUrl,
  decideApproval,
  DEFAULT_ATTACHMENT_DOWNLOAD_MS,
  importAttachment,
  mayDirectMessage,
  postRecord,
  publishInbound,
} from "@mom/render";
import pTimeout from "p-timeout";
import type { Logger } from "pino";
import type { AdapterSettings } from "./adapter-settings.js";
import { DEFAULT_APPROVAL_WINDOW_MS, waitingApprovals } from "./approval-recall.js";
import { EventDrawing, type RunDrawing } from "./event-drawing.js";
import { inboundHistory } from "./inbound-history.js";
import type { OutboundDrawing } from "./outbound-controller.js";
import type { EventSurface, IngressDefinition, InboundPort, PlatformConnection, PlatformMessage } from "./platform.js";

export const INGRESS_RUN = Symbol("INGRESS_RUN");

/** What the shell is started with: the definition, the adapter's settings, and tuning for tests. */
export interface IngressRun {
  definition: IngressDefinition;
  adapter: AdapterSettings<unknown>;
  logger: Logger;
  /** Overrides the platform's edit interval (tests). */
  editIntervalMs?: number;
  typingIntervalMs?: number;
  /** console.publicUrl: answers with tool activity link to their run page there. */
  consoleUrl?: string;
  /** How long an approval may wait (policy.approvalTimeoutSeconds): how far back a prompt of before a restart is read. */
  approvalWindowMs?: number;
}

type Surface = PlatformConnection["surface"];

function isLayout(s: Surface): s is Layout<unknown, unknown> {
  return typeof (s as Layout<unknown, unknown>).open === "function";
}

function isEventSurface(s: Surface): s is EventSurface {
  return typeof (s as EventSurface).drawEvent === "function";
}

/**
 * One running ingress: the platform's connection between the bus's inbound (what people send,
 * through the intake) and outbound (runs, through the presenter or straight to an EventSurface,
 * fed by the OutboundController on the JetStream transport). The consumer binds once bootstrap is
 * done and counts "new" from the service's start, so what is answered while the platform starts
 * receiving is drawn; at shutdown receiving stops first, while the consumer still draws.
 */
@Injectable()
export class IngressShell implements OnApplicationBootstrap, BeforeJetStreamDrain, OnApplicationShutdown, InboundPort, OutboundDrawing {
  private readonly log: Logger;
  private readonly intake: InboundIntake;
  private connection?: PlatformConnection;
  private drawing?: RunDrawing;
  private deliveries?: DeliveryReceipts;
  private unready?: () => void;
  private stopping = false;
  /** Approval clicks being decided: shutdown waits for them (`beforeJetStreamDrain`). */
  private readonly deciding = new Set<Promise<unknown>>();

  constructor(
    @Inject(Bus) private readonly bus: Bus,
    @Inject(INGRESS_RUN) private readonly run: IngressRun,
  ) {
    this.log = run.logger;
    this.intake = new InboundIntake(run.definition.platform, this.log);
  }

  get adapter(): string {
    return this.run.adapter.adapter;
  }

  /** The one channel this process draws, when the platform serves only one (read when the consumer binds, after `connect`). */
  get channel(): string | undefined {
    return this.connection?.channel;
  }

  /** The platform side (for tests and for ingresses that expose their client). */
  get platform(): PlatformConnection {
    if (!this.connection) throw new Error("the ingress is not started");
    return this.connection;
  }

  async onApplicationBootstrap(): Promise<void> {
    const { definition, adapter } = this.run;
    const conn = await definition.connect({
      adapter: adapter.adapter,
      settings: adapter.settings,
      log: this.log,
      maxAttachmentBytes: adapter.maxAttachmentBytes,
      inbound: this,
      history: inboundHistory(this.bus, adapter.adapter),
      files: this.bus,
    });
    this.connection = conn;
    this.deliveries = new DeliveryReceipts(adapter.adapter, busReceipts(this.bus, adapter.adapter), this.log);
    // Each run's platform message ids, for a process after this one (docs/scaling.md): opened in the background, never waited for to draw.
    const drawn = busDrawnRuns(this.bus, adapter.adapter, this.log);
    const surface = conn.surface;
    const posts = this.posts(conn);
    this.drawing = isEventSurface(surface)
      ? new EventDrawing(surface, { log: this.log, deliveries: this.deliveries, posts, drawn })
      : new Presenter(isLayout(surface) ? surface : new MessageLayout(surface), {
          files: this.bus,
          maxBytes: adapter.maxAttachmentBytes,
          log: this.log,
          editIntervalMs: this.run.editIntervalMs ?? conn.editIntervalMs ?? 1500,
          typingIntervalMs: this.run.typingIntervalMs ?? conn.typingIntervalMs ?? 4500,
          deliveries: this.deliveries,
          posts,
          drawn,
          ...(this.run.consoleUrl && { runUrl: (channelId: string, runId: string) => consoleRunUrl(this.run.consoleUrl!, adapter.adapter, channelId, runId) }),
        });
    const how = await conn.start();
    this.unready = serviceReadiness(`ingress-${adapter.adapter}`, this.bus, () => conn.problem?.());
    this.log.info({ adapter: adapter.adapter, platform: definition.platform, ...how }, `${definition.platform} ingress receiving`);
  }

  /**
   * Posts from other channels (the send tool): the operator's, from mom's terminal, go out; one a
   * person of this adapter asked for goes out only if the platform says they can see the channel.
   * Once posted, its record goes onto this channel's inbound subject, for the channel's log.
   */
  private posts(conn: PlatformConnection): PostHandling {
    const platform = this.run.definition.platform;
    return {
      admit: async (channel: string, ev: Ev<"post">) => {
        if (ev.access === "operator") return undefined;
        const who = `@${ev.requestedBy.username}`;
        if (ev.requestedBy.adapter !== this.adapter) return `${who} is on ${ev.requestedBy.adapter}, not on this adapter (${this.adapter}): whether they can see this chat cannot be checked`;
        if (!conn.canSee) return `the ${platform} ingress cannot check whether ${who} can see this chat, so it posts nothing asked for elsewhere`;
        try {
          return (await conn.canSee(ev.requestedBy.id, channel)) ? undefined : `${who} cannot see this ${platform} chat`;
        } catch (err) {
          return `could not check whether ${who} can see this ${platform} chat: ${(err as Error).message}`;
        }
      },
      record: async (channel, e, ev, ids) => {
        await publishInbound(this.bus, this.adapter, postRecord(channel, e, ev, ids), { log: this.log });
      },
    };
  }

  draw(channelId: string, event: OutboundEvent, arrival?: Arrival): Promise<boolean> {
    if (!this.drawing) throw new Error("the ingress is not started");
    return this.drawing.handle(channelId, event, arrival);
  }

  async beforeJetStreamDrain(): Promise<void> {
    this.unready?.();
    this.stopping = true;
    await this.connection?.stop();
    await this.intake.idle();
    // A click in hand may be past `acknowledge` (the platform told it was taken) but not yet on
    // mom.ctl: left to NATS's drain, its publish would fail and the decision be lost.
    if (this.deciding.size > 0) {
      this.log.info({ decisions: this.deciding.size }, "stopping: finishing the approval decisions in hand");
      await Promise.allSettled([...this.deciding]);
    }
  }

  async onApplicationShutdown(): Promise<void> {
    await this.drawing?.close();
    await this.connection?.close?.();
  }

  receive(m: PlatformMessage): Promise<boolean> {
    return this.intake.handle(m.channelId, m.id, () => this.publish(m));
  }

  receiveInTurn(chat: string, id: string, convert: () => Promise<PlatformMessage | undefined>): Promise<boolean> {
    return this.intake.handle(chat, id, async () => {
      const m = await convert();
      if (m) await this.publish(m);
    });
  }

  catchUp(chat: string, missed: () => Promise<PlatformMessage[]>): Promise<number> {
    return this.intake.catchUp(chat, missed, (m) => this.publish(m), () => this.stopping);
  }

  private async publish(m: PlatformMessage): Promise<void> {
    const { access, maxAttachmentBytes, attachmentDownloadMs } = this.run.adapter;
    if (m.isDirect && !m.sender.isBot && !mayDirectMessage(m.sender.id, access)) {
      this.log.info({ chat: m.channelId, user: m.sender.id }, "direct message refused (dm policy)");
      const refuse = m.refuse ?? ((text: string) => this.post(m.channelId, text));
      await Promise.resolve(refuse(DM_REFUSAL)).catch((err: unknown) => this.log.warn({ err }, "could not send the DM refusal"));
      return;
    }
    const { files = [], refuse: _refuse, ...rest } = m;
    const ref = { adapter: this.adapter, channelId: m.channelId };
    const attachments = [];
    for (const f of files) {
      const a = await importAttachment(f, ref, { files: this.bus, maxBytes: maxAttachmentBytes, timeoutMs: attachmentDownloadMs ?? DEFAULT_ATTACHMENT_DOWNLOAD_MS });
      if (a.note) this.log.warn({ chat: m.channelId, file: f.filename }, `${this.run.definition.platform} file not brought in: ${a.note}`);
      attachments.push(a);
    }
    const retryForMs = this.connection?.inboundRetryMs;
    await publishInbound(this.bus, this.adapter, { ...rest, attachments }, { log: this.log, ...(retryForMs !== undefined && { retryForMs }) });
  }

  private async post(channel: string, text: string): Promise<void> {
    const surface = this.connection?.surface;
    if (surface && !isLayout(surface) && !isEventSurface(surface)) await surface.post(channel, text, {});
    else throw new Error("the platform gave no way to answer a refused direct message (PlatformMessage.refuse)");
  }

  decide(click: ApprovalClick, acknowledge?: (verdict: { refusal?: string }) => Promise<unknown>): Promise<{ refusal?: string }> {
    const deciding = this.decideNow(click, acknowledge);
    this.deciding.add(deciding);
    void deciding.then(
      () => this.deciding.delete(deciding),
      () => this.deciding.delete(deciding),
    );
    return deciding;
  }

  private async decideNow(click: ApprovalClick, acknowledge?: (verdict: { refusal?: string }) => Promise<unknown>): Promise<{ refusal?: string }> {
    const drawing = this.drawing;
    if (!drawing) throw new Error("the ingress is not started");
    const shown = drawing.approval(click.approvalId);
    if (!shown && click.prompt) drawing.recall?.(click.approvalId, click.prompt);
    const pending = shown ?? (await this.recalled(click, drawing.dialect));
    const { refusal } = await decideApproval({ bus: this.bus, adapter: this.adapter, dialect: drawing.dialect, log: this.log }, pending, click, acknowledge);
    return refusal ? { refusal } : {};
  }

  /** A prompt of before a restart, read back from the bus; undefined when that read failed (the runner judges the decision). */
  private async recalled(click: ApprovalClick, dialect: Dialect): Promise<PendingApproval | undefined> {
    const asked = click.channel ? (await this.waiting(click.channel))?.get(click.approvalId) : undefined;
    return asked && { channel: click.channel!, approvers: asked.approvers, text: approvalPromptText(asked, dialect) };
  }

  async waitingApprovals(channel: string): Promise<string[]> {
    return [...((await this.waiting(channel))?.keys() ?? [])];
  }

  /**
   * The channel's approvals waiting for a decision, read back from the bus. Some platforms drop a
   * click not answered within seconds, so a read that fails or takes over a second gives undefined.
   */
  private async waiting(channel: string): Promise<Map<string, Ev<"approval_requested">> | undefined> {
    try {
      const read = waitingApprovals(this.bus, this.adapter, channel, this.run.approvalWindowMs ?? DEFAULT_APPROVAL_WINDOW_MS);
      return await pTimeout(read, { milliseconds: 1000, message: "the read took over a second" });
    } catch (err) {
      this.log.warn({ err, channel }, "could not read the channel's waiting approvals back from the bus: a click is judged by the runner alone, a typed code of before a restart decides nothing");
      return undefined;
    }
  }

  undelivered(platformMessageId: string, error: string): Promise<boolean> {
    if (!this.deliveries) return Promise.resolve(false);
    return this.deliveries.failedLater(platformMessageId, error);
  }
}
