import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from "@nestjs/common";
import { Bus, type Consumption } from "@mom/bus";
import { type ChannelMessage, escapeChannelToken, OutboundEvent } from "@mom/contracts";
import { randomBytes } from "node:crypto";
import { createInterface, type Interface } from "node:readline";
import { CLI_OPTIONS, type CliIngressOptions } from "./cli-options.js";
import { CliRenderer } from "./cli-renderer.js";

/** Terminal chat: every input line is a ChannelMessage; the channel's outbound events are drawn. */
@Injectable()
export class CliIngressService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly renderer: CliRenderer;
  private consumption?: Consumption;
  private rl?: Interface;
  private pending: Promise<unknown> = Promise.resolve();

  constructor(
    @Inject(Bus) private readonly bus: Bus,
    @Inject(CLI_OPTIONS) private readonly opts: CliIngressOptions,
  ) {
    this.renderer = new CliRenderer(opts.output);
  }

  private get ref() {
    return { adapter: this.opts.adapter, channelId: this.opts.channelId };
  }

  async onApplicationBootstrap(): Promise<void> {
    this.consumption = await this.bus.consume({
      stream: "OUT",
      durable: `ingress-${this.opts.adapter}-${escapeChannelToken(this.opts.channelId)}`,
      deliver: "new",
      filterSubject: this.bus.subjects.channel("out", this.ref),
      schema: OutboundEvent,
      stage: `ingress-${this.opts.adapter}`,
      handler: async (d) => this.renderer.render(d.data),
    });
    this.rl = createInterface({ input: this.opts.input, crlfDelay: Infinity, terminal: false });
    this.rl.on("line", (line) => {
      const text = line.trim();
      if (text) this.pending = this.pending.then(() => this.send(text));
    });
    this.rl.on("close", () => void this.pending.then(() => this.opts.onInputEnd?.()));
  }

  async onApplicationShutdown(): Promise<void> {
    this.rl?.close();
    await this.pending;
    await this.consumption?.stop();
    this.renderer.close();
  }

  /** Publishes one line as a message to mom; terminal lines always address mom. */
  async send(text: string): Promise<ChannelMessage> {
    const message: ChannelMessage = {
      id: `${Date.now()}-${randomBytes(4).toString("hex")}`,
      channelId: this.opts.channelId,
      timestamp: new Date().toISOString(),
      sender: { ...this.opts.user, isBot: false },
      text,
      attachments: [],
      isMention: true,
      isDirect: true,
    };
    try {
      await this.bus.publish(this.bus.subjects.channel("in", this.ref), message, message.id);
    } catch (err) {
      this.opts.output.write(`✗ could not send (NATS): ${(err as Error).message}\n`);
      this.opts.logger.error({ err }, "publish failed");
    }
    return message;
  }
}
