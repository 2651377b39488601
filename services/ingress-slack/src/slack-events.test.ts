import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import type { PlatformContext, PlatformMessage } from "@mom/ingress-sdk";
import type { WebClient } from "@slack/web-api";
import { createServer, type Server } from "node:http";
import { pino } from "pino";
import { SlackDirectory } from "./slack-directory.js";
import { SlackEvents } from "./slack-events.js";
import type { SlackMessageEvent } from "./slack-inbound.js";
import type { SlackSettings } from "./slack-options.js";

const BOT_TOKEN = "xoxb-test";
const log = pino({ level: "silent" });
const self = { userId: "U0MOM", botId: "B0MOM" };

// Files as Slack serves them: only to the bot token.
let server: Server;
let base = "";
beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.headers.authorization !== `Bearer ${BOT_TOKEN}`) return void res.writeHead(403).end();
    res.writeHead(200, { "content-type": "application/pdf" }).end(`bytes of ${req.url}`);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

/** A fake Web API client: users by id (others: user_not_found), files.info by id; records the calls. */
function fakeClient(o: { users?: Record<string, { name: string; is_bot?: boolean }>; files?: Record<string, object> } = {}) {
  const calls: string[] = [];
  const platformError = (error: string) => Object.assign(new Error(`An API error occurred: ${error}`), { code: "slack_webapi_platform_error", data: { ok: false, error } });
  const client = {
    users: {
      info: async ({ user }: { user: string }) => {
        calls.push(`users.info ${user}`);
        const u = o.users?.[user];
        if (!u) throw platformError("user_not_found");
        return { ok: true, user: { id: user, ...u } };
      },
    },
    files: {
      info: async ({ file }: { file: string }) => {
        calls.push(`files.info ${file}`);
        const f = o.files?.[file];
        if (!f) throw platformError("file_not_found");
        return { ok: true, file: f };
      },
    },
    chat: { postMessage: async () => ({ ok: true, ts: "9.9" }) },
  };
  return { client: client as unknown as WebClient, calls };
}

/** The SlackEvents of a fake context (knowing mom's own name): what it hands the shell for one event. */
async function converted(ev: SlackMessageEvent, client: WebClient): Promise<PlatformMessage | undefined> {
  let out: Promise<PlatformMessage | undefined> | undefined;
  const ctx = {
    adapter: "slack",
    settings: { botToken: BOT_TOKEN, appToken: "xapp-test" },
    log,
    inbound: {
      receiveInTurn: async (_chat: string, _id: string, convert: () => Promise<PlatformMessage | undefined>) => {
        out = convert();
        await out;
        return true;
      },
    },
  } as unknown as PlatformContext<SlackSettings>;
  const directory = new SlackDirectory(client, log);
  directory.users.learn({ id: self.userId, username: "mom", isBot: true }); // as users.list on start would
  new SlackEvents(ctx, client, directory, self).event(ev);
  return out;
}

