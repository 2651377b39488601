import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { busOptions } from "@mom/bus";
import { createLogger } from "@mom/config";
import { startScheduler, type RunningScheduler } from "@mom/scheduler";
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startStack, type Stack } from "../support/stack.js";
import { outboundEvents } from "../support/streams.js";

// Scheduler -> runner (fake LLM) -> terminal, all real: the agent writes an event file with its
// bash tool, the scheduler fires it, the runner answers it, the CLI ingress prints the answer.
describe("scheduled events end to end", () => {
  let s: Stack;
  let sched: RunningScheduler;
  let eventsDir: string;
  const lastUserText = (i: number) => JSON.stringify(s.llm.requests[i]!.messages.at(-1));

  beforeAll(async () => {
    s = await startStack({ config: { scheduler: { pollIntervalMs: 200 } } });
    const logger = createLogger("scheduler", { level: "error" });
    sched = await startScheduler({ loaded: s.loaded, logger, settleMs: 200 }, busOptions(s.loaded, s.nats.url, "scheduler", logger));
    eventsDir = join(s.loaded.paths.workspaceDir, "events");
  });
  afterAll(async () => {
    await sched?.close();
    await s?.stop();
  });

  it("the agent schedules a reminder with its tools; it fires, runs and is answered in the terminal", async () => {
    const at = `$(date -u -d '+2 seconds' +%Y-%m-%dT%H:%M:%SZ)`;
    // In the channel's own events/ (its working directory), as the system prompt says: the
    // operator's workspace/events/ is not the channel's to write (issue 30).
    const channelEvents = join(s.loaded.paths.workspaceDir, "channels", "cli", "local", "events");
    s.llm.enqueue(
      {
        toolCalls: [
          {
            name: "bash",
            arguments: {
              label: "Schedule the reminder",
              command: `mkdir -p ${channelEvents} && printf '{"type":"one-shot","channelId":"cli/local","text":"Remind @tester to stretch","at":"%s"}' "${at}" > ${channelEvents}/stretch-$(date +%s).json`,
            },
          },
        ],
      },
      { text: "I will remind you in two seconds." },
      { text: "Time to stretch, @tester!" },
    );
    s.type("remind me to stretch in 2 seconds");
    await s.output.waitFor("I will remind you in two seconds.");
    await s.output.waitForAnswer("Time to stretch, @tester!", 15_000);
    expect(lastUserText(2)).toMatch(/\[@scheduler\]: \[EVENT:stretch-\d+\.json:one-shot:\d{4}-[^\]]+Z\] Remind @tester to stretch/);
    expect(readdirSync(channelEvents).filter((f) => f.endsWith(".json"))).toEqual([]);
    const log = readFileSync(join(s.loaded.paths.workspaceDir, "channels", "cli", "local", "log.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
    expect(log.map((e) => e.userName)).toEqual(["tester", "mom", "scheduler", "mom"]);
    expect(log[2]).toMatchObject({ isBot: true, isMention: true, text: expect.stringContaining("[EVENT:stretch-") });
  }, 30_000);

  it("a periodic check that answers [SILENT] posts nothing", async () => {
    s.llm.setFallback(() => ({ text: "[SILENT]" }));
    const before = s.llm.requests.length;
    const printed = s.output.text.length;
    writeFileSync(join(eventsDir, "inbox.json"), JSON.stringify({ type: "periodic", channelId: "cli/local", text: "Check the inbox", schedule: "* * * * * *", timezone: "UTC" }));
    await s.llm.waitForRequests(before + 1, 10_000);
    rmSync(join(eventsDir, "inbox.json"));
    expect(lastUserText(before)).toContain("[@scheduler]: [EVENT:inbox.json:periodic:* * * * * *] Check the inbox");
    let silent: unknown;
    const deadline = Date.now() + 10_000;
    while (!silent && Date.now() < deadline) {
      silent = (await outboundEvents(s.bus)).map((e) => e.event).find((e) => e.type === "run_ended" && e.silent);
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(silent).toMatchObject({ finalText: "", silent: true });
    await new Promise((r) => setTimeout(r, 300));
    // Only the progress indicator was drawn while it ran; no answer, no usage line.
    expect(s.output.text.slice(printed)).toMatch(/^(working…\n)*$/);
  }, 30_000);

  it("a broken event file is explained in its channel by the agent", async () => {
    s.llm.setFallback(() => ({ text: "Your reminder file had a bad date, so I did not schedule it." }));
    const before = s.llm.requests.length;
    writeFileSync(join(eventsDir, "lunch.json"), JSON.stringify({ type: "one-shot", channelId: "cli/local", text: "Lunch!", at: "noon" }));
    await s.output.waitFor("Your reminder file had a bad date", 15_000);
    // (a late tick of the previous test's periodic event may have run in between)
    const asked = s.llm.requests.slice(before).map((r) => JSON.stringify(r.messages.at(-1))).find((t) => t.includes("lunch.json")) ?? "";
    expect(asked).toContain("[@scheduler]: [EVENT:lunch.json:invalid] An event file could not be used:");
    expect(asked).toContain('bad date: \\"at\\" is \\"noon\\"');
    expect(asked).toContain("events/invalid/lunch.json");
    expect(existsSync(join(eventsDir, "invalid", "lunch.json.error"))).toBe(true);
  }, 30_000);
});
