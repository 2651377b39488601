import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { WebSocket } from "ws";
import { DiscordIntent, type FakeDiscord, GatewayOp, startFakeDiscord } from "./fake-discord.js";

// The fake's own protocol, spoken by hand (discord.js drives it in services/ingress-discord's
// end-to-end tests): what a client sees when it gets things wrong.

interface Frame {
  op: number;
  d: any;
  s: number | null;
  t: string | null;
}

function connect(url: string) {
  const ws = new WebSocket(`${url}?v=10&encoding=json`);
  const frames: Frame[] = [];
  let closed: number | undefined;
  const waiters: Array<() => void> = [];
  ws.on("message", (raw) => {
    frames.push(JSON.parse(raw.toString()));
    waiters.splice(0).forEach((w) => w());
  });
  ws.on("close", (code) => {
    closed = code;
    waiters.splice(0).forEach((w) => w());
  });
  const until = async <T>(f: () => T | undefined): Promise<T> => {
    for (;;) {
      const v = f();
      if (v !== undefined) return v;
      await new Promise<void>((r) => waiters.push(r));
    }
  };
  return {
    ws,
    frames,
    send: (p: object) => ws.send(JSON.stringify(p)),
    frame: (pred: (f: Frame) => boolean) => until(() => frames.find(pred)),
    until,
    closedWith: () => until(() => closed),
  };
}

describe("fake Discord protocol", () => {
  let d: FakeDiscord;
  let gatewayUrl: string;
  const api = (path: string, init: RequestInit = {}, token = d.token) =>
    fetch(`${d.apiUrl}/v10${path}`, { ...init, headers: { authorization: `Bot ${token}`, "content-type": "application/json", ...init.headers } });

  beforeAll(async () => {
    d = await startFakeDiscord({ heartbeatIntervalMs: 50_000 });
    gatewayUrl = ((await (await api("/gateway/bot")).json()) as { url: string }).url;
  });
  afterAll(async () => {
    await d.close();
  });

  it("REST: 401 without the bot token; Discord's error bodies for empty, too long and unknown", async () => {
    expect((await api("/users/@me", {}, "wrong")).status).toBe(401);
    const ch = d.addTextChannel("t");
    const post = (body: object) => api(`/channels/${ch.id}/messages`, { method: "POST", body: JSON.stringify(body) });
    expect(await (await post({ content: "" })).json()).toMatchObject({ code: 50006 });
    const long = await post({ content: "x".repeat(2001) });
    expect(long.status).toBe(400);
    expect(await long.json()).toMatchObject({ code: 50035, errors: { content: { _errors: [{ code: "BASE_TYPE_MAX_LENGTH" }] } } });
    expect(await (await post({ embeds: Array.from({ length: 11 }, () => ({ title: "x" })) })).json()).toMatchObject({ code: 50035 });
    expect((await api("/channels/1/messages", { method: "POST", body: "{}" })).status).toBe(404);
    const ok = (await (await post({ content: "hi" })).json()) as { id: string };
    expect(d.message(ok.id)).toMatchObject({ content: "hi", author: { id: d.bot.id } });
    d.rateLimit({ method: "POST", count: 1, retryAfterSeconds: 0.5 });
    const limited = await post({ content: "again" });
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toBe("0.5");
    expect(await limited.json()).toMatchObject({ retry_after: 0.5, global: false });
  });

  it("gateway: a wrong token closes with 4004; RESUME of an unknown session gets INVALID_SESSION", async () => {
    const a = connect(gatewayUrl);
    await a.frame((f) => f.op === GatewayOp.Hello);
    a.send({ op: GatewayOp.Identify, d: { token: "wrong", intents: 0, properties: {} } });
    expect(await a.closedWith()).toBe(4004);

    const b = connect(gatewayUrl);
    await b.frame((f) => f.op === GatewayOp.Hello);
    b.send({ op: GatewayOp.Resume, d: { token: d.token, session_id: "nope", seq: 3 } });
    expect(await b.frame((f) => f.op === GatewayOp.InvalidSession)).toMatchObject({ d: false });
    b.ws.close();
  });

  it("gateway: intents decide what is dispatched; without MESSAGE_CONTENT guild text is blank unless it mentions the bot", async () => {
    const ana = d.addUser("ana");
    const ch = d.addTextChannel("intents");
    const c = connect(gatewayUrl);
    await c.frame((f) => f.op === GatewayOp.Hello);
    c.send({ op: GatewayOp.Identify, d: { token: d.token, intents: DiscordIntent.Guilds | DiscordIntent.GuildMessages, properties: {} } });
    const ready = await c.frame((f) => f.t === "READY");
    expect(ready.d).toMatchObject({ user: { id: d.bot.id, bot: true }, guilds: [{ id: d.guildId, unavailable: true }], resume_gateway_url: expect.stringMatching(/^ws:\/\/127\.0\.0\.1:\d+\/gateway-resume$/) });
    await c.frame((f) => f.t === "GUILD_CREATE");
    c.send({ op: GatewayOp.Heartbeat, d: ready.s });
    await c.frame((f) => f.op === GatewayOp.HeartbeatAck);

    d.say({ channelId: ch.id, author: ana, content: "secret" });
    d.say({ channelId: ch.id, author: ana, content: `<@${d.bot.id}> visible` });
    d.say({ channelId: d.dmChannel(ana).id, author: ana, content: "a DM" });
    const msgs = await c.until(() => {
      const m = c.frames.filter((f) => f.t === "MESSAGE_CREATE");
      return m.length >= 2 ? m : undefined;
    });
    expect(msgs.map((m) => m.d.content)).toEqual(["", `<@${d.bot.id}> visible`]);
    expect(msgs[1]!.d).toMatchObject({ channel_type: 0, guild_id: d.guildId, mentions: [{ id: d.bot.id }] });
    await new Promise((r) => setTimeout(r, 50));
    expect(c.frames.filter((f) => f.t === "MESSAGE_CREATE")).toHaveLength(2); // no DM without DIRECT_MESSAGES
    c.ws.close();
  });
});
