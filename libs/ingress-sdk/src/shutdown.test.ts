import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import type { ChannelMessage, OutboundEvent } from "@mom/contracts";
import { plainDialect } from "@mom/render";
import { spawnNatsServer, type TestNats } from "@mom/testing";
import { type Logger, pino } from "pino";
import { Type } from "typebox";
import type { EventSurface, IngressDefinition } from "./platform.js";
import { type RunningIngress, startIngress } from "./start-ingress.js";
import { eventually, ScriptedMom } from "./testing/scripted-mom.js";

// What is in hand when the ingress is told to stop (SIGTERM): finished before NATS drains, or
// left for the platform to redeliver — never taken and then dropped.

const ADAPTER = "halt";

function platform() {
  const drawn: OutboundEvent[] = [];
  const surface: EventSurface = {
    dialect: plainDialect(),
    async drawEvent(_channel, event) {
      drawn.push(event);
      return undefined;
    },
  };
  const definition: IngressDefinition = {
    platform: "halt",
    settings: Type.Object({}),
    connect: () => ({ surface, start: async () => {}, stop: async () => {} }),
  };
  return { definition, drawn };
}

/** A logger whose lines are handed to `heard` as well (to act when the shell says it is waiting). */
function listeningLogger(heard: (line: string) => void): Logger {
  return pino({ level: "info" }, { write: (line: string) => heard(line) });
}

const message = (channelId: string, id: string, text: string): ChannelMessage => ({ id, channelId, timestamp: new Date().toISOString(), sender: { id: "u-ana", username: "ana", isBot: false }, text, attachments: [], isMention: true });

describe("the shell's shutdown, with work in hand", () => {
  let nats: TestNats;
  let mom: ScriptedMom;
  const running: RunningIngress[] = [];
  const start = (definition: IngressDefinition, logger: Logger = pino({ level: "silent" })) =>
    startIngress(definition, {
      adapter: { adapter: ADAPTER, access: { admins: ["u-admin"] }, maxAttachmentBytes: 1 << 20, settings: {} },
      bus: { url: nats.url, name: `ingress-${ADAPTER}`, namespace: nats.namespace, reconnectTimeWaitMs: 200, logger: pino({ level: "silent" }) },
      logger,
    }).then((r) => (running.push(r), r));

  beforeAll(async () => {
    nats = await spawnNatsServer();
    mom = await ScriptedMom.connect({ natsUrl: nats.url, namespace: nats.namespace, adapter: ADAPTER });
  });
  afterAll(async () => {
    for (const r of running) await r.close().catch(() => {});
    await mom?.close();
    await nats?.stop();
  });

  it("an approval click acknowledged to the platform but not yet published is finished: its decision is on mom.ctl before NATS drains", async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    // The click is held in `acknowledge` until the shell says it waits for it — or, when it does
    // not wait, until the shutdown is over.
    const logger = listeningLogger((line) => {
      if (line.includes("finishing the approval decisions in hand")) release();
    });
    const p = platform();
    const ingress = await start(p.definition, logger);
    const run = await mom.startRun("room", message("room", "m1", "clean up"));
    await run.emit({ type: "approval_requested", approvalId: "a1", toolId: "bash", risk: "destructive", argsSummary: "rm -rf scratch", requestedBy: { id: "u-ana", username: "ana" }, expiresAt: new Date(Date.now() + 60_000).toISOString(), approvers: ["u-admin"] });
    await eventually(() => p.drawn.some((e) => e.event.type === "approval_requested"), "the prompt drawn");

    let acknowledged!: () => void;
    const acked = new Promise<void>((r) => (acknowledged = r));
    const deciding = ingress.shell.decide({ approvalId: "a1", decision: "allow-once", user: { id: "u-admin", username: "admin" }, channel: "room" }, async () => {
      acknowledged();
      await held;
    });
    await acked;
    const closing = ingress.close();
    void closing.finally(release);
    await expect(deciding).resolves.toEqual({});
    await closing;
    expect((await mom.decisions("room")).map((d) => [d.approvalId, d.decision, d.decidedBy.id])).toEqual([["a1", "allow-once", "u-admin"]]);
  }, 60_000);
});
