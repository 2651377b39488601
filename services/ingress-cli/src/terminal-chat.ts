import { type Ev, type EventSurface, fetchSharedFile, type IncomingFile, type OutboundEvent, type PlatformConnection, type PlatformContext, plainDialect, postAttribution, safeFileName, writeNewFile } from "@mom/ingress-sdk";
import { randomBytes } from "node:crypto";
import { join, resolve } from "node:path";
import { createInterface, type Interface } from "node:readline";
import { Writable } from "node:stream";
import { HELP_TEXT, modelText, parseChatCommand, switchModelText } from "./chat-commands.js";
import { parseAttachCommand, readUpload } from "./cli-files.js";
import type { CliIngressOptions } from "./cli-options.js";
import { CliRenderer } from "./cli-renderer.js";

/** What the input line starts with on an interactive terminal. */
const PROMPT = "> ";

/**
 * The terminal chat as the ingress shell's platform: every typed line is a message to mom (or a
 * command of the chat), and every event of this conversation's runs is written as it comes — the
 * answer streamed as the model writes it — by the CliRenderer (an EventSurface). One conversation
 * per process (`channel`); a line that NATS refuses is reported at once (`inboundRetryMs: 0`), so
 * the person can type it again.
 */
export class TerminalChat implements PlatformConnection, EventSurface {
  readonly dialect = plainDialect();
  readonly channel: string;
  readonly inboundRetryMs = 0;
  readonly surface: EventSurface = this;
  private readonly renderer: CliRenderer;
  private awaitingApproval?: string;
  private rl?: Interface;
  private pending: Promise<unknown> = Promise.resolve();
  /** The model the last run in this chat reported (run_started). */
  private lastModel?: string;

  constructor(
    private readonly opts: CliIngressOptions,
    private readonly ctx: PlatformContext<unknown>,
  ) {
    this.channel = opts.channelId;
    this.renderer = new CliRenderer(opts.output);
  }

  async start(): Promise<void> {
    this.rl = this.interactive ? this.promptInterface() : createInterface({ input: this.opts.input, crlfDelay: Infinity, terminal: false });
    this.rl.on("line", (line) => {
      if (this.interactive) this.renderer.entered(`${PROMPT}${line}`);
      const text = line.trim();
      if (!text) return;
      this.pending = this.pending.then((): Promise<unknown> => this.handleLine(text));
    });
    this.rl.on("close", () => void this.pending.then(() => this.opts.onInputEnd?.()));
  }

  /** Stops reading the terminal; the lines typed so far are sent first (the shell still draws meanwhile). */
  async stop(): Promise<void> {
    this.rl?.close();
    await this.pending;
  }

  async close(): Promise<void> {
    this.renderer.close();
  }

  /** A person types on a terminal and mom writes to one: the input line is kept apart from mom's output. */
  private get interactive(): boolean {
    return Boolean((this.opts.input as { isTTY?: boolean }).isTTY && this.opts.output.isTTY && process.env.TERM !== "dumb");
  }

  /**
   * readline in terminal mode: it echoes what is typed (with editing and history) on the prompt
   * row, which the renderer keeps below its own output (it draws the working line as part of the
   * prompt). Ctrl-C, which raw mode turns into a key, is passed on as the SIGINT it would have been.
   */
  private promptInterface(): Interface {
    const out = this.opts.output;
    const sink = new Writable({
      write(chunk: Buffer | string, _enc, done) {
        out.write(chunk.toString());
        done();
      },
    });
    Object.defineProperties(sink, { columns: { get: () => out.columns ?? 80 }, isTTY: { value: true } });
    const rl = createInterface({ input: this.opts.input, output: sink, terminal: true, prompt: PROMPT, crlfDelay: Infinity });
    rl.on("SIGINT", () => (this.opts.onInterrupt ? this.opts.onInterrupt() : process.kill(process.pid, "SIGINT")));
    this.renderer.attachInput(rl);
    return rl;
  }

