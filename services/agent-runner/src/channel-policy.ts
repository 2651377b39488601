import type { MomConfig } from "@mom/config";
import type { ChannelRef } from "@mom/contracts";
import { isAllowed, type PolicyLayers } from "@mom/tools";

/** The policy layers of one channel, in order: global, adapter, channel, model provider, sandbox. */
export function channelPolicy(config: MomConfig, ref: ChannelRef, provider: string): PolicyLayers {
  const p = config.policy;
  const key = `${ref.adapter}/${ref.channelId}`;
  return {
    layers: [p.tools, p.adapters[ref.adapter], p.channels[key], p.providers[provider], p.sandbox],
    ask: p.ask,
    autoAllow: p.autoAllow,
  };
}

/**
 * Who may decide an approval: the adapter's admins, plus the requester when the policy says so.
 * In a terminal the person typing is the operator, so a cli adapter always lets them decide.
 */
export function approversFor(config: MomConfig, ref: ChannelRef, requesterId: string): string[] {
  const adapter = config.adapters[ref.adapter];
  const admins = adapter?.admins ?? [];
  const requesterToo = config.policy.requesterMayApprove || adapter?.type === "cli";
  return [...new Set(requesterToo ? [...admins, requesterId] : admins)];
}

/**
 * Why an `abort` on mom.ctl may not stop a run, or undefined when it may: the adapter's admins may
 * stop any run, the person whose message started it their own — as a `stop` they typed would.
 * An abort that does not say who asks is refused.
 */
export function abortRefusal(config: MomConfig, ref: ChannelRef, by: { id: string } | undefined, requesterId: string | undefined): string | undefined {
  if (!by) return "it does not say who asks (requestedBy)";
  const admins = config.adapters[ref.adapter]?.admins ?? [];
  if (admins.includes(by.id) || by.id === requesterId) return undefined;
  return `${by.id} is neither an admin of adapter ${ref.adapter} nor the person whose message started the run`;
}

/** The tools among `ids` this channel may call; the model sees only these. */
export function callableTools(ids: string[], policy: PolicyLayers): string[] {
  return ids.filter((id) => isAllowed(id, policy).allowed);
}

export function noCallableToolsMessage(key: string): string {
  return `the tool policy leaves no callable tools for ${key}: check policy.tools / adapters / channels / providers / sandbox in config.json`;
}
