import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type ChatSurface, type IngressDefinition, plainDialect, startIngress, Type } from "@mom/ingress-sdk";
import { eventually, ScriptedMom } from "@mom/ingress-sdk/testing";
import { findNatsServer, freePort } from "@mom/testing";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { type NatsConnection, PermissionViolationError } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import { type ChildProcess, spawn } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import pino from "pino";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");

/** The stanza docs/ingress-sdk.md gives an outside author, for adapter "irc". */
function documentedStanza(): string {
  const doc = readFileSync(join(root, "docs/ingress-sdk.md"), "utf8");
  const section = doc.slice(doc.indexOf("## A NATS user for your adapter"));
  const m = /```conf\n([\s\S]*?)```/.exec(section);
  if (!m) throw new Error("docs/ingress-sdk.md: no ```conf stanza under \"A NATS user for your adapter\"");
  return m[1]!;
}

/** A user's block of auth.conf, from its `{` to the `}` that closes it. */
function userBlock(conf: string, user: string): string {
  const lines = conf.split("\n");
  const at = lines.findIndex((l) => l.trim() === `user: "${user}"`);
  if (at < 1 || lines[at - 1]!.trim() !== "{") throw new Error(`auth.conf has no user ${user}`);
  const indent = lines[at - 1]!.indexOf("{");
  const end = lines.findIndex((l, i) => i > at && l === `${" ".repeat(indent)}}`);
  return lines.slice(at - 1, end + 1).join("\n");
}

/** What a stanza grants: its lines without comments, blank lines or indentation. */
const grants = (block: string) =>
  block
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith("#"));

