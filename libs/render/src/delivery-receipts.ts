import type { Bus } from "@mom/bus";
import type { ChannelRef, Receipt } from "@mom/contracts";
import { createHash } from "node:crypto";
import type { Logger } from "pino";
import { RecentMap } from "./recent.js";

/** Records a receipt of one channel (an ingress: publishes it on `mom.receipts.<adapter>.<channel>`). */
export type RecordReceipt = (channel: string, receipt: Receipt) => Promise<void>;

/** Where a run's answer went, for a failure the platform reports only later (WhatsApp's status webhooks). */
interface Sent {
  channel: string;
  runId: string;
  textHash: string;
}

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/**
 * What reached the person, as receipts: the Presenter calls `succeeded`/`failed` when it has drawn
 * (or failed to draw) a run's answer, and an ingress calls `failedLater` when the platform reports
 * a message it had accepted as undelivered. Never throws: a receipt that cannot be recorded is
 * logged, and the answer is not drawn again for it.
 */
export class DeliveryReceipts {
  private readonly sent = new RecentMap<Sent>(10_000);

  constructor(
    private readonly adapter: string,
    private readonly record: RecordReceipt,
    private readonly log: Logger,
  ) {}

  async succeeded(channel: string, runId: string, text: string, messageIds: string[]): Promise<void> {
    const textHash = sha256(text);
    for (const id of messageIds) this.sent.set(id, { channel, runId, textHash });
    const detail = messageIds.length ? `accepted by the platform as ${messageIds.join(", ")}` : "accepted by the platform";
    await this.write(channel, { receiptId: `${runId}:delivery`, type: "delivery.succeeded", runId, textHash, detail });
  }

  async failed(channel: string, runId: string, text: string, error: string): Promise<void> {
    await this.write(channel, { receiptId: `${runId}:delivery-failed`, type: "delivery.failed", runId, textHash: sha256(text), detail: error });
  }

  /** The platform says a message it accepted never arrived; false when the message is not one of the answers drawn here. */
  async failedLater(platformMessageId: string, error: string): Promise<boolean> {
    const s = this.sent.get(platformMessageId);
    if (!s) return false;
    await this.write(s.channel, { receiptId: `${s.runId}:delivery-failed:${platformMessageId}`, type: "delivery.failed", runId: s.runId, textHash: s.textHash, detail: `${platformMessageId}: ${error}` });
    return true;
  }

  private async write(channel: string, r: { receiptId: string; type: Receipt["type"]; runId: string; textHash: string; detail: string }): Promise<void> {
    const receipt: Receipt = {
      receiptId: r.receiptId,
      type: r.type,
      runId: r.runId,
      toolCallId: "",
      toolId: "chat.deliver",
      risk: "write",
      ts: new Date().toISOString(),
      argsHash: r.textHash,
      detail: r.detail,
      actor: `ingress-${this.adapter}`,
    };
    await this.record(channel, receipt).catch((err: unknown) => this.log.error({ err, channel, runId: r.runId, type: r.type }, `could not record the delivery receipt: ${(err as Error).message}`));
  }
}

/** Receipts on the bus: `mom.receipts.<adapter>.<channel>`, msg-id = receiptId (a redrawn answer is recorded once). */
export function busReceipts(bus: Pick<Bus, "publish" | "subjects">, adapter: string): RecordReceipt {
  return async (channelId, receipt) => {
    const ref: ChannelRef = { adapter, channelId };
    await bus.publish(bus.subjects.channel("receipts", ref), receipt, receipt.receiptId);
  };
}
