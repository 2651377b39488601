import { type BatchLimits, batches } from "@mom/format";
import { clip } from "./dialect.js";

interface DetailMessage<D> {
  id?: string;
  details: D[];
  dirty: boolean;
}

/**
 * A run's details (finished tool calls, retries, the usage line) as messages in a thread under the
 * run's main message, gathered into as few as fit: a new detail joins the last message while it
 * has room, else it starts another. `flush` posts the new messages and edits the grown ones, in
 * order. Text details (`new DetailMessages(limit)`) are joined by blank lines within `limit`
 * characters, a longer one clipped; other details (Discord's embeds) are grouped within the
 * platform's `limits` of one message and written by `join`.
 */
export class DetailMessages<D = string, M = string> {
  private readonly messages: DetailMessage<D>[] = [];
  private readonly limits: BatchLimits<D>;
  private readonly join: (details: D[]) => M;
  private readonly clipTo?: number;

  /** Text details, `limit` characters a message; `wrap` makes the joined text a message (default: the text). */
  constructor(limit: number, wrap?: (text: string) => M);
  constructor(limits: BatchLimits<D>, join: (details: D[]) => M);
  constructor(limit: number | BatchLimits<D>, join?: ((text: string) => M) | ((details: D[]) => M)) {
    if (typeof limit === "number") {
      const wrap = (join ?? ((text: string) => text)) as (text: string) => M;
      this.clipTo = limit;
      // Each detail weighs its length and the blank line before it; the first one has none.
      this.limits = { count: Number.POSITIVE_INFINITY, weight: limit + 2, weigh: (d) => (d as string).length + 2 };
      this.join = (details) => wrap(details.join("\n\n"));
    } else {
      this.limits = limit;
      this.join = join as (details: D[]) => M;
    }
  }

  add(details: D[]): void {
    const fresh = this.clipTo === undefined ? details : details.map((d) => clip(d as string, this.clipTo!) as D);
    // The last message and the new details, grouped again: what the last one held still fits it.
    const last = this.messages.pop();
    for (const [i, group] of batches([...(last?.details ?? []), ...fresh], this.limits).entries()) {
      const kept = i === 0 ? last : undefined;
      this.messages.push({ ...(kept?.id && { id: kept.id }), details: group, dirty: !kept || kept.dirty || group.length > kept.details.length });
    }
  }

  /** `gone`: whether a failed edit means someone deleted the message; it is posted anew then (the details after it would be lost otherwise). */
  async flush(post: (message: M) => Promise<string>, edit: (id: string, message: M) => Promise<void>, gone: (err: unknown) => boolean = () => false): Promise<void> {
    for (const m of this.messages) {
      if (!m.dirty) continue;
      const message = this.join(m.details);
      if (!m.id) m.id = await post(message);
      else {
        try {
          await edit(m.id, message);
        } catch (err) {
          if (!gone(err)) throw err;
          m.id = await post(message);
        }
      }
      m.dirty = false;
    }
  }

  /** The ids of the messages posted so far (a silent run deletes them). */
  ids(): string[] {
    return this.messages.flatMap((m) => (m.id ? [m.id] : []));
  }
}
