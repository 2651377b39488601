import { afterEach, describe, expect, it } from "@jest/globals";
import { busOptions } from "@mom/bus";
import { createLogger } from "@mom/config";
import type { OutboundEvent, Receipt } from "@mom/contracts";
import { FakeClock, startScheduler, type RunningScheduler } from "@mom/scheduler";
import { existsSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startStack, type Stack } from "../support/stack.js";
import { outboundEvents, receiptsOf } from "../support/streams.js";

// "Remind me tomorrow at 9" through everything real: the scripted model calls the reminders
// integration (integrations/reminders, loaded from tools.globalDir) with invoke_tool, the runner's
// gate leaves the receipts, the answer's tool activity is derived from them, and the real scheduler
// — its clock faked, so "tomorrow at 9" comes at once — fires the reminder in the channel. When the
// call fails or is denied, the activity says so whatever the model claims, no event file exists and
// nothing fires.
const integrations = join(dirname(fileURLToPath(import.meta.url)), "../../integrations");
const CREATE = "reminders.event.create";
const ZONE = "Europe/Vienna";
const ref = { adapter: "cli", channelId: "local" };

let s: Stack | undefined;
let sched: RunningScheduler | undefined;
afterEach(async () => {
  await sched?.close();
  await s?.stop();
  s = sched = undefined;
});

/** The stack with the integration installed and a scheduler whose clock the test moves. */
async function start(config: object = {}) {
  s = await startStack({ config: { tools: { globalDir: integrations }, scheduler: { pollIntervalMs: 200 }, ...config } });
  const clock = new FakeClock(Date.now());
  const logger = createLogger("scheduler", { level: "error" });
  sched = await startScheduler({ loaded: s.loaded, logger, clock, settleMs: 200 }, busOptions(s.loaded, s.nats.url, "scheduler", logger));
  return { st: s, sched, clock, eventsDir: join(s.loaded.paths.workspaceDir, "channels", "cli", "local", "events") };
}

/** Tomorrow's date in `zone` at `hhmm`, as the local date-time the model passes ("2026-11-28T09:00"). */
function tomorrowAt(hhmm: string, zone: string): string {
  const ymd = new Intl.DateTimeFormat("en-CA", { timeZone: zone, year: "numeric", month: "2-digit", day: "2-digit" }).format(new Date(Date.now() + 86_400_000));
  return `${ymd}T${hhmm}`;
}

const invoke = (tool: string, args: object, label: string) => ({ toolCalls: [{ name: "invoke_tool", arguments: { label, tool, args } }] });
const eventFiles = (dir: string) => (existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith(".json")) : []);

