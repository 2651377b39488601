import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { Bus } from "@mom/bus";
import { findNatsServer, freePort } from "@mom/testing";
import { jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { type NatsConnection, PermissionViolationError } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import { type ChildProcess, spawn } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import pino from "pino";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const PASSWORDS = { MOM_RUNNER_PASSWORD: "runner-pw", MOM_INGRESS_CLI_PASSWORD: "ingress-cli-pw", MOM_SCHEDULER_PASSWORD: "scheduler-pw", MOM_INGRESS_MATRIX_PASSWORD: "matrix-pw", MOM_INGRESS_EMAIL_PASSWORD: "email-pw", MOM_CONSOLE_PASSWORD: "console-pw" };
const forged = JSON.stringify({ type: "approval_decision", ts: new Date().toISOString(), approvalId: "a1", decision: "allow-once", decidedBy: { id: "U-forger" } });

// Control messages (approval decisions, stops) must come from the adapter's own ingress: with the
// shipped deploy/nats/auth.conf the runner's credentials (what a command that escaped the sandbox
// could steal) cannot get a message into MOM_CTL by any route the server offers. Runs against the
// local nats-server (NATS_SERVER_BIN picks another build; the stream-update routes need >= 2.10 to
// work at all, and are refused by permission before the version matters).
describe("deploy/nats/auth.conf: nobody but the ingress of an adapter (and the web console's approvers) puts a control message on its subjects", () => {
  let dir: string;
  let server: ChildProcess;
  let url: string;
  let log = "";
  const conns: NatsConnection[] = [];
  const as = async (user: string, pass: string) => {
    const nc = await connect({ servers: url, user, pass, reconnect: false });
    conns.push(nc);
    return nc;
  };
  // Raw API requests, so the server (not the client's feature checks) judges each one.
  const updateStream = (nc: NatsConnection, cfg: { name: string }) => nc.request(`$JS.API.STREAM.UPDATE.${cfg.name}`, JSON.stringify(cfg), { timeout: 5000 });
  const ctlMessages = async (jsm: JetStreamManager) => (await jsm.streams.info("MOM_CTL")).state.messages;
  const denied = async (p: Promise<unknown>) => {
    const err = await p.then(
      () => undefined,
      (e: unknown) => e,
    );
    let e: unknown = err;
    while (e && !(e instanceof PermissionViolationError)) e = (e as { cause?: unknown }).cause;
    return e instanceof PermissionViolationError;
  };

  beforeAll(async () => {
    const bin = findNatsServer();
    if (!bin) throw new Error("nats-server not found: install it (apt-get install -y nats-server)");
    dir = mkdtempSync(join(tmpdir(), "mom-forge-"));
    for (const f of ["nats-server.conf", "auth.conf"]) copyFileSync(join(root, "deploy/nats", f), join(dir, f));
    const port = await freePort();
    const httpPort = await freePort();
    writeFileSync(
      join(dir, "test.conf"),
      `include ./nats-server.conf\ninclude ./auth.conf\nhost: 127.0.0.1\nport: ${port}\nhttp_port: ${httpPort}\njetstream { store_dir: "${join(dir, "js")}", max_memory_store: 64MB, max_file_store: 1GB }\n`,
    );
    server = spawn(bin, ["-c", join(dir, "test.conf")], { env: { ...process.env, ...PASSWORDS }, stdio: ["ignore", "pipe", "pipe"] });
    server.stderr!.on("data", (d: Buffer) => (log += d.toString()));
    server.stdout!.on("data", (d: Buffer) => (log += d.toString()));
    url = `nats://127.0.0.1:${port}`;
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

  it("refuses the runner's and another adapter's every way in, and lets the adapter's ingress through", async () => {
    // The runner provisions as it does at start (streams, files bucket, its KV bucket) without
    // being allowed to update streams.
    const lines: string[] = [];
    const logger = pino({ level: "info" }, { write: (l: string) => void lines.push(l) });
    const runnerBus = await Bus.connect({ url: `nats://runner:${PASSWORDS.MOM_RUNNER_PASSWORD}@${url.slice("nats://".length)}`, name: "agent-runner", logger });
    await runnerBus.provision();
    await runnerBus.keyValue("MOM_CHANNELS");
    await runnerBus.drain();

    const runner = await as("runner", PASSWORDS.MOM_RUNNER_PASSWORD);
    const rjs = jetstream(runner);
    const rjsm = await jetstreamManager(runner);
    expect(await ctlMessages(rjsm)).toBe(0);

    // 1. publishing on the control subject
    expect(await denied(rjs.publish("mom.ctl.cli.local", forged))).toBe(true);
    // 2. sourcing a key the runner may write into MOM_CTL, renamed onto mom.ctl.cli.local (2.10+)
    await rjs.publish("$KV.MOM_CHANNELS.forge", forged);
    const ctl = (await rjsm.streams.info("MOM_CTL")).config;
    expect(
      await denied(
        updateStream(runner, { ...ctl, sources: [{ name: "KV_MOM_CHANNELS", subject_transforms: [{ src: "$KV.MOM_CHANNELS.forge", dest: "mom.ctl.cli.local" }] }] }),
      ),
    ).toBe(true);
    // 3. republishing what the runner writes to its own streams onto the control subjects
    const out = (await rjsm.streams.info("MOM_OUT")).config;
    expect(await denied(updateStream(runner, { ...out, republish: { src: "mom.out.>", dest: "mom.ctl.>" } }))).toBe(true);
    // 4. "creating" an existing stream with another configuration changes nothing
    await expect(rjsm.streams.add({ ...out, republish: { src: "mom.out.>", dest: "mom.ctl.>" } } as never)).rejects.toThrow(/already in use|different configuration/);
    // Another adapter's ingress: neither publish nor update.
    const ingressCli = await as("ingress-cli", PASSWORDS.MOM_INGRESS_CLI_PASSWORD);
    const ijs = jetstream(ingressCli);
    const ijsm = await jetstreamManager(ingressCli);
    expect(await denied(ijs.publish("mom.ctl.slack-acme.C1", forged))).toBe(true);
    const inCfg = (await ijsm.streams.info("MOM_IN")).config;
    expect(await denied(updateStream(ingressCli, { ...inCfg, republish: { src: "mom.in.*.*", dest: "mom.ctl.slack-acme.{{wildcard(2)}}" } }))).toBe(true);
    const scheduler = await as("scheduler", PASSWORDS.MOM_SCHEDULER_PASSWORD);
    expect(await denied(jetstream(scheduler).publish("mom.ctl.cli.local", forged))).toBe(true);

    // The console may decide approvals on any channel, but not re-route a stream onto the control subjects.
    const consoleUser = await as("console", PASSWORDS.MOM_CONSOLE_PASSWORD);
    expect(await denied(updateStream(consoleUser, { ...out, republish: { src: "mom.out.>", dest: "mom.ctl.>" } }))).toBe(true);
    expect(await denied(jetstream(consoleUser).publish("$KV.MOM_CHANNELS.forge", forged))).toBe(true);

    expect(await ctlMessages(rjsm)).toBe(0);

    // The adapter's own ingress is let through: the only message MOM_CTL holds.
    const genuine = forged.replace("U-forger", "U-approver");
    await ijs.publish("mom.ctl.cli.local", genuine);
    expect(await ctlMessages(rjsm)).toBe(1);
    const c = await rjs.consumers.get("MOM_CTL", { filter_subjects: "mom.ctl.>" });
    const m = await c.next({ expires: 5000 });
    expect(m?.subject).toBe("mom.ctl.cli.local");
    expect(m?.string()).toBe(genuine);
  }, 60_000);

  it("a service whose stream settings changed keeps running with the stream as it is, and says so", async () => {
    const lines: string[] = [];
    const logger = pino({ level: "info" }, { write: (l: string) => void lines.push(l) });
    const bus = await Bus.connect({
      url: `nats://runner:${PASSWORDS.MOM_RUNNER_PASSWORD}@${url.slice("nats://".length)}`,
      name: "agent-runner",
      logger,
      streams: { maxAgeMs: 3 * 24 * 3600_000 },
    });
    await bus.provision();
    await bus.drain();
    const warned = lines.map((l) => JSON.parse(l) as { msg: string; stream?: string; changed?: string[] }).filter((l) => l.msg.startsWith("stream settings differ"));
    expect(warned.map((w) => w.stream).sort()).toEqual(["MOM_CTL", "MOM_DLQ", "MOM_IN", "MOM_OUT", "MOM_RECEIPTS", "OBJ_MOM_FILES"]);
    expect(warned.every((w) => w.changed?.includes("max_age"))).toBe(true);
    expect(readFileSync(join(root, "deploy/nats/auth.conf"), "utf8")).not.toMatch(/"\$JS\.API\.STREAM\.UPDATE\./);
  }, 60_000);
});
