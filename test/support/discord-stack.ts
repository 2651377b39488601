import { startRunner, type RunningService } from "@mom/agent-runner";
import { Bus } from "@mom/bus";
import { busOptions } from "@mom/bus";
import { createLogger, loadConfig, type LoadedConfig } from "@mom/config";
import { ChannelMessage, ControlMessage, parsePayload, validator } from "@mom/contracts";
import { discordIngress, type DiscordSettings } from "@mom/ingress-discord";
import { adapterSettings, type RunningIngress, startIngress } from "@mom/ingress-sdk";
import { type FakeDiscord, type FakeDiscordChannel, type FakeDiscordOptions, type FakeDiscordUser, type FakeLlm, startFakeDiscord, startFakeLlm, startTestNats, type TestNats } from "@mom/testing";
import { rmSync } from "node:fs";
import { writeTestDataDir } from "./data-dir.js";

export const ADAPTER = "discord";

// Fixed ids, so config.json (admins, dm) can name people before the fake Discord exists.
export const IDS = {
  ana: "900000000000000001",
  bob: "900000000000000002",
  carol: "900000000000000003",
  general: "900000000000000010",
  random: "900000000000000011",
};

export interface DiscordStack {
  dataDir: string;
  loaded: LoadedConfig;
  nats: TestNats;
  llm: FakeLlm;
  discord: FakeDiscord;
  /** A bus connection for the test itself. */
  bus: Bus;
  runner: RunningService;
  ingress: RunningIngress;
  users: { ana: FakeDiscordUser; bob: FakeDiscordUser; carol: FakeDiscordUser };
  general: FakeDiscordChannel;
  /** `<@bot id>`, to write mentions. */
  mention: string;
  /** Restarts the ingress (e.g. after changing options). */
  restartIngress(over?: Partial<DiscordSettings>): Promise<void>;
  stop(): Promise<void>;
}

export interface DiscordStackOptions {
  /** Merged into the discord adapter entry of config.json (dm, admins, busy). */
  adapter?: object;
  /** Merged over the test config.json (top-level keys). */
  config?: object;
  fake?: FakeDiscordOptions;
  ingress?: Partial<DiscordSettings>;
}

/** Real NATS, the fake LLM, the fake Discord, the runner and the Discord ingress, all on loopback. */
export async function startDiscordStack(opts: DiscordStackOptions = {}): Promise<DiscordStack> {
  const nats = await startTestNats();
  const llm = await startFakeLlm();
  const discord = await startFakeDiscord({ heartbeatIntervalMs: 1000, ...opts.fake });
  const users = {
    ana: discord.addUser("ana", { id: IDS.ana, globalName: "Ana Lopez" }),
    bob: discord.addUser("bob", { id: IDS.bob }),
    carol: discord.addUser("carol", { id: IDS.carol }),
  };
  const general = discord.addTextChannel("general", { id: IDS.general });
  discord.addTextChannel("random", { id: IDS.random });
  const dataDir = writeTestDataDir("mom-e2e-discord-", nats, llm, {
    adapters: { [ADAPTER]: { type: "discord", botToken: "env:MOM_TEST_DISCORD_TOKEN", apiUrl: discord.apiUrl, ...opts.adapter } },
    ...opts.config,
  });
  const loaded = loadConfig(dataDir, { MOM_TEST_DISCORD_TOKEN: discord.token }, { adapters: [ADAPTER] });
  const logger = createLogger("e2e-discord", { level: "warn" });
  const bus = await Bus.connect(busOptions(loaded, nats.url, "e2e-test", logger));
  await bus.provision();
  const runner = await startRunner({ loaded, bus: busOptions(loaded, nats.url, "agent-runner", logger), logger });
  const adapter = adapterSettings(discordIngress, loaded, ADAPTER);
  const start = (over?: Partial<DiscordSettings>) =>
    startIngress(discordIngress, {
      adapter: { ...adapter, settings: { ...adapter.settings, ...opts.ingress, ...over } },
      bus: busOptions(loaded, nats.url, `ingress-${ADAPTER}`, logger),
      logger,
      editIntervalMs: 50,
      typingIntervalMs: 300,
    });
  const ingress = await start();
  const stack: DiscordStack = {
    dataDir,
    loaded,
    nats,
    llm,
    discord,
    bus,
    runner,
    ingress,
    users,
    general,
    mention: `<@${discord.bot.id}>`,
    async restartIngress(over) {
      await stack.ingress.close();
      stack.ingress = await start(over);
    },
    async stop() {
      await stack.ingress?.close();
      await stack.runner?.close();
      await bus.drain();
      await discord.close();
      await llm.close();
      await nats.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return stack;
}

async function streamPayloads<T>(bus: Bus, key: "IN" | "CTL", subject: string, parse: (data: Uint8Array) => T | undefined): Promise<T[]> {
  const stream = key;
  const info = await bus.streamInfo(stream);
  if (!info) throw new Error(`stream ${stream} does not exist`);
  const out: T[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
    const m = await bus.storedMessage(stream, seq).catch(() => undefined);
    if (!m || m.subject !== subject) continue;
    const v = parse(m.data);
    if (v !== undefined) out.push(v);
  }
  return out;
}

/** Every ChannelMessage published for a Discord channel, in stream order. */
export function inboundMessages(bus: Bus, channelId: string): Promise<ChannelMessage[]> {
  const v = validator(ChannelMessage);
  return streamPayloads(bus, "IN", bus.subjects.channel("in", { adapter: ADAPTER, channelId }), (d) => {
    const r = parsePayload(v, d);
    return r.ok ? r.value : undefined;
  });
}

/** The Nats-Msg-Id of every message on a Discord channel's inbound subject, in stream order. */
export async function inboundMsgIds(bus: Bus, channelId: string): Promise<string[]> {
  const stream = "IN" as const;
  const subject = bus.subjects.channel("in", { adapter: ADAPTER, channelId });
  const info = await bus.streamInfo(stream);
  if (!info) throw new Error(`stream ${stream} does not exist`);
  const out: string[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
    const m = await bus.storedMessage(stream, seq).catch(() => undefined);
    if (m?.subject === subject) out.push(m.headers["Nats-Msg-Id"] ?? "");
  }
  return out;
}

/** Every ControlMessage published for a Discord channel. */
export function controlMessages(bus: Bus, channelId: string): Promise<ControlMessage[]> {
  const v = validator(ControlMessage);
  return streamPayloads(bus, "CTL", bus.subjects.channel("ctl", { adapter: ADAPTER, channelId }), (d) => {
    const r = parsePayload(v, d);
    return r.ok ? r.value : undefined;
  });
}

// The same wait the ingress kit's conformance suite uses.
export { eventually } from "@mom/ingress-sdk/testing";
