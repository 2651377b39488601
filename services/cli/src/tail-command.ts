import { Bus, type Watching, watchNew } from "@mom/bus";
import { type ChannelSubjectKind, type StreamKey } from "@mom/contracts";
import { createLogger, loadConfig } from "@mom/config";
import { assertAdapterName, escapeChannelToken } from "@mom/contracts";
import { entryJson, formatEntry, toEntry } from "./bus-view.js";
import { channelArg } from "./channel-arg.js";
import { CommandError } from "./command-error.js";
import { natsTargetFor } from "./nats-target.js";
import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";

const KINDS: Array<[ChannelSubjectKind, StreamKey]> = [
  ["in", "IN"],
  ["out", "OUT"],
  ["ctl", "CTL"],
  ["receipts", "RECEIPTS"],
];

/** The subject token(s) after `<ns>.<kind>.` that a tail target covers. */
function targetTokens(target: string | undefined): { tokens: string; matches: (subject: string) => boolean } {
  if (!target) return { tokens: ">", matches: () => true };
  if (target.includes("/")) {
    const ref = channelArg(target);
    const tokens = `${ref.adapter}.${escapeChannelToken(ref.channelId)}`;
    return { tokens, matches: (s) => s.endsWith(`.${tokens}`) };
  }
  try {
    assertAdapterName(target);
  } catch (err) {
    throw new CommandError((err as Error).message);
  }
  return { tokens: `${target}.*`, matches: (s) => s.split(".")[2] === target };
}

/** A tail started before any service is fine: it waits for the streams the services create. */
async function untilStreamsExist(bus: Bus, keys: StreamKey[], onWait: () => void): Promise<void> {
  let said = false;
  for (;;) {
    const missing = await Promise.all(keys.map((k) => bus.jsm.streams.info(bus.subjects.stream(k)).then(() => false, (err: unknown) => {
      if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound) return true;
      throw err;
    })));
    if (!missing.includes(true)) return;
    if (!said) onWait();
    said = true;
    await new Promise((r) => setTimeout(r, 1000));
  }
}

/**
 * `mom tail [adapter[/channel]]`: everything stored on the bus from now on, one readable line per
 * message (or JSON lines), until Ctrl-C. Ordered consumers only: the live services' durable
 * consumers are never touched.
 */
export async function tailCommand(target: string | undefined, o: { json?: boolean; data: string }, print: (line: string) => void): Promise<never> {
  const { tokens, matches } = targetTokens(target);
  const loaded = loadConfig(o.data);
  const nats = await natsTargetFor(loaded);
  const bus = await Bus.connect({ url: nats.url, name: "mom-tail", namespace: loaded.config.nats.namespace, logger: createLogger("mom-tail", { level: "silent" }) });
  const s = bus.subjects;
  const show = (line: string | undefined) => line !== undefined && print(line);
  const watchers: Watching[] = [];
  try {
    await untilStreamsExist(bus, [...KINDS.map(([, key]) => key), "DLQ"], () => !o.json && print(`waiting for mom's streams on ${s.namespace} (no mom service has used this NATS yet)…`));
    for (const [kind, key] of KINDS) {
      watchers.push(
        await watchNew(bus, s.stream(key), `${s.namespace}.${kind}.${tokens}`, (m) => {
          const e = toEntry(m, s);
          show(o.json ? entryJson(e) : formatEntry(e, { showChannel: !target?.includes("/") }));
        }),
      );
    }
    // Dead letters name the subject they were rejected from; a tail of one adapter or channel shows its own.
    watchers.push(
      await watchNew(bus, s.stream("DLQ"), s.wildcard("dlq"), (m) => {
        const e = toEntry(m, s);
        if ("data" in e && !matches((e.data as { subject: string }).subject)) return;
        show(o.json ? entryJson(e) : formatEntry(e));
      }),
    );
  } catch (err) {
    await bus.drain().catch(() => {});
    await nats.close();
    throw err;
  }
  if (!o.json) print(`tailing ${target ?? "every channel"} on ${s.namespace} (in, out, ctl, receipts, dead letters); Ctrl-C stops`);
  return new Promise<never>(() => {
    const stop = async () => {
      for (const w of watchers) await w.stop();
      await bus.drain().catch(() => {});
      await nats.close();
      process.exit(0);
    };
    process.once("SIGINT", () => void stop());
    process.once("SIGTERM", () => void stop());
  });
}
