import { Bus, type Watching, watchNew } from "@mom/bus";
import { type ChannelSubjectKind, type StreamKey } from "@mom/contracts";
import { createLogger, type LoadedConfig, loadConfig, redactNatsUrl } from "@mom/config";
import { assertAdapterName, escapeChannelToken } from "@mom/contracts";
import { entryJson, formatEntry, toEntry } from "./bus-view.js";
import { channelArg } from "./channel-arg.js";
import { CommandError } from "./command-error.js";
import { explicitNatsUrl, runningUpNats } from "./nats-target.js";

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
    const missing = await Promise.all(keys.map(async (k) => (await bus.streamInfo(k)) === undefined));
    if (!missing.includes(true)) return;
    if (!said) onWait();
    said = true;
    await new Promise((r) => setTimeout(r, 1000));
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A tail's subscriptions on one connection. */
async function openTail(url: string, loaded: LoadedConfig, target: string | undefined, o: { json?: boolean }, print: (line: string) => void): Promise<{ bus: Bus; close: () => Promise<void> }> {
  const { tokens, matches } = targetTokens(target);
  const bus = await Bus.connect({ url, name: "mom-tail", namespace: loaded.config.nats.namespace, logger: createLogger("mom-tail", { level: "silent" }) });
  const s = bus.subjects;
  const show = (line: string | undefined) => line !== undefined && print(line);
  const watchers: Watching[] = [];
  const close = async () => {
    for (const w of watchers) await w.stop().catch(() => {});
    // A server that is gone cannot be drained: do not wait for it.
    await Promise.race([bus.drain().catch(() => {}), sleep(1000)]);
  };
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
    await close();
    throw err;
  }
  if (!o.json) print(`tailing ${target ?? "every channel"} on ${s.namespace} (in, out, ctl, receipts, dead letters); Ctrl-C stops`);
  return { bus, close };
}

/** Waits until a `mom up` runs on the data dir; says so once. A tail never starts a NATS of its own. */
async function untilUpRuns(loaded: LoadedConfig, say: (line: string) => void): Promise<string> {
  let said = false;
  for (;;) {
    const url = await runningUpNats(loaded);
    if (url) return url;
    if (!said) say(`waiting for \`mom up\` on ${loaded.paths.dataDir} to start (mom tail follows its NATS; it starts none of its own)…`);
    said = true;
    await sleep(500);
  }
}

/**
 * `mom tail [adapter[/channel]]`: everything stored on the bus from now on, one readable line per
 * message (or JSON lines), until Ctrl-C. Ordered consumers only: the live services' durable
 * consumers are never touched. It never locks the data dir: with no NATS named, it follows the
 * `mom up` of the data dir — waiting for one to start, saying "disconnected" when it quits, and
 * following the next one.
 */
export async function tailCommand(target: string | undefined, o: { json?: boolean; data: string }, print: (line: string) => void): Promise<never> {
  targetTokens(target); // a bad target is an error before anything waits
  const loaded = loadConfig(o.data);
  const named = explicitNatsUrl(loaded);
  // Status lines are for people: with --json they go to stderr, and stdout stays JSON lines.
  const say = (line: string) => (o.json ? void process.stderr.write(`mom tail: ${line}\n`) : print(line));
  let current: { close: () => Promise<void> } | undefined;
  const stop = async () => {
    await current?.close();
    process.exit(0);
  };
  process.once("SIGINT", () => void stop());
  process.once("SIGTERM", () => void stop());
  for (;;) {
    const url = named ?? (await untilUpRuns(loaded, say));
    let tail: Awaited<ReturnType<typeof openTail>>;
    try {
      tail = await openTail(url, loaded, target, o, print);
    } catch (err) {
      // The `mom up` quit while the tail was connecting: wait for the next one.
      if (!named && !(await runningUpNats(loaded))) continue;
      throw err;
    }
    current = tail;
    let down = false;
    for (;;) {
      await sleep(500);
      const problem = tail.bus.readinessProblem();
      if (!named && !(await runningUpNats(loaded))) {
        say(`disconnected: \`mom up\` on ${loaded.paths.dataDir} quit (its NATS ${redactNatsUrl(url)} is gone)`);
        break;
      }
      if (problem && /disconnected|closed/i.test(problem) && !down) {
        down = true;
        say(`disconnected from NATS at ${redactNatsUrl(url)}; reconnecting…`);
      } else if (!problem && down) {
        down = false;
        say(`reconnected to NATS at ${redactNatsUrl(url)}`);
      }
    }
    current = undefined;
    await tail.close();
  }
}