// The ingress users of deploy/nats/auth.conf, and the stanza docs/ingress-sdk.md tells an outside
// author to add (for irc), each used as an ingress uses it: an ingress on the SDK's shell runs
// a whole exchange as the user without a permission violation, and everything that would let it
// speak or listen for another adapter is refused by the server.
describe("deploy/nats/auth.conf: each ingress's user works for its own adapter and is refused for any other", () => {
  const ADAPTERS = ["cli", "matrix", "email", "irc"] as const;
  const password = (adapter: string) => `pw-${adapter}-${Math.random().toString(36).slice(2)}`;
  const PASSWORDS: Record<string, string> = Object.fromEntries(ADAPTERS.map((a) => [a, password(a)]));
  const RUNNER = password("runner");
  let dir: string;
  let server: ChildProcess;
  let hostPort: string;
  let log = "";
  const conns: NatsConnection[] = [];

  beforeAll(async () => {
    const bin = findNatsServer();
    if (!bin) throw new Error("nats-server not found: install it (apt-get install -y nats-server)");
    dir = mkdtempSync(join(tmpdir(), "mom-ingress-users-"));
    copyFileSync(join(root, "deploy/nats/nats-server.conf"), join(dir, "nats-server.conf"));
    // The documented stanza goes where an author puts it: into the users list, after the last user.
    const conf = readFileSync(join(root, "deploy/nats/auth.conf"), "utf8");
    const withIrc = conf.replace(/\n    \]\n  \}\n\}\s*$/, `\n${documentedStanza()}    ]\n  }\n}\n`);
    expect(withIrc).not.toBe(conf);
    writeFileSync(join(dir, "auth.conf"), withIrc);
    const port = await freePort();
    const httpPort = await freePort();
    writeFileSync(
      join(dir, "test.conf"),
      `include ./nats-server.conf\ninclude ./auth.conf\nhost: 127.0.0.1\nport: ${port}\nhttp_port: ${httpPort}\njetstream { store_dir: "${join(dir, "js")}", max_memory_store: 64MB, max_file_store: 1GB }\n`,
    );
    const env = {
      ...process.env,
      MOM_RUNNER_PASSWORD: RUNNER,
      MOM_SCHEDULER_PASSWORD: password("scheduler"),
      MOM_CONSOLE_PASSWORD: password("console"),
      ...Object.fromEntries(ADAPTERS.map((a) => [`MOM_INGRESS_${a.toUpperCase()}_PASSWORD`, PASSWORDS[a]])),
    };
    server = spawn(bin, ["-c", join(dir, "test.conf")], { env, stdio: ["ignore", "pipe", "pipe"] });
    server.stderr!.on("data", (d: Buffer) => (log += d.toString()));
    server.stdout!.on("data", (d: Buffer) => (log += d.toString()));
    hostPort = `127.0.0.1:${port}`;
    for (let i = 0; !log.includes("Server is ready"); i++) {
      if (server.exitCode !== null || i > 200) throw new Error(`nats-server did not start:\n${log}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  });

  afterAll(async () => {
    for (const nc of conns) await nc.close().catch(() => {});
    server?.kill("SIGKILL");
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("the documented stanza for irc is the ingress-matrix user with the adapter's name in place of matrix", () => {
    const conf = readFileSync(join(root, "deploy/nats/auth.conf"), "utf8");
    const asMatrix = grants(documentedStanza()).map((l) => l.replaceAll("irc", "matrix").replaceAll("IRC", "MATRIX"));
    expect(asMatrix).toEqual(grants(userBlock(conf, "ingress-matrix")));
    // ... and ingress-matrix / ingress-email are ingress-cli's grants for their adapter.
    for (const a of ["matrix", "email"]) {
      expect(grants(userBlock(conf, `ingress-${a}`)).map((l) => l.replaceAll(a, "cli").replaceAll(a.toUpperCase(), "CLI"))).toEqual(grants(userBlock(conf, "ingress-cli")));
    }
  });

  it.each(ADAPTERS)("ingress-%s runs an ingress on the SDK's shell through a whole exchange without a permission violation", async (adapter) => {
    const mom = await ScriptedMom.connect({ natsUrl: `nats://runner:${RUNNER}@${hostPort}`, adapter });
    const shown: { channel: string; text?: string; file?: string; approvalId?: string }[] = [];
    const surface: ChatSurface = {
      dialect: plainDialect(),
      async post(channel, text) {
        shown.push({ channel, text });
        return `p${shown.length}`;
      },
      async upload(channel, file) {
        shown.push({ channel, file: file.filename });
      },
      async prompt(channel, text, approvalId) {
        shown.push({ channel, text, approvalId });
        return `p${shown.length}`;
      },
      async closePrompt() {},
    };
    const platform: IngressDefinition = { platform: "fake", settings: Type.Object({}), connect: () => ({ surface, start: async () => {}, stop: async () => {} }) };
    const lines: string[] = [];
    const logger = pino({ level: "warn" }, { write: (l: string) => void lines.push(l) });
    const ingress = await startIngress(platform, {
      adapter: { adapter, access: { admins: ["u-admin"] }, maxAttachmentBytes: 1 << 20, settings: {} },
      bus: { url: `nats://ingress-${adapter}:${PASSWORDS[adapter]}@${hostPort}`, name: `ingress-${adapter}`, logger },
      logger,
    });
    try {
      const sent = new TextEncoder().encode(`a file from a person on ${adapter}`);
      const took = await ingress.shell.receive({
        id: `e-${adapter}`,
        channelId: "room",
        timestamp: new Date().toISOString(),
        sender: { id: "u-member", username: "member", isBot: false },
        text: `hello from ${adapter}`,
        isMention: true,
        files: [{ filename: "note.txt", size: sent.length, download: async () => ({ bytes: sent }) }],
      });
      expect(took).toBe(true);
      const msg = await mom.message("room", `hello from ${adapter}`);
      expect(msg.attachments[0]?.note).toBeUndefined();
      expect(await mom.bus.getFile(msg.attachments[0]!.objectKey!)).toEqual(sent);

      const run = await mom.startRun("room", msg);
      const approvalId = `a-${adapter}`;
      await run.emit({ type: "approval_requested", approvalId, toolId: "bash", risk: "destructive", argsSummary: "rm -rf scratch", requestedBy: { id: "u-member", username: "member" }, expiresAt: new Date(Date.now() + 60_000).toISOString(), approvers: ["u-admin"] });
      await eventually(() => shown.some((s) => s.approvalId === approvalId), "the approval prompt");
      expect(await ingress.shell.decide({ approvalId, decision: "allow-once", user: { id: "u-admin", username: "admin" } })).toEqual({});
      await eventually(async () => (await mom.decisions("room")).some((d) => d.approvalId === approvalId && d.decision === "allow-once"), "the decision on mom.ctl");
      await run.emit({ type: "approval_resolved", approvalId, outcome: "approved", decidedBy: "admin" });
      await run.emit(await mom.shareFile("room", "back.txt", new TextEncoder().encode("a file from mom")));
      await run.end(`answer on ${adapter}`);
      await eventually(() => shown.some((s) => s.text?.includes(`answer on ${adapter}`)) && shown.some((s) => s.file === "back.txt"), "the answer and the file shown");
      // What it drew of the run is on the bus under its adapter's key, for a process after a crash of this one.
      const own = await connect({ servers: `nats://${hostPort}`, user: `ingress-${adapter}`, pass: PASSWORDS[adapter], reconnect: false });
      conns.push(own);
      const drawn = await new Kvm(jetstream(own)).open("MOM_DRAWN", { allow_direct: true });
      await eventually(async () => ((await drawn.get(`${adapter}.${run.runId}`))?.json<{ answered?: string[] }>().answered?.length ?? 0) > 0, "the run recorded as answered in MOM_DRAWN");
      // A late click on the prompt, which the shell closed, is read back from MOM_OUT as this user may (it ended: no refusal; the runner judges).
      expect(await ingress.shell.decide({ approvalId, decision: "deny", user: { id: "u-stranger", username: "stranger" }, channel: "room" })).toEqual({});
    } finally {
      await ingress.close();
      await mom.close();
    }
    // The delivery receipt is written once the answer is shown; close() waited for it.
    expect(lines.filter((l) => /"level":(40|50|60)/.test(l))).toEqual([]);
    expect(log).not.toMatch(/Violation/);
  }, 60_000);

  it.each(ADAPTERS)("ingress-%s is refused every subject of another adapter, and mom.out", async (adapter) => {
    const nc = await connect({ servers: `nats://${hostPort}`, user: `ingress-${adapter}`, pass: PASSWORDS[adapter], reconnect: false });
    conns.push(nc);
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    const denied = async (p: Promise<unknown>) => {
      let e: unknown = await p.then(
        () => undefined,
        (err: unknown) => err,
      );
      while (e && !(e instanceof PermissionViolationError)) e = (e as { cause?: unknown }).cause;
      return e instanceof PermissionViolationError;
    };
    const body = JSON.stringify({ forged: true });
    const reader = (stream: string, filter: string) => jsm.consumers.add(stream, { name: `peek-${Math.random().toString(36).slice(2, 8)}`, filter_subject: filter, ack_policy: "none" as never, inactive_threshold: 5e9 });

    // Its own adapter: what the shell did above, by hand.
    await js.publish(`mom.in.${adapter}.room`, body, { timeout: 5000 });
    await js.publish(`mom.ctl.${adapter}.room`, body, { timeout: 5000 });
    await js.publish(`mom.receipts.${adapter}.room`, body, { timeout: 5000 });
    await reader("MOM_OUT", `mom.out.${adapter}.>`);
    await reader("MOM_IN", `mom.in.${adapter}.>`);

    const refused: string[] = [];
    const expectRefused = async (what: string, p: Promise<unknown>) => {
      if (!(await denied(p))) refused.push(what);
    };
    const others = [...ADAPTERS.filter((a) => a !== adapter), "slack-acme"];
    await Promise.all(
      others.flatMap((other) => [
        expectRefused(`publish mom.in.${other}`, js.publish(`mom.in.${other}.room`, body, { timeout: 3000 })),
        expectRefused(`decide on mom.ctl.${other}`, js.publish(`mom.ctl.${other}.room`, body, { timeout: 3000 })),
        expectRefused(`publish mom.receipts.${other}`, js.publish(`mom.receipts.${other}.room`, body, { timeout: 3000 })),
        expectRefused(`draw mom.out.${other}`, reader("MOM_OUT", `mom.out.${other}.>`)),
        expectRefused(`read mom.in.${other}`, reader("MOM_IN", `mom.in.${other}.>`)),
      ]),
    );
    // What the ingress drew (MOM_DRAWN): its own adapter's records, read and written; another adapter's neither.
    const drawn = await new Kvm(js).open("MOM_DRAWN", { allow_direct: true });
    await drawn.put(`${adapter}.run-1`, JSON.stringify({ answered: ["m1"] }));
    expect((await drawn.get(`${adapter}.run-1`))?.json()).toEqual({ answered: ["m1"] });
    await Promise.all(
      others.flatMap((other) => [
        expectRefused(`write ${other}'s record in MOM_DRAWN`, drawn.put(`${other}.run-1`, JSON.stringify({ answered: ["forged"] }))),
        expectRefused(`read ${other}'s record in MOM_DRAWN`, drawn.get(`${other}.run-1`)),
      ]),
    );
    await expectRefused("list every adapter's records in MOM_DRAWN", (async () => {
      for await (const _ of await drawn.keys()) break;
    })());
    await expectRefused("read a MOM_DRAWN record by stream sequence", jsm.streams.getMessage("KV_MOM_DRAWN", { seq: 1 }));
    await expectRefused("forge a run on mom.out", js.publish(`mom.out.${adapter}.room`, body, { timeout: 3000 }));
    await expectRefused("read every adapter's inbound", reader("MOM_IN", "mom.in.>"));
    await expectRefused("delete a stream", jsm.streams.delete("MOM_IN"));
    // Each entry is something the server let through.
    expect(refused).toEqual([]);
  }, 60_000);
});
