import { randomUUID } from "node:crypto";
import { ApprovalCodes, type IngressDefinition, type PlatformContext, plainDialect } from "@mom/ingress-sdk";
import { Client, type MessageEvent } from "irc-framework";
import { chatOf, type IrcView, parseDecision, senderId, toPlatformMessage } from "./irc-inbound.js";
import { IrcSettings } from "./irc-settings.js";
import { IrcSurface } from "./irc-surface.js";

const JOIN_TIMEOUT_MS = 15_000;
const CONNECT_TIMEOUT_MS = 30_000;

/**
 * One IRC nick on one server: the lines of its channels and private messages become messages
 * of `<adapter>/<#channel or nick>`, runs are answered in lines (README.md). Everything else —
 * once and in order, the DM policy, publishing, approvals, the run view, health, shutdown — is
 * the SDK's shell.
 */
export const ircIngress: IngressDefinition<typeof IrcSettings> = {
  platform: "irc",
  settings: IrcSettings,
  async connect(ctx) {
    const { settings: s, log, adapter } = ctx;
    const tls = s.tls ?? true;
    const where = `${s.host}:${s.port ?? (tls ? 6697 : 6667)}`;
    const client = new Client();
    // Derived from a key, so a code given before a restart still decides; said in the chat, they need no secret one.
    const surface = new IrcSurface(client, plainDialect(s.lineBytes ?? 400), new ApprovalCodes("the approval prompt", { key: `${adapter}\n${s.host}\n${s.nick}` }));
    const view: IrcView = { get nick() { return client.user.nick; }, identity: s.identity ?? "nick", lower: (t) => client.caseLower(t) };
    let down: string | undefined = `not connected to ${where} yet`;
    let stopping = false;
    let registered = false;
    let retryMs = 0;

    client.on("registered", () => ((down = undefined), (registered = true), (retryMs = 0), log.info({ server: where, nick: client.user.nick }, "irc registered")));
    // A lost connection is made again, backing off to a minute, for as long as it takes (irc-framework's
    // own reconnects give up, and take a connection lost within 5 s of registering for a ban).
    client.on("close", () => {
      if (stopping || !registered) return;
      down ??= `disconnected from ${where} since ${new Date().toISOString()}`;
      retryMs = Math.min(60_000, retryMs * 2 || 1000);
      log.warn({ server: where, waitMs: retryMs }, "irc connection lost; reconnecting");
      setTimeout(() => stopping || client.connect(), retryMs).unref();
    });
    // After a netsplit our old nick may linger a while: take another rather than stay unregistered.
    client.on("nick in use", (e: { nick: string }) => registered && client.changeNick(`${e.nick}_`));

    // Until registered, a close or a refusal fails the start; the listeners go once it is decided.
    await new Promise<void>((resolve, reject) => {
      const on = {
        registered: () => settle(),
        close: () => settle(`could not connect to ${where}`),
        "nick in use": () => settle(`the nick ${s.nick} is in use on ${where}`),
        "irc error": (e: { error: string; reason?: string }) => settle(`${where} refused us: ${e.reason ?? e.error}`),
      };
      const settle = (why?: string) => {
        clearTimeout(timer);
        for (const [event, listener] of Object.entries(on)) client.off(event, listener);
        if (why === undefined) return resolve();
        client.quit();
        reject(new Error(`irc adapter "${adapter}": ${why}`));
      };
      const timer = setTimeout(() => settle(`not registered on ${where} within ${CONNECT_TIMEOUT_MS / 1000} s`), CONNECT_TIMEOUT_MS);
      for (const [event, listener] of Object.entries(on)) client.on(event, listener);
      client.connect({
        host: s.host,
        port: s.port ?? (tls ? 6697 : 6667),
        tls,
        nick: s.nick,
        username: s.nick,
        gecos: "mom",
        ...(s.password && { password: s.password }),
        ...(s.sasl && { account: s.sasl }),
        message_max_length: s.lineBytes ?? 400,
        auto_reconnect: false,
      });
    });

    const join = (channel: string) =>
      new Promise<void>((resolve, reject) => {
        const done = (err?: Error) => (clearTimeout(timer), client.off("join", joined), client.off("irc error", refused), err ? reject(err) : resolve());
        const same = (a: string, b: string) => client.caseLower(a) === client.caseLower(b);
        const joined = (e: { nick: string; channel: string }) => same(e.nick, client.user.nick) && same(e.channel, channel) && done();
        const refused = (e: { error: string; channel?: string; reason?: string }) => e.channel && same(e.channel, channel) && done(new Error(`could not join ${channel}: ${e.reason ?? e.error}`));
        const timer = setTimeout(() => done(new Error(`could not join ${channel} within ${JOIN_TIMEOUT_MS / 1000} s`)), JOIN_TIMEOUT_MS);
        client.on("join", joined);
        client.on("irc error", refused);
        client.join(channel);
      });
    const joinAll = () => Promise.all(s.channels.map(join));

    return {
      surface,
      async start() {
        client.on("privmsg", (e) => onLine(ctx, client, surface, view, e));
        // Back after an outage: ready again once in the channels.
        client.on("registered", () => {
          down = `joining ${s.channels.join(", ")}`;
          joinAll().then(() => (down = undefined), (err: Error) => ((down = err.message), log.warn({ err }, err.message)));
        });
        await joinAll();
        log.info({ channels: s.channels }, "irc channels joined");
      },
      async stop() {
        stopping = true;
        const closed = new Promise((r) => client.once("close", r));
        client.quit("mom is stopping");
        await Promise.race([closed, new Promise((r) => setTimeout(r, 2000).unref())]);
      },
      problem: () => down,
    };
  },
};

/** A line to us or to a channel: an approval answer (why nothing was decided goes back as a NOTICE), else a message for mom. */
function onLine(ctx: PlatformContext<IrcSettings>, client: Client, surface: IrcSurface, view: IrcView, e: MessageEvent): void {
  if (client.caseLower(e.nick) === client.caseLower(client.user.nick)) return;
  const decision = parseDecision(e.message);
  if (decision) {
    // After a restart a code decides the waiting approval of this chat or of a joined channel it was given for.
    const chats = [...new Set([chatOf(e, view), ...ctx.settings.channels.map(view.lower)])];
    const waiting = async () => (await Promise.all(chats.map(async (channel) => (await ctx.inbound.waitingApprovals(channel)).map((approvalId) => ({ approvalId, channel, promptId: approvalId }))))).flat();
    return void surface.codes
      .decide(ctx.inbound, decision, { id: senderId(e, view), username: e.nick }, waiting)
      .then(({ refusal }) => refusal && client.notice(e.nick, refusal))
      .catch((err: Error) => ctx.log.error({ err }, `approval answer failed: ${err.message}`));
  }
  // IRC has no message ids; IRCv3 msgid where the server gives one.
  const m = toPlatformMessage(e, e.tags.msgid ?? randomUUID(), view);
  void ctx.inbound.receive(m).catch(() => {}); // logged by the shell; IRC never sends a line again
}
