import { type BusOptions, DEFAULT_MAX_ATTACHMENT_BYTES, type RunningIngress, startIngress, Type } from "@mom/ingress-sdk";
import type { CliIngressOptions } from "./cli-options.js";
import { TerminalChat } from "./terminal-chat.js";

export type RunningCliIngress = RunningIngress;

/**
 * Starts the terminal chat as an ingress on the SDK's shell: connected to NATS, drawing this
 * conversation's runs, reading the terminal. It has no settings of its own in config.json (type
 * "cli"): what it needs — the terminal, who types, the conversation — is the process's. The
 * terminal is its operator's own, so no DM policy applies to what is typed there.
 */
export async function startCliIngress(opts: CliIngressOptions, bus: BusOptions): Promise<RunningCliIngress> {
  return startIngress({ platform: "cli", settings: Type.Object({}), connect: (ctx) => new TerminalChat(opts, ctx) }, {
    adapter: { adapter: opts.adapter, access: {}, maxAttachmentBytes: opts.maxAttachmentBytes ?? DEFAULT_MAX_ATTACHMENT_BYTES, settings: {} },
    bus,
    logger: opts.logger,
  });
}