async function until<T>(what: string, get: () => Promise<T | undefined> | T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await get();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

type RunEnded = Extract<OutboundEvent["event"], { type: "run_ended" }>;
/** The run_ended events of the channel so far, oldest first. */
const runsEnded = async (st: Stack) => (await outboundEvents(st.bus)).map((e) => e.event).filter((e): e is RunEnded => e.type === "run_ended");
/** The receipts of the reminders tool, as published, once the call has ended (succeeded, failed or denied). */
const createReceipts = (st: Stack) =>
  until("the create call's last receipt", async () => {
    const rs = (await receiptsOf(st.bus, ref)).filter((r: Receipt) => r.toolId === CREATE);
    return rs.some((r) => ["tool.call.succeeded", "tool.call.failed", "tool.call.denied"].includes(r.type)) ? rs : undefined;
  });

/** Nothing reaches the model for `ms` after the scheduler's clock moved: nothing fired. */
async function nothingFires(st: Stack, ms = 700) {
  const before = st.llm.requests.length;
  await new Promise((r) => setTimeout(r, ms));
  expect(st.llm.requests.length).toBe(before);
}

describe("reminders through the integration, the gate and the scheduler", () => {
  it('"remind me tomorrow at 9": a succeeded receipt, the activity shows it, and it fires in the channel at 9', async () => {
    const { st, sched, clock, eventsDir } = await start();
    const at = tomorrowAt("09:00", ZONE);
    st.llm.enqueue(invoke(CREATE, { text: "Remind @tester: the stand-up starts now", at, timezone: ZONE }, "Schedule the reminder"), {
      text: "I will remind you tomorrow at 9.",
    });
    st.type("remind me tomorrow at 9 about the stand-up");
    await st.output.waitForAnswer("I will remind you tomorrow at 9.");

    // The system prompt told the model to use the tool, and listed it.
    const prompt = JSON.stringify(st.llm.requests[0]!.messages[0]);
    expect(prompt).toContain(`- ${CREATE} (risk: write)`);
    expect(prompt).toContain(`use \`${CREATE}\``);

    expect((await createReceipts(st)).map((r) => r.type)).toEqual(["tool.call.requested", "tool.call.started", "tool.call.succeeded"]);
    const ended = (await runsEnded(st)).at(-1)!;
    expect(ended.toolActivity).toEqual([{ toolCallId: expect.any(String), toolId: CREATE, risk: "write", status: "succeeded", label: "Schedule the reminder" }]);
    expect(st.output.text).toContain(`✓ ${CREATE} — Schedule the reminder: succeeded`);

    // What the tool told the model: the id and when it fires.
    const result = JSON.stringify(st.llm.requests[1]!.messages.at(-1));
    const id = /id \\"([a-z0-9-]+)\\"/.exec(result)![1]!;
    expect(eventFiles(eventsDir)).toEqual([`${id}.json`]);
    const atMs = Date.parse(/Fires: [^=]+ = (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)\./.exec(result)![1]!);
    // Tomorrow, 09:00 in Vienna.
    expect(new Intl.DateTimeFormat("sv-SE", { timeZone: ZONE, year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit" }).format(atMs)).toBe(at.replace("T", " "));

    // The scheduler has it, for that very time.
    await until("the scheduler to schedule it", () => sched.scheduler.scheduled().find((e) => e.file === `channels/cli/local/events/${id}.json`));
    expect(sched.scheduler.scheduled()).toEqual([{ file: `channels/cli/local/events/${id}.json`, type: "one-shot", channel: "cli/local", next: new Date(atMs).toISOString() }]);

    // A minute before 9 nothing happens; at 9 it fires in the channel and the agent answers it.
    clock.set(atMs - 60_000);
    await nothingFires(st);
    st.llm.enqueue({ text: "Good morning @tester, the stand-up starts now!" });
    clock.set(atMs);
    await st.output.waitForAnswer("Good morning @tester, the stand-up starts now!");
    const fired = JSON.stringify(st.llm.requests.at(-1)!.messages.at(-1));
    expect(fired).toMatch(new RegExp(`\\[@scheduler\\]: \\[EVENT:${id}\\.json:one-shot:${at}:00\\+0[12]:00\\] Remind @tester: the stand-up starts now`));
    await until("the fired file to be removed", () => (eventFiles(eventsDir).length === 0 ? true : undefined));
  }, 60_000);

  it("an invalid reminder fails: the activity says failed whatever the model claims, no file, nothing fires", async () => {
    const { st, sched, clock, eventsDir } = await start();
    st.llm.enqueue(
      invoke(CREATE, { text: "Remind @tester about the stand-up", at: "2020-01-01T09:00:00+01:00" }, "Schedule the reminder"),
      { text: "Done! Your reminder is set." },
    );
    st.type("remind me on 1 January 2020 at 9");
    await st.output.waitForAnswer("Done! Your reminder is set.");
    expect((await createReceipts(st)).map((r) => r.type)).toEqual(["tool.call.requested", "tool.call.started", "tool.call.failed"]);
    const ended = (await runsEnded(st)).at(-1)!;
    expect(ended.toolActivity).toEqual([
      expect.objectContaining({ toolId: CREATE, risk: "write", status: "failed", detail: expect.stringMatching(/^"at" "2020-01-01T09:00:00\+01:00" is in the past/) }),
    ]);
    expect(st.output.text).toMatch(new RegExp(`✗ ${CREATE.replace(/\./g, "\\.")} — Schedule the reminder: failed \\("at" "2020-01-01T09:00:00\\+01:00" is in the past`));
    // The model was given the reason and the receipts to act on.
    expect(JSON.stringify(st.llm.requests[1]!.messages)).toContain("is in the past");
    expect(eventFiles(eventsDir)).toEqual([]);
    await sched.scheduler.rescan();
    expect(sched.scheduler.scheduled()).toEqual([]);
    clock.set(Date.now() + 3 * 86_400_000);
    await nothingFires(st);
  }, 60_000);

  it("denied by the person asked (policy.ask): the activity says denied, no file, nothing fires", async () => {
    const { st, sched, clock, eventsDir } = await start({ policy: { ask: ["reminders.*"] } });
    const at = tomorrowAt("09:00", ZONE);
    st.llm.enqueue(invoke(CREATE, { text: "Remind @tester", at, timezone: ZONE }, "Schedule the reminder"), { text: "Reminder set for tomorrow at 9." });
    st.type("remind me tomorrow at 9");
    await st.output.waitFor(`🔐 Approval needed: mom wants to run ${CREATE} (write)`);
    st.type("n");
    await st.output.waitForAnswer("Reminder set for tomorrow at 9.");
    expect((await createReceipts(st)).map((r) => r.type)).toEqual(["tool.call.requested", "tool.call.denied"]);
    expect((await runsEnded(st)).at(-1)!.toolActivity).toEqual([expect.objectContaining({ toolId: CREATE, status: "denied" })]);
    expect(st.output.text).toContain(`⊘ ${CREATE} — Schedule the reminder: denied`);
    expect(eventFiles(eventsDir)).toEqual([]);
    await sched.scheduler.rescan();
    expect(sched.scheduler.scheduled()).toEqual([]);
    clock.set(Date.now() + 2 * 86_400_000);
    await nothingFires(st);
  }, 60_000);

  it("denied by policy (a deny list): hidden from the model, a call anyway is denied, no file, nothing fires", async () => {
    const { st, sched, clock, eventsDir } = await start({ policy: { channels: { "cli/local": { deny: ["reminders.event.create"] } } } });
    const at = tomorrowAt("09:00", ZONE);
    st.llm.enqueue(invoke(CREATE, { text: "Remind @tester", at, timezone: ZONE }, "Schedule the reminder"), { text: "Reminder set for tomorrow at 9." });
    st.type("remind me tomorrow at 9");
    await st.output.waitForAnswer("Reminder set for tomorrow at 9.");
    const prompt = JSON.stringify(st.llm.requests[0]!.messages[0]);
    expect(prompt).not.toContain(`- ${CREATE} (risk`);
    expect(prompt).toContain("- reminders.event.list (risk: read)");
    expect((await createReceipts(st)).map((r) => r.type)).toEqual(["tool.call.requested", "tool.call.denied"]);
    expect((await runsEnded(st)).at(-1)!.toolActivity).toEqual([expect.objectContaining({ toolId: CREATE, status: "denied" })]);
    expect(st.output.text).toContain(`⊘ ${CREATE} — Schedule the reminder: denied`);
    expect(eventFiles(eventsDir)).toEqual([]);
    await sched.scheduler.rescan();
    expect(sched.scheduler.scheduled()).toEqual([]);
    clock.set(Date.now() + 2 * 86_400_000);
    await nothingFires(st);
  }, 60_000);
});