describe("SlackEvents", () => {
  const people = { U0ALICE: { name: "alice", profile: { display_name: "Alice" } }, U0MOM: { name: "mom", is_bot: true }, U0OTHER: { name: "otherbot", is_bot: true } };

  it("a channel mention: id = ts, text with @names, rawText as sent, no replyTo at top level", async () => {
    const { client } = fakeClient({ users: people });
    const { files, refuse, ...m } = (await converted({ type: "app_mention", channel: "C1", ts: "1732184400.000100", user: "U0ALICE", text: "<@U0MOM> hi &amp; bye" }, client))!;
    expect(m).toEqual({
      id: "1732184400.000100",
      channelId: "C1",
      timestamp: "2024-11-21T10:20:00.000Z",
      sender: { id: "U0ALICE", username: "alice", displayName: "Alice", isBot: false },
      text: "@mom hi & bye",
      rawText: "<@U0MOM> hi &amp; bye",
      isMention: true,
      isDirect: false,
    });
    expect(files).toEqual([]);
    expect(refuse).toBeDefined();
  });

  it("thread replies answer in their thread; plain messages and other bots do not trigger", async () => {
    const { client } = fakeClient({ users: people });
    const said = (ev: Partial<SlackMessageEvent>) => converted({ type: "message", channel: "C1", channel_type: "channel", user: "U0ALICE", ...ev } as SlackMessageEvent, client);
    expect(await said({ ts: "2.000002", thread_ts: "1.000001", text: "no mention" })).toMatchObject({ replyTo: "1.000001", isMention: false });
    expect((await said({ ts: "1.000001", thread_ts: "1.000001", text: "<@U0MOM>" }))!.replyTo).toBeUndefined();
    expect((await said({ ts: "3.0", user: "U0OTHER", text: "<@U0MOM|mom> loop?" }))!.isMention).toBe(false);
    expect(await said({ channel: "D1", channel_type: "im", ts: "4.0", text: "hello" })).toMatchObject({ isMention: true, isDirect: true });
    expect(await said({ channel: "D1", channel_type: undefined, ts: "5.0", text: "from the history" })).toMatchObject({ isMention: true, isDirect: true });
  });

  it("a file shared from another organization in a Slack Connect channel (a stub to check with files.info) is described and downloaded", async () => {
    const { client, calls } = fakeClient({
      users: { U0ANA: { name: "ana" } },
      files: { F0EXT: { id: "F0EXT", name: "q3-report.pdf", title: "Q3 report", mimetype: "application/pdf", size: 20, mode: "hosted", url_private: `${base}/files-pri/T0OTHER-F0EXT/q3-report.pdf`, url_private_download: `${base}/files-pri/T0OTHER-F0EXT/download/q3-report.pdf` } },
    });
    const stub = { id: "F0EXT", mode: "file_access", file_access: "check_file_info", created: 0, timestamp: 0, user: "" };
    const m = await converted({ type: "message", subtype: "file_share", channel: "C0SHARED", channel_type: "channel", ts: "1732184400.000100", user: "U0ANA", text: "<@U0MOM> summarize this", files: [stub] }, client);
    expect(calls).toContain("files.info F0EXT");
    expect(m!.files).toHaveLength(1);
    const f = m!.files![0]!;
    expect(f).toMatchObject({ filename: "q3-report.pdf", size: 20, mimeType: "application/pdf" });
    const got = await f.download(1024);
    expect(Buffer.from(got.bytes).toString()).toBe("bytes of /files-pri/T0OTHER-F0EXT/download/q3-report.pdf");
  });

  it("a Slack Connect file Slack will not describe is listed with why it cannot be had, and the message still goes", async () => {
    const { client } = fakeClient({ users: { U0ANA: { name: "ana" } } });
    const stub = { id: "F0GONE", mode: "file_access", file_access: "check_file_info", created: 0, timestamp: 0, user: "" };
    const m = await converted({ type: "message", subtype: "file_share", channel: "C0SHARED", channel_type: "channel", ts: "1732184400.000200", user: "U0ANA", text: "look", files: [stub] }, client);
    expect(m!.text).toBe("look");
    await expect(m!.files![0]!.download(1024)).rejects.toThrow(/files\.info.*file_not_found/);
  });

  it("an edit is no message: the app_mention Slack sends again when a message mentioning mom is edited is not taken", async () => {
    const { client } = fakeClient({ users: people });
    // Said hours ago in a thread while mom was away (threads are not backfilled), its typo fixed now.
    const edit = { type: "app_mention", channel: "C1", ts: "1732184400.000500", thread_ts: "1732184000.000100", user: "U0ALICE", text: "<@U0MOM> deploy staging please", edited: { user: "U0ALICE", ts: "1732198800.000000" } };
    expect(await converted(edit, client)).toBeUndefined();
  });

  it("a bot's message never starts a run, also when its user cannot be looked up (another organization's bot) or is not flagged a bot", async () => {
    const { client } = fakeClient({ users: { U0HELPER: { name: "helper" } } });
    const otherOrg = await converted({ type: "message", channel: "C0SHARED", channel_type: "channel", ts: "1732184400.000300", user: "U0EXTBOT", bot_id: "B0EXT", text: "<@U0MOM> ping" }, client);
    expect(otherOrg).toMatchObject({ sender: { id: "U0EXTBOT", isBot: true }, isMention: false });
    const app = await converted({ type: "message", channel: "D0HELPER", channel_type: "im", ts: "1732184400.000400", user: "U0HELPER", bot_id: "B0HELPER", text: "report ready" }, client);
    expect(app).toMatchObject({ sender: { id: "U0HELPER", username: "helper", isBot: true }, isMention: false, isDirect: true });
  });
});
