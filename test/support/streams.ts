import type { Bus } from "@mom/bus";
import { OutboundEvent, parsePayload, validator } from "@mom/contracts";

/** Every valid outbound event of a channel so far, read back from the OUT stream in order. */
export async function outboundEvents(bus: Bus, ref = { adapter: "cli", channelId: "local" }): Promise<OutboundEvent[]> {
  const stream = bus.subjects.stream("OUT");
  const subject = bus.subjects.channel("out", ref);
  const info = await bus.jsm.streams.info(stream);
  const v = validator(OutboundEvent);
  const events: OutboundEvent[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
    const m = await bus.jsm.streams.getMessage(stream, { seq }).catch(() => undefined);
    if (!m || m.subject !== subject) continue;
    const r = parsePayload(v, m.data);
    if (r.ok) events.push(r.value);
  }
  return events;
}
