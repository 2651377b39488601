import type { Bus } from "@mom/bus";
import { ChannelMessage, parsePayload, validator } from "@mom/contracts";

/** Every ChannelMessage on the IN stream so far (all channels), in stream order, with its subject. */
export async function inboundMessages(bus: Bus): Promise<Array<ChannelMessage & { subject: string }>> {
  const stream = "IN" as const;
  const info = await bus.streamInfo(stream);
  if (!info) throw new Error(`stream ${stream} does not exist`);
  const v = validator(ChannelMessage);
  const out: Array<ChannelMessage & { subject: string }> = [];
  if (info.state.messages === 0) return out;
  for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
    const m = await bus.storedMessage(stream, seq).catch(() => undefined);
    if (!m) continue;
    const r = parsePayload(v, m.data);
    if (r.ok) out.push({ ...r.value, subject: m.subject });
  }
  return out;
}