  /** One typed line: a command of the terminal chat, an approval answer, a file, or a message to mom. */
  private async handleLine(text: string): Promise<unknown> {
    if (this.awaitingApproval && /^(y|yes|n|no)$/i.test(text)) return this.decide(this.awaitingApproval, /^y/i.test(text) ? "allow-once" : "deny");
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
        if (sent) this.renderer.stops.sent();
        return sent;
      }
      default:
        // `/new` too: the runner starts the new session once the runs queued before it are done, and says so.
        return this.send(text);
    }
  }

  /** The terminal's answer to the pending approval prompt, as an approval decision on mom.ctl. */
  private async decide(approvalId: string, decision: "allow-once" | "deny"): Promise<void> {
    this.awaitingApproval = undefined;
    try {
      const { refusal } = await this.ctx.inbound.decide({ approvalId, decision, user: { id: this.opts.user.id, username: this.opts.user.username }, channel: this.channel });
      if (refusal) this.renderer.notice(`✗ ${refusal}`);
    } catch (err) {
      this.renderer.notice(`✗ could not send the decision (NATS): ${(err as Error).message}`);
    }
  }

  /** One event of this chat's runs, after the earlier ones (the shell's EventDrawing). */
  async drawEvent(_channel: string, e: OutboundEvent): Promise<void> {
    const ev = e.event;
    if (ev.type === "approval_requested") this.awaitingApproval = ev.approvalId;
    if (ev.type === "approval_resolved" && ev.approvalId === this.awaitingApproval) this.awaitingApproval = undefined;
    if (ev.type === "run_started") this.lastModel = ev.model;
    if (ev.type === "post") await this.post(ev);
    else if (ev.type === "attachment") await this.download(ev);
    else this.renderer.render(e);
  }

  /**
   * `/attach <path> [text]`: the file is read here (a missing, unreadable or too large one is
   * reported and nothing is sent), then the shell puts it into the files bucket with the message.
   */
  private async sendFile(path: string, text: string): Promise<boolean> {
    if (!path) {
      this.renderer.notice("✗ usage: /attach <path> [message]");
      return false;
    }
    const file = await readUpload(path, this.opts.cwd ?? process.cwd(), this.ctx.maxAttachmentBytes).catch((err: Error) => {
      this.renderer.notice(`✗ cannot attach ${path}: ${err.message}`);
    });
    return file ? this.send(text, [file]) : false;
  }

  /**
   * A post from another channel (the send tool), once the shell admitted it: the person at this
   * terminal runs mom, so it is shown with whom it was sent for and from where, its file fetched.
   */
  private async post(ev: Ev<"post">): Promise<void> {
    this.renderer.notice(`📨 ${ev.text.trim()}\n   — ${postAttribution(ev)}`);
    if (ev.file) await this.download({ type: "attachment", ...ev.file });
  }

  /**
   * An `attachment` event: the file fetched as for every platform (or the line why it cannot be),
   * saved into the downloads dir under its sanitised name (`name-2.ext` when taken), and where it is.
   */
  private async download(ev: Ev<"attachment">): Promise<void> {
    const got = await fetchSharedFile(this.ctx.files, ev, this.ctx.maxAttachmentBytes, this.dialect);
    if ("problem" in got) {
      this.renderer.notice(`✗ ${got.problem}`);
      return void this.ctx.log.error({ objectKey: ev.objectKey }, `attachment download failed: ${got.problem}`);
    }
    const dir = resolve(this.opts.downloadsDir ?? "mom-downloads");
    try {
      this.renderer.notice(`📎 ${got.file.title} saved to ${join(dir, await writeNewFile(dir, safeFileName(ev.filename), got.file.bytes))}`);
    } catch (err) {
      this.renderer.notice(`✗ 📎 ${got.file.title} could not be saved: ${(err as Error).message}`);
      this.ctx.log.error({ err, objectKey: ev.objectKey }, "attachment download failed");
    }
  }

  /** One line as a message to mom; terminal lines always address mom. False when NATS refused it (said in the terminal). */
  private async send(text: string, files: IncomingFile[] = []): Promise<boolean> {
    try {
      await this.ctx.inbound.receive({
        id: `${Date.now()}-${randomBytes(4).toString("hex")}`,
        channelId: this.channel,
        timestamp: new Date().toISOString(),
        sender: { ...this.opts.user, isBot: false },
        text,
        files,
        isMention: true,
        isDirect: true,
        refuse: async (line) => this.renderer.notice(`✗ ${line}`),
      });
      return true;
    } catch (err) {
      this.renderer.notice(`✗ could not send (NATS): ${(err as Error).message}`);
      return false;
    }
  }
}
