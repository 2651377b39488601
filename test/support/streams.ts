import type { Bus } from "@mom/bus";
import type { TSchema } from "typebox";
import { ControlMessage, DeadLetter, OutboundEvent, parsePayload, Receipt, validator } from "@mom/contracts";

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

/** Every payload of a channel's subject on `stream` so far that is valid by `schema`, in stream order. */
async function channelPayloads<T>(bus: Bus, stream: "CTL" | "RECEIPTS", kind: "ctl" | "receipts", schema: TSchema, ref: { adapter: string; channelId: string }): Promise<T[]> {
  const name = bus.subjects.stream(stream);
  const subject = bus.subjects.channel(kind, ref);
  const info = await bus.jsm.streams.info(name);
  const v = validator(schema);
  const out: T[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
    const m = await bus.jsm.streams.getMessage(name, { seq }).catch(() => undefined);
    const r = m?.subject === subject ? parsePayload(v, m.data) : undefined;
    if (r?.ok) out.push(r.value as T);
  }
  return out;
}

/** Every valid ControlMessage of a channel so far, in stream order. */
export function controlMessagesOf(bus: Bus, ref: { adapter: string; channelId: string }): Promise<ControlMessage[]> {
  return channelPayloads(bus, "CTL", "ctl", ControlMessage, ref);
}


/** Every valid Receipt of a channel on the bus so far (the runner's tool receipts and the ingress's delivery receipts), in stream order. */
export function receiptsOf(bus: Bus, ref: { adapter: string; channelId: string }): Promise<Receipt[]> {
  return channelPayloads(bus, "RECEIPTS", "receipts", Receipt, ref);
}

/** Every dead letter so far (any stage), in stream order. */
export async function deadLetters(bus: Bus): Promise<DeadLetter[]> {
  const stream = bus.subjects.stream("DLQ");
  const info = await bus.jsm.streams.info(stream);
  const v = validator(DeadLetter);
  const out: DeadLetter[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
    const m = await bus.jsm.streams.getMessage(stream, { seq }).catch(() => undefined);
    const r = m ? parsePayload(v, m.data) : undefined;
    if (r?.ok) out.push(r.value);
  }
  return out;
}
