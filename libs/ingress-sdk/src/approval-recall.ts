import { type Bus, readRange } from "@mom/bus";
import type { OutboundEvent } from "@mom/contracts";
import type { Ev } from "@mom/render";

/** How far back a prompt of before a restart is looked for when nothing says otherwise (policy.approvalTimeoutSeconds' default). */
export const DEFAULT_APPROVAL_WINDOW_MS = 300_000;

/**
 * The approvals of a channel still waiting for a decision, read back from its outbound events of
 * the last `withinMs` (how long an approval may wait): each one's request, by approval id. The bus
 * is the record of what was asked, so a restarted ingress judges a click (or a typed code) as the
 * one that posted the prompt would have.
 */
export async function waitingApprovals(bus: Bus, adapter: string, channel: string, withinMs: number): Promise<Map<string, Ev<"approval_requested">>> {
  const { subjects } = bus;
  // A minute more for a server clock that is not this machine's.
  const since = new Date(Date.now() - withinMs - 60_000);
  const waiting = new Map<string, Ev<"approval_requested">>();
  const events = await readRange(bus, subjects.stream("OUT"), subjects.channel("out", { adapter, channelId: channel }), { time: since }, undefined, { leaveToExpire: true });
  for (const m of events) {
    let ev: OutboundEvent["event"] | undefined;
    try {
      ev = (JSON.parse(m.text) as OutboundEvent).event;
    } catch {
      continue; // not an event: the runner dead-letters it, and it asked nothing
    }
    if (ev?.type === "approval_requested") waiting.set(ev.approvalId, ev);
    if (ev?.type === "approval_resolved") waiting.delete(ev.approvalId);
  }
  return waiting;
}
