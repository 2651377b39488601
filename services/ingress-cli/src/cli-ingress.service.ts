import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from "@nestjs/common";
import { type BeforeJetStreamDrain, Bus, type Delivery, fileObjectName, serviceReadiness } from "@mom/ingress-sdk";
import type { Attachment, ChannelMessage, OutboundEvent } from "@mom/ingress-sdk";
import { randomBytes } from "node:crypto";
import { resolve } from "node:path";
import { createInterface, type Interface } from "node:readline";
import { Writable } from "node:stream";
import { HELP_TEXT, modelText, parseChatCommand, switchModelText } from "./chat-commands.js";
import { parseAttachCommand, readUpload, saveDownload } from "./cli-files.js";
import { CLI_OPTIONS, type CliIngressOptions } from "./cli-options.js";
import { DEFAULT_MAX_ATTACHMENT_BYTES, decideApproval, observeRendering, plainDialect, publishInbound } from "@mom/ingress-sdk";
import { CliRenderer } from "./cli-renderer.js";

/** What the input line starts with on an interactive terminal. */
const PROMPT = "> ";

/** Terminal chat: every input line is a ChannelMessage; the channel's outbound events are drawn. */
@Injectable()
export class CliIngressService implements OnApplicationBootstrap, BeforeJetStreamDrain, OnApplicationShutdown {
  private readonly renderer: CliRenderer;
  private awaitingApproval?: string;
  private rl?: Interface;
  private pending: Promise<unknown> = Promise.resolve();
  private unready?: () => void;
  /** The model the last run in this chat reported (run_started). */
  private lastModel?: string;

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
    this.unready = serviceReadiness(`ingress-${this.opts.adapter}`, this.bus);
    this.rl = this.interactive ? this.promptInterface() : createInterface({ input: this.opts.input, crlfDelay: Infinity, terminal: false });
    this.rl.on("line", (line) => {
      if (this.interactive) this.renderer.entered(`${PROMPT}${line}`);
      const text = line.trim();
      if (!text) return;
      this.pending = this.pending.then((): Promise<unknown> => this.handleLine(text));
    });
    this.rl.on("close", () => void this.pending.then(() => this.opts.onInputEnd?.()));
  }

  /** A person types on a terminal and mom writes to one: the input line is kept apart from mom's output. */
  private get interactive(): boolean {
    return Boolean((this.opts.input as { isTTY?: boolean }).isTTY && this.opts.output.isTTY && process.env.TERM !== "dumb");
  }

  /**
   * readline in terminal mode: it echoes what is typed (with editing and history) on the prompt
   * row, which the renderer keeps below its own output. Ctrl-C, which raw mode turns into a key,
   * is passed on as the SIGINT it would have been.
   */
  private promptInterface(): Interface {
    const out = this.opts.output;
    const sink = new Writable({
      write(chunk: Buffer | string, _enc, done) {
        out.write(chunk.toString());
        done();
      },
    }) as Writable & { columns?: number; isTTY?: boolean };
    Object.defineProperty(sink, "columns", { get: () => out.columns ?? 80 });
    sink.isTTY = true;
    const rl = createInterface({ input: this.opts.input, output: sink, terminal: true, prompt: PROMPT, crlfDelay: Infinity });
    rl.on("SIGINT", () => (this.opts.onInterrupt ? this.opts.onInterrupt() : process.kill(process.pid, "SIGINT")));
    const lineState = rl as unknown as { prevRows?: number };
    this.renderer.attachInput({
      cursorRow: () => rl.getCursorPos().rows,
      redraw: () => {
        // The renderer has put the cursor at the start of the prompt's row: readline must not move up first.
        lineState.prevRows = 0;
        rl.prompt(true);
      },
    });
    return rl;
  }

  /** One typed line: a command of the terminal chat, an approval answer, a file, or a message to mom. */
  private async handleLine(text: string): Promise<unknown> {
    if (this.awaitingApproval && /^(y|yes|n|no)$/i.test(text)) return this.decide(/^y/i.test(text) ? "allow-once" : "deny");
    const attach = parseAttachCommand(text);
    if (attach) return this.sendFile(attach.path, attach.text);
    const command = parseChatCommand(text);
    switch (command?.kind) {
      case "help":
        return this.renderer.notice(HELP_TEXT);
      case "model":
        return this.renderer.notice(command.name ? switchModelText(this.opts.models, command.name) : modelText(this.opts.models, this.lastModel));
      case "unknown":
        return this.renderer.notice(`✗ unknown command /${command.name} (/help lists the commands)`);
      case "stop": {
        const sent = await this.send(text);
        if (sent) this.renderer.stopSent();
        return sent;
      }
      case "new":
        // The runner starts the new session once the runs queued before it are done, and says so.
        return this.send(text);
      default:
        return this.send(text);
    }
  }

  /** The terminal's answer to the pending approval prompt, as an approval_decision on mom.ctl. */
  async decide(decision: "allow-once" | "deny"): Promise<void> {
    const approvalId = this.awaitingApproval;
    if (!approvalId) return;
    this.awaitingApproval = undefined;
    try {
      await decideApproval(
        { bus: this.bus, adapter: this.opts.adapter, dialect: plainDialect(), log: this.opts.logger },
        undefined,
        { approvalId, decision, user: { id: this.opts.user.id, username: this.opts.user.username }, channel: this.opts.channelId },
      );
    } catch (err) {
      this.renderer.notice(`✗ could not send the decision (NATS): ${(err as Error).message}`);
    }
  }

  /** Stops reading the terminal before the outbound consumer stops: the lines typed are sent first. */
  async beforeJetStreamDrain(): Promise<void> {
    this.unready?.();
    this.rl?.close();
    await this.pending;
  }

  onApplicationShutdown(): void {
    this.renderer.close();
  }

  /** One event of this chat's runs (CliOutboundController brings them once the service listens). */
  draw(d: Delivery<OutboundEvent>): Promise<void> {
    const ev = d.data.event;
    if (ev.type === "approval_requested") this.awaitingApproval = ev.approvalId;
    if (ev.type === "approval_resolved" && ev.approvalId === this.awaitingApproval) this.awaitingApproval = undefined;
    if (ev.type === "run_started") this.lastModel = ev.model;
    return observeRendering(this.opts.adapter, d, async () => (ev.type === "attachment" ? this.download(ev) : this.renderer.render(d.data)));
  }

  private get maxBytes(): number {
    return this.opts.maxAttachmentBytes ?? DEFAULT_MAX_ATTACHMENT_BYTES;
  }

  /**
   * `/attach <path> [text]`: the file goes into the files bucket and the message carries it.
   * A file that cannot be sent (missing, a directory, too large, NATS refused it) is reported in
   * the terminal and nothing is published. Resolves undefined then.
   */
  async sendFile(path: string, text: string): Promise<ChannelMessage | undefined> {
    if (!path) {
      this.renderer.notice("✗ usage: /attach <path> [message]");
      return undefined;
    }
    let attachment: Attachment;
    try {
      const upload = await readUpload(path, this.opts.cwd ?? process.cwd(), this.maxBytes);
      const objectKey = fileObjectName(this.ref, upload.filename);
      await this.bus.putFile(objectKey, upload.bytes, upload.mimeType ? { mimeType: upload.mimeType } : {});
      attachment = { filename: upload.filename, localPath: "", size: upload.size, objectKey, ...(upload.mimeType && { mimeType: upload.mimeType }) };
    } catch (err) {
      this.renderer.notice(`✗ cannot attach ${path}: ${(err as Error).message}`);
      return undefined;
    }
    return this.send(text, [attachment]);
  }

  /** An `attachment` event: fetch the file into the downloads dir and say where it is. */
  private async download(ev: Extract<OutboundEvent["event"], { type: "attachment" }>): Promise<void> {
    const label = ev.title || ev.filename;
    try {
      const saved = await saveDownload(this.bus, resolve(this.opts.downloadsDir ?? "mom-downloads"), ev, this.maxBytes);
      this.renderer.notice(`📎 ${label} saved to ${saved}`);
    } catch (err) {
      this.renderer.notice(`✗ 📎 ${label} could not be saved: ${(err as Error).message}`);
      this.opts.logger.error({ err, objectKey: ev.objectKey }, "attachment download failed");
    }
  }

  /** Publishes one line as a message to mom; terminal lines always address mom. Undefined when NATS refused it. */
  async send(text: string, attachments: Attachment[] = []): Promise<ChannelMessage | undefined> {
    const message: ChannelMessage = {
      id: `${Date.now()}-${randomBytes(4).toString("hex")}`,
      channelId: this.opts.channelId,
      timestamp: new Date().toISOString(),
      sender: { ...this.opts.user, isBot: false },
      text,
      attachments,
      isMention: true,
      isDirect: true,
    };
    try {
      await publishInbound(this.bus, this.opts.adapter, message, { retryForMs: 0 });
    } catch (err) {
      this.renderer.notice(`✗ could not send (NATS): ${(err as Error).message}`);
      this.opts.logger.error({ err }, "publish failed");
      return undefined;
    }
    return message;
  }
}
