import {
  AckPolicy,
  type ConsumerConfig,
  type ConsumerInfo,
  DeliverPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamManager,
} from "@nats-io/jetstream";
import { nanos } from "@nats-io/nats-core";
import type { Logger } from "pino";

export interface DurableSpec {
  stream: string;
  durable: string;
  filterSubject: string;
  deliver: "all" | "new" | { startTime: Date };
  ackWaitMs: number;
  maxDeliver: number;
  /** When re-creating a vanished durable: resume at this stream sequence instead of `deliver`. */
  startSeq?: number;
}

function notFound(err: unknown): boolean {
  return err instanceof JetStreamApiError && err.code === JetStreamApiCodes.ConsumerNotFound;
}

/**
 * Creates the durable pull consumer, or updates ack wait / max deliver / filter on an existing one.
 * The deliver policy only applies at creation (JetStream cannot change it later).
 */
export async function ensureDurable(jsm: JetStreamManager, spec: DurableSpec, logger: Logger): Promise<ConsumerInfo> {
  const want = {
    ack_wait: nanos(spec.ackWaitMs),
    max_deliver: spec.maxDeliver,
    filter_subject: spec.filterSubject,
  };
  const log = { filterSubject: spec.filterSubject }; // the logger already carries stream + durable
  let info: ConsumerInfo | undefined;
  try {
    info = await jsm.consumers.info(spec.stream, spec.durable);
  } catch (err) {
    if (!notFound(err)) throw err;
  }
  let startSeq = spec.startSeq;
  const restartAt = info && (await restartIfAhead(jsm, spec, info, logger));
  if (restartAt !== undefined) {
    info = undefined;
    startSeq = restartAt;
  }
  if (!info) {
    const cfg: Partial<ConsumerConfig> = { ...want, durable_name: spec.durable, ack_policy: AckPolicy.Explicit, ...startOf(spec.deliver, startSeq) };
    try {
      info = await jsm.consumers.add(spec.stream, cfg);
      logger.info({ ...log, deliver: cfg.deliver_policy, startSeq }, "durable consumer created");
      return info;
    } catch (err) {
      // Raced with another replica creating the same durable: use theirs (updated below).
      if (!(err instanceof JetStreamApiError)) throw err;
      info = await jsm.consumers.info(spec.stream, spec.durable).catch(() => {
        throw err;
      });
    }
  }
  const have = info.config;
  if (have.deliver_subject) {
    throw new Error(`consumer ${spec.durable} on ${spec.stream} is a push consumer; the bus needs a pull consumer (delete it)`);
  }
  if (have.ack_policy !== AckPolicy.Explicit) {
    throw new Error(`consumer ${spec.durable} on ${spec.stream} has ack policy ${have.ack_policy}; the bus needs explicit (delete it)`);
  }
  const changed = (Object.keys(want) as (keyof typeof want)[]).filter((k) => have[k] !== want[k]);
  if (changed.length === 0) return info;
  try {
    info = await jsm.consumers.update(spec.stream, spec.durable, want);
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new Error(
      `cannot update consumer ${spec.durable} on ${spec.stream} (${changed.join(", ")}): ${reason}` +
        (changed.includes("filter_subject") ? ` — changing filter ${have.filter_subject} -> ${spec.filterSubject} may need a newer server; delete the durable` : ""),
      { cause: err },
    );
  }
  logger.info({ ...log, changed }, "durable consumer updated");
  return info;
}

/** Where a new durable starts: resuming at a sequence wins over the declared start. */
function startOf(deliver: DurableSpec["deliver"], startSeq: number | undefined): Pick<ConsumerConfig, "deliver_policy" | "opt_start_seq" | "opt_start_time"> {
  if (startSeq !== undefined) return { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: startSeq };
  if (deliver === "all") return { deliver_policy: DeliverPolicy.All };
  if (deliver === "new") return { deliver_policy: DeliverPolicy.New };
  return { deliver_policy: DeliverPolicy.StartTime, opt_start_time: deliver.startTime.toISOString() };
}

/**
 * A durable that has delivered past the end of its stream waits for sequences the stream will
 * only reach much later: the service would hear nothing. That happens when the stream's store
 * lost messages its consumers had seen (two nats-servers on one store, a restored backup). Says
 * so, deletes the durable and returns the sequence to create it again at (the stream's next
 * message): messages from now on are delivered; those the store lost cannot be.
 */
async function restartIfAhead(jsm: JetStreamManager, spec: DurableSpec, info: ConsumerInfo, logger: Logger): Promise<number | undefined> {
  const lastSeq = (await jsm.streams.info(spec.stream)).state.last_seq;
  const delivered = info.delivered.stream_seq;
  if (delivered <= lastSeq) return undefined;
  logger.warn(
    { delivered, lastSeq },
    `consumer ${spec.durable} is ahead of stream ${spec.stream} (delivered up to #${delivered}, the stream ends at #${lastSeq}): the stream's store lost messages (two NATS servers on one store?); recreating the consumer to read from #${lastSeq + 1}`,
  );
  try {
    await jsm.consumers.delete(spec.stream, spec.durable);
  } catch (err) {
    if (!notFound(err)) throw err;
  }
  return lastSeq + 1;
}
