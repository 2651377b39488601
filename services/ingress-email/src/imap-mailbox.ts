import { FailureWatch } from "@mom/ingress-sdk";
import { ImapFlow, type ImapFlowOptions } from "imapflow";
import PQueue from "p-queue";
import pRetry from "p-retry";
import type { Logger } from "pino";

export interface MailboxOptions {
  imap: ImapFlowOptions;
  mailbox: string;
  log: Logger;
  /** Handles one unseen message: true once done with it (it is marked \Seen); false or a throw leaves it, and the ones after it, for later. */
  handle(source: Buffer): Promise<boolean>;
  /** How soon unseen messages are read again after one failed (default 30 s). */
  retryMs?: number;
}

/**
 * The IMAP folder mom reads: each unseen message, oldest first, at start, on new mail (IDLE) and
 * after a reconnect. A message is marked \Seen only once handled, so one that was not (a crash,
 * NATS away) is read again. A dropped connection is made again with backoff.
 */
export class ImapMailbox {
  private client?: ImapFlow;
  private started = false;
  private stopped = false;
  private readonly link: FailureWatch;
  /** Passes over the unseen messages: one at a time, and at most one waiting. */
  private readonly passes = new PQueue({ concurrency: 1 });
  private retry?: NodeJS.Timeout;
  private readonly abort = new AbortController();

  constructor(private readonly o: MailboxOptions) {
    this.link = new FailureWatch("IMAP connection", o.log);
  }

  /** Logs in and opens the folder; throws saying what failed. */
  async open(): Promise<void> {
    // IDLE, which hears of new mail at once, starts after this long without commands (imapflow's default: 15 s).
    const client = new ImapFlow({ autoIdleDelay: 500, ...this.o.imap, logger: false });
    client.on("error", (err: Error) => this.o.log.warn({ err }, `IMAP error: ${err.message}`));
    try {
      await client.connect();
      await client.mailboxOpen(this.o.mailbox);
    } catch (err) {
      client.close();
      const e = err as Error & { responseText?: string; authenticationFailed?: boolean };
      throw new Error(`IMAP ${this.o.imap.host}:${this.o.imap.port}: ${e.authenticationFailed ? "login refused" : (e.responseText ?? e.message)}`, { cause: err });
    }
    if (this.stopped) return void (await client.logout().catch(() => client.close())); // stopped while reconnecting
    client.on("exists", () => void this.sweep());
    client.on("close", () => this.lost(client));
    this.client = client;
    this.link.works();
    void this.sweep();
  }

  start(): Promise<void> {
    this.started = true;
    return this.sweep();
  }

  problem(): string | undefined {
    return this.link.problem();
  }

  private lost(client: ImapFlow): void {
    if (this.stopped || client !== this.client) return;
    this.link.failed(client.byeReason ?? "connection closed");
    const onFailedAttempt = ({ error, attemptNumber }: { error: Error; attemptNumber: number }) => this.o.log.warn({ attempt: attemptNumber }, `IMAP reconnect failed: ${error.message}`);
    // At most 5 s apart, so mail sent during an outage is read within seconds of the server's return.
    pRetry(() => this.open(), { retries: Infinity, minTimeout: 500, maxTimeout: 5000, signal: this.abort.signal, onFailedAttempt }).catch(() => {}); // aborted by stop()
  }

  /** Reads the unseen messages: one pass at a time, and one more after it when asked meanwhile. */
  private sweep(): Promise<void> {
    if (!this.started || this.stopped) return Promise.resolve();
    if (this.passes.size === 0) void this.passes.add(() => this.sweepOnce().catch((err: Error) => this.o.log.warn({ err }, `reading the mailbox failed: ${err.message}`)));
    return this.passes.onIdle();
  }

  private async sweepOnce(): Promise<void> {
    const client = this.client;
    if (!client?.usable) return;
    for (const uid of (await client.search({ seen: false }, { uid: true })) || []) {
      const msg = this.stopped ? false : await client.fetchOne(String(uid), { source: true }, { uid: true });
      if (!msg || !msg.source) continue;
      const done = await this.o.handle(msg.source).catch((err: Error) => (this.o.log.error({ err, uid }, `handling mail ${uid} failed: ${err.message}`), false));
      // The mails after one not handled wait for it: a thread's mails reach mom in the order they came.
      if (!done) return void (this.retry ??= setTimeout(() => ((this.retry = undefined), void this.sweep()), this.o.retryMs ?? 30_000).unref());
      await client.messageFlagsAdd(String(uid), ["\\Seen"], { uid: true });
    }
  }

  /** The source of the message with this Message-ID (without brackets), if the folder has it. */
  async find(messageId: string): Promise<Buffer | undefined> {
    const uids = this.client?.usable ? await this.client.search({ header: { "message-id": messageId } }, { uid: true }) : false;
    const msg = uids && uids[0] !== undefined && (await this.client!.fetchOne(String(uids[0]), { source: true }, { uid: true }));
    return msg ? msg.source : undefined;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    clearTimeout(this.retry);
    this.passes.clear();
    await this.passes.onIdle();
    await this.client?.logout().catch(() => this.client?.close());
  }
}
