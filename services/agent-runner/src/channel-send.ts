import { createSendTool, gated, SEND_TOOL_NAME, type SendRequest, sendPrompt, withLabel } from "@mom/agent";
import { type Bus, fileObjectName } from "@mom/bus";
import type { MomConfig } from "@mom/config";
import { type ChannelRef, type OutboundEvent, type OutboundEventBody, qualifiedChannelId, Receipt } from "@mom/contracts";
import type { ChannelSandbox } from "@mom/sandbox";
import { isAllowed, type PolicyLayers, type ToolGate } from "@mom/tools";
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { ActiveRun } from "./active-run.js";
import { decideSend, sendTargets } from "./send-policy.js";

type PostEvent = Extract<OutboundEventBody, { type: "post" }>;

export interface ChannelSendDeps {
  bus: Bus;
  /** The sending channel. */
  ref: ChannelRef;
  active: ActiveRun;
  config: Pick<MomConfig, "adapters" | "send" | "attachments">;
  policy: PolicyLayers;
  /** The channels mom has a directory for: the only ones it posts into. */
  knownChannels: () => Promise<ChannelRef[]>;
  workspaceDir: string;
  publishRetryMs: number;
  log: Logger;
}

/** The send tool of one channel: whether it is offered, its prompt section, and the tool. */
export interface ChannelSend {
  /** Offered only with a route from this channel (config.json send.routes) that policy does not take away. */
  readonly offered: boolean;
  prompt(): string;
  tool(sandbox: ChannelSandbox, gate: ToolGate): ReturnType<typeof withLabel>;
}

export function channelSend(deps: ChannelSendDeps): ChannelSend {
  const targets = sendTargets(deps.config, deps.ref);
  const offered = targets.length > 0 && isAllowed(SEND_TOOL_NAME, deps.policy).allowed;
  return {
    offered,
    prompt: () => (offered ? sendPrompt(targets) : ""),
    tool: (sandbox, gate) =>
      withLabel(gated(createSendTool({ sandbox, workspaceDir: deps.workspaceDir, send: { maxBytes: deps.config.attachments.maxBytes, send: postSender(deps) } }) as Parameters<typeof gated>[0], gate)),
  };
}

/**
 * The runner's side of send: decides (send-policy.ts), puts the file into the files bucket under
 * the target channel, publishes one `post` event on the target's mom.out subject, and waits for
 * the target's ingress to record whether the platform took it (its delivery receipt on
 * mom.receipts.<target>). Resolves with what to tell the model; rejects with why it was not
 * posted, or that nobody confirmed it within `send.timeoutSeconds`.
 */
export function postSender(deps: ChannelSendDeps): (req: SendRequest, signal?: AbortSignal) => Promise<string> {
  return async (req, signal) => {
    const run = deps.active.current;
    if (!run) throw new Error("no run in progress: send posts only while answering a message");
    const requester = run.message.sender;
    // A message someone else steered into this run is read by the model too: whose request a post is could not be told.
    const others = [...new Set((run.steered ?? []).filter((m) => m.sender.id !== requester.id).map((m) => `@${m.sender.username}`))];
    if (others.length) throw new Error(`not sent: messages from ${others.join(", ")} were added to this run started by @${requester.username}, so whose request this is cannot be told; ask again in a message of its own`);
    const d = decideSend(deps.config, deps.ref, req.channel, requester);
    if (!d.ok) throw new Error(`not sent: ${d.reason}`);
    const { target } = d;
    const where = qualifiedChannelId(target);
    const known = await deps.knownChannels();
    if (!known.some((c) => c.adapter === target.adapter && c.channelId === target.channelId)) {
      throw new Error(`not sent: mom has never had a message in ${where}, so it does not post there (it posts only in channels it serves)`);
    }
    let file: PostEvent["file"];
    if (req.file) {
      const f = req.file;
      const objectKey = fileObjectName(target, f.filename);
      await deps.bus.putFile(objectKey, f.bytes, { ...(f.mimeType !== undefined && { mimeType: f.mimeType }), ...(f.title !== undefined && { description: f.title }) });
      file = { objectKey, filename: f.filename, path: f.path, size: f.size, ...(f.title !== undefined && { title: f.title }), ...(f.mimeType !== undefined && { mimeType: f.mimeType }) };
    }
    const postId = randomUUID();
    const event: PostEvent = {
      type: "post",
      text: req.text,
      ...(file && { file }),
      from: qualifiedChannelId(deps.ref),
      fromRunId: run.runId,
      requestedBy: { adapter: deps.ref.adapter, id: requester.id, username: requester.username },
      access: d.access,
    };
    // Receipts from here on: the target's ingress answers only after the post is on the bus.
    const fromSeq = (await deps.bus.streamState("RECEIPTS")).lastSeq + 1;
    const out: OutboundEvent = { runId: postId, seq: 0, ts: new Date().toISOString(), event };
    await deps.bus.publish(deps.bus.subjects.channel("out", target), out, `${postId}:0`, { retryForMs: deps.publishRetryMs, ...(signal && { signal }) });
    deps.log.info({ postId, to: where, runId: run.runId, access: d.access, file: file?.path }, "post handed to the target channel's ingress");
    const timeoutMs = deps.config.send.timeoutSeconds * 1000;
    const receipt = await deliveryOf(deps.bus, target, postId, fromSeq, timeoutMs, signal);
    if (!receipt) {
      throw new Error(
        `no word from the ${target.adapter} ingress within ${deps.config.send.timeoutSeconds} s that ${where} got the message (post ${postId}): ` +
          "it may be down (it posts it once it is back) or not running at all. Tell the person it is not confirmed; do not send it again unless they ask.",
      );
    }
    if (receipt.type === "delivery.failed") throw new Error(`not posted in ${where}: ${(receipt.detail ?? "the ingress gave no reason").replace(/^not posted: /, "")}`);
    deps.log.info({ postId, to: where }, "post delivered");
    return `Posted in ${where}${file ? ` with ${file.filename}` : ""} (${receipt.detail ?? "accepted by the platform"}).`;
  };
}

/**
 * The target ingress's delivery receipt of post `postId`, read from `fromSeq` of the target's
 * receipts subject; undefined when none came within `timeoutMs` (or the run was stopped).
 */
function deliveryOf(bus: Bus, target: ChannelRef, postId: string, fromSeq: number, timeoutMs: number, signal?: AbortSignal): Promise<Receipt | undefined> {
  return new Promise((resolve) => {
    let settled = false;
    const finish = (r: Receipt | undefined) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      feed.stop();
      resolve(r);
    };
    const onAbort = () => finish(undefined);
    const timer = setTimeout(() => finish(undefined), timeoutMs);
    const feed = bus.follow({
      stream: "RECEIPTS",
      filterSubject: bus.subjects.channel("receipts", target),
      from: fromSeq,
      schema: Receipt,
      handler: (d) => {
        if (d.data.runId === postId && (d.data.type === "delivery.succeeded" || d.data.type === "delivery.failed")) finish(d.data);
      },
    });
    if (signal?.aborted) finish(undefined);
    else signal?.addEventListener("abort", onAbort, { once: true });
  });
}
