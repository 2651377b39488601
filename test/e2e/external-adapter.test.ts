import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import type { OutboundEvent } from "@mom/contracts";
import { ingress, runDoctor, usageReport } from "@mom/cli";
import { replayCommand } from "../../services/cli/src/replay-command.js";
import { loadConfig } from "@mom/config";
import { publishInbound } from "@mom/render";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startStack, type Stack } from "../support/stack.js";
import { outboundEvents } from "../support/streams.js";

// A platform mom does not ship, declared in config.json as `external`: its ingress (here the test,
// using only the ingress kit) publishes and reads its adapter's subjects, and the runner answers
// with no change to mom.
const ADAPTER = "matrix-home";
const ROOM = "!abc:example.org";

describe("an external adapter (a platform whose ingress is deployed on its own)", () => {
  let st: Stack;
  beforeAll(async () => {
    st = await startStack({
      cli: false,
      config: {
        adapters: { cli: { type: "cli" }, [ADAPTER]: { type: "external", platform: "matrix", approvalTextLimit: 300, settings: { homeserver: "https://matrix.example.org", e2ee: false } } },
        policy: { ask: ["bash"] },
      },
    });
  });
  afterAll(async () => {
    await st?.stop();
  });

  const ref = { adapter: ADAPTER, channelId: ROOM };
  const say = (id: string, text: string) =>
    publishInbound(st.bus, ADAPTER, { id, channelId: ROOM, timestamp: new Date().toISOString(), sender: { id: "@ana:example.org", username: "ana", isBot: false }, text, attachments: [], isMention: true });
  const ended = async (n: number) => {
    for (let i = 0; i < 300; i++) {
      const evs = (await outboundEvents(st.bus, ref)).filter((e) => e.event.type === "run_ended");
      if (evs.length >= n) return evs;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`fewer than ${n} runs ended on ${ADAPTER}`);
  };

  it("is answered on its own subjects, with its own approval limit, and is refused as `mom ingress`", async () => {
    st.llm.enqueue({ text: "Hello from mom, Matrix." });
    await say("$ev1", "@mom hi");
    const [end] = await ended(1);
    expect((end!.event as Extract<OutboundEvent["event"], { type: "run_ended" }>).finalText).toBe("Hello from mom, Matrix.");

    // The adapter's own limit (300) decides what is asked and what is denied without asking.
    st.llm.enqueue({ toolCalls: [{ name: "bash", arguments: { label: "Long", command: `echo ${"x".repeat(400)}` } }] }, { text: "could not ask" });
    await say("$ev2", "@mom run the long one");
    await ended(2);
    const events = (await outboundEvents(st.bus, ref)).map((e) => e.event);
    expect(events.some((e) => e.type === "approval_requested")).toBe(false);
    const denied = events.find((e) => e.type === "tool_execution_end" && e.isError);
    expect(denied && denied.type === "tool_execution_end" && denied.resultText).toMatch(/too long|smaller/i);

    await expect(ingress(ADAPTER, st.dataDir)).rejects.toThrow(/an external matrix adapter: its ingress is a service of its own/);
  });

  it("replay, usage and doctor handle its channel like any other", async () => {
    const lines: string[] = [];
    expect(await replayCommand(`${ADAPTER}/${ROOM}`, { data: st.dataDir }, (l) => lines.push(l))).toBe(0);
    expect(lines.join("\n")).toMatch(/@mom hi[\s\S]*Hello from mom, Matrix\./);
    expect(await usageReport(["--by", "adapter", "--data", st.dataDir])).toMatch(new RegExp(`${ADAPTER}\\s+3\\s`));
    expect(await usageReport(["--data", st.dataDir])).toContain(`${ADAPTER}/${ROOM}`);
    const failed = (await runDoctor(st.dataDir)).filter((c) => !c.ok && !c.optional);
    expect(failed).toEqual([]);
  });

  it("config.json: an external adapter needs its platform; `settings` is the ingress's own and passes through", () => {
    const dir = st.dataDir;
    const loaded = loadConfig(dir, {});
    expect(loaded.config.adapters[ADAPTER]).toMatchObject({ type: "external", platform: "matrix", settings: { homeserver: "https://matrix.example.org", e2ee: false } });
    const file = join(dir, "config.json");
    const config = JSON.parse(readFileSync(file, "utf8"));
    config.adapters[ADAPTER] = { type: "external", settings: {} };
    writeFileSync(file, JSON.stringify(config));
    expect(() => loadConfig(dir, {})).toThrow(new RegExp(`config\\.json.*/adapters/${ADAPTER}/platform`, "s"));
  });
});
