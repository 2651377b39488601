import type { Bus } from "@mom/bus";
import { ControlMessage, DeadLetter, OutboundEvent, parsePayload, Receipt, validator } from "@mom/contracts";

/** Every valid outbound event of a channel so far, read back from the OUT stream in order. */
export async function outboundEvents(bus: Bus, ref = { adapter: "cli", channelId: "local" }): Promise<OutboundEvent[]> {
  const stream = "OUT" as const;
  const subject = bus.subjects.channel("out", ref);
  const info = await bus.streamInfo(stream);
  if (!info) throw new Error(`stream ${stream} does not exist`);
  const v = validator(OutboundEvent);
  const events: OutboundEvent[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
    const m = await bus.storedMessage(stream, seq).catch(() => undefined);
    if (!m || m.subject !== subject) continue;
    const r = parsePayload(v, m.data);
    if (r.ok) events.push(r.value);
  }
  return events;
}

/** Every valid ControlMessage of a channel so far, in stream order. */
export async function controlMessagesOf(bus: Bus, ref: { adapter: string; channelId: string }): Promise<ControlMessage[]> {
  const stream = "CTL" as const;
  const subject = bus.subjects.channel("ctl", ref);
  const info = await bus.streamInfo(stream);
  if (!info) throw new Error(`stream ${stream} does not exist`);
  const v = validator(ControlMessage);
  const out: ControlMessage[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
    const m = await bus.storedMessage(stream, seq).catch(() => undefined);
    const r = m?.subject === subject ? parsePayload(v, m.data) : undefined;
    if (r?.ok) out.push(r.value);
  }
  return out;
}

/** Every dead letter so far (any stage), in stream order. */
export async function deadLetters(bus: Bus): Promise<DeadLetter[]> {
  const stream = "DLQ" as const;
  const info = await bus.streamInfo(stream);
  if (!info) throw new Error(`stream ${stream} does not exist`);
  const v = validator(DeadLetter);
  const out: DeadLetter[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
    const m = await bus.storedMessage(stream, seq).catch(() => undefined);
    const r = m ? parsePayload(v, m.data) : undefined;
    if (r?.ok) out.push(r.value);
  }
  return out;
}

/** Every valid Receipt of a channel on the bus so far (the runner's tool receipts and the ingress's delivery receipts), in stream order. */
export async function receiptsOf(bus: Bus, ref: { adapter: string; channelId: string }): Promise<Receipt[]> {
  const stream = "RECEIPTS" as const;
  const subject = bus.subjects.channel("receipts", ref);
  const info = await bus.streamInfo(stream);
  if (!info) throw new Error(`stream ${stream} does not exist`);
  const v = validator(Receipt);
  const out: Receipt[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
    const m = await bus.storedMessage(stream, seq).catch(() => undefined);
    const r = m?.subject === subject ? parsePayload(v, m.data) : undefined;
    if (r?.ok) out.push(r.value);
  }
  return out;
}
