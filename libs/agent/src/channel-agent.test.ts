import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { fauxAssistantMessage, fauxText, fauxToolCall, registerFauxProvider, type FauxProviderRegistration } from "@mariozechner/pi-ai";
import { AuthStorage, ModelRegistry } from "@mariozechner/pi-coding-agent";
import type { LogEntry, OutboundEventBody } from "@mom/contracts";
import { Sandbox } from "@mom/sandbox";
import { type ChannelStore, WorkspaceLayout } from "@mom/store";
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, symlinkSync, writeFileSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ChannelAgent } from "./channel-agent.js";

const runnerFiles = (s: ChannelStore) => [s.logFile, s.contextFile, s.receiptsFile];

const entry = (id: string, text: string, userName = "mario"): LogEntry => ({
  id,
  date: new Date().toISOString(),
  user: `U-${userName}`,
  userName,
  text,
  attachments: [],
  isBot: false,
  isMention: true,
});

describe("ChannelAgent", () => {
  let dir: string;
  let faux: FauxProviderRegistration;
  /** A model whose window a few big log lines fill, so compaction really runs. */
  let small: FauxProviderRegistration;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "mom-agent-"));
    faux = registerFauxProvider({ provider: "faux-agent", models: [{ id: "m1", contextWindow: 100_000 }] });
    small = registerFauxProvider({ provider: "faux-agent", models: [{ id: "m-small", contextWindow: 72_000 }] });
  });
  afterAll(() => {
    faux.unregister();
    small.unregister();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A fresh channel, or (`same`) a new agent on an existing one, as a runner taking it over makes. */
  async function setup(model = faux, onFileProblems?: (problems: string[]) => void, same?: { layout: WorkspaceLayout; store: ChannelStore }, o: { baseUrl?: string; retries?: number } = {}) {
    const layout = same?.layout ?? new WorkspaceLayout(join(dir, "workspace"));
    await layout.ensureWorkspace();
    const store = same?.store ?? layout.channel({ adapter: "cli", channelId: `c${Math.random().toString(36).slice(2)}` });
    const sandbox = new Sandbox({ type: "bwrap" }, { dataDir: dir, workspaceDir: layout.workspaceDir }).forChannel(store.dir, runnerFiles(store));
    const authStorage = AuthStorage.inMemory();
    authStorage.setRuntimeApiKey("faux-agent", "k");
    const agent = await ChannelAgent.create({
      qualifiedChannelId: "cli/test",
      workspaceDir: layout.workspaceDir,
      store,
      sandbox,
      resolved: { model: { ...model.getModel(), ...(o.baseUrl && { baseUrl: o.baseUrl }) } as never, authStorage, modelRegistry: ModelRegistry.inMemory(authStorage) },
      agentDir: join(dir, "pi"),
      onFileProblems,
      ...(o.retries !== undefined && { retries: o.retries }),
    });
    return { layout, store, agent };
  }

  it("runs bash, answers, persists context.jsonl and syncs unmentioned log lines", async () => {
    const { store, agent, layout } = await setup();
    writeFileSync(join(layout.workspaceDir, "MEMORY.md"), "The team ships on Fridays.");
    await store.appendLog({ ...entry("m0", "anyone seen the build?", "luigi"), isMention: false });
    await store.appendLog(entry("m1", "@mom list files"));
    let systemPrompt = "";
    let secondRequest: string[] = [];
    faux.setResponses([
      (ctx) => {
        systemPrompt = ctx.systemPrompt ?? "";
        return fauxAssistantMessage([fauxToolCall("bash", { label: "Say hi", command: "echo hi-from-bash" })], { stopReason: "toolUse" });
      },
      (ctx) => {
        secondRequest = ctx.messages.map((m) => JSON.stringify(m.content));
        return fauxAssistantMessage([fauxText("All done.")]);
      },
    ]);
    const events: OutboundEventBody[] = [];
    const outcome = await agent.run({ ...entry("m1", "@mom list files") }, (e) => events.push(e));

    expect(outcome).toMatchObject({ stopReason: "stop", finalText: "All done." });
    expect(systemPrompt).toContain("The team ships on Fridays.");
    expect(systemPrompt).toContain("@luigi");
    const start = events.find((e) => e.type === "tool_execution_start");
    const end = events.find((e) => e.type === "tool_execution_end");
    expect(start).toMatchObject({ toolName: "bash", label: "Say hi" });
    expect(end).toMatchObject({ toolName: "bash", label: "Say hi", isError: false });
    expect((end as { resultText: string }).resultText).toContain("hi-from-bash");
    // luigi's unmentioned message reached the model before the trigger
    expect(secondRequest.join("\n")).toContain("anyone seen the build?");
    const context = readFileSync(store.contextFile, "utf8");
    expect(context).toContain("All done.");
    expect(context).toContain("anyone seen the build?");
    agent.dispose();
  });

  it("sends the same system prompt run after run, so a provider's prompt cache covers the context", async () => {
    const { store, agent } = await setup();
    const prompts: string[] = [];
    const answer = (text: string) => (ctx: { systemPrompt?: string }) => {
      prompts.push(ctx.systemPrompt ?? "");
      return fauxAssistantMessage([fauxText(text)]);
    };
    faux.setResponses([answer("one"), answer("two")]);
    for (const id of ["p1", "p2"]) {
      await store.appendLog(entry(id, "@mom hello"));
      await new Promise((r) => setTimeout(r, 5)); // a later moment
      expect((await agent.run({ ...entry(id, "@mom hello") }, () => {})).stopReason).toBe("stop");
    }
    expect(prompts).toHaveLength(2);
    expect(prompts[0]).toContain(`Current date: ${new Date().toISOString().slice(0, 10)}`);
    expect(prompts[1]).toBe(prompts[0]);
    agent.dispose();
  });

  it("resumes a message whose first attempt was stopped before its prompt: said once, nothing after it synced early", async () => {
    const first = await setup();
    await first.store.appendLog(entry("m0", "@mom hello"));
    faux.setResponses([fauxAssistantMessage([fauxText("hi")])]);
    await first.agent.run(entry("m0", "@mom hello"), () => {}); // pi writes context.jsonl from the first answer on
    await first.store.appendLog(entry("m1", "@mom first"));
    await first.store.appendLog(entry("m2", "@mom second")); // logged while m1 was about to run
    const stopped = first.agent.run(entry("m1", "@mom first"), () => {});
    await first.agent.abort(); // the runner lost the bus before the prompt went out
    expect(await stopped).toMatchObject({ stopReason: "aborted" });
    first.agent.dispose();

    const seen: string[][] = [];
    const answer = (text: string) => (ctx: { messages: { role: string; content: unknown }[] }) => {
      seen.push(ctx.messages.filter((m) => m.role === "user").map((m) => JSON.stringify(m.content)));
      return fauxAssistantMessage([fauxText(text)]);
    };
    faux.setResponses([answer("one"), answer("two")]);
    const again = await setup(faux, undefined, first);
    await again.agent.run(entry("m1", "@mom first"), () => {}, { note: "[resumed]" });
    await again.agent.run(entry("m2", "@mom second"), () => {});
    again.agent.dispose();
    expect(seen[0]!.join("\n")).not.toContain("@mom second"); // m2 waits for its own run
    const users = readFileSync(first.store.contextFile, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l))
      .filter((e) => e.type === "message" && e.message.role === "user")
      .map((e) => e.message.content[0].text as string);
    expect(users.filter((t) => t.includes("@mom first"))).toHaveLength(1);
    expect(users.filter((t) => t.includes("@mom second"))).toHaveLength(1);
  });

  it("keeps the answer of a run whose end compacts the context (compaction shortens the session's messages)", async () => {
    const { store, agent } = await setup(small);
    // Each line is ~5k tokens to the faux model (4 characters a token), a run syncs at most 100,000
    // characters of new history, and faux counts new prompt text twice (as input and cache write)
    // and what the previous request already sent once (a cache read, the system prompt being the
    // same): five lines (45k) stay under the threshold (window 72k - 16k reserve), four more (64k) cross it.
    const big = (i: number) => `output ${i}: ${"x".repeat(20_000)}`;
    for (let i = 0; i < 5; i++) await store.appendLog({ ...entry(`b${i}`, big(i), "luigi"), isMention: false });
    await store.appendLog(entry("q1", "@mom first question"));
    small.setResponses([fauxAssistantMessage([fauxText("First answer.")])]);
    const firstEvents: OutboundEventBody[] = [];
    const first = await agent.run(entry("q1", "@mom first question"), (e) => firstEvents.push(e));
    expect(firstEvents.some((e) => e.type === "compaction_start")).toBe(false);
    expect(first).toMatchObject({ stopReason: "stop", finalText: "First answer." });

    for (let i = 5; i < 9; i++) await store.appendLog({ ...entry(`b${i}`, big(i), "luigi"), isMention: false });
    await store.appendLog(entry("q2", "@mom second question"));
    const summary = () => fauxAssistantMessage([fauxText("Summary: luigi pasted long outputs.")]);
    small.setResponses([fauxAssistantMessage([fauxText("Second answer.")]), summary, summary]);
    const events: OutboundEventBody[] = [];
    const second = await agent.run(entry("q2", "@mom second question"), (e) => events.push(e));

    expect(events.find((e) => e.type === "compaction_start")).toMatchObject({ reason: "threshold" });
    expect(events.find((e) => e.type === "compaction_end")).toMatchObject({ aborted: false });
    expect(readFileSync(store.contextFile, "utf8")).toContain("Summary: luigi pasted long outputs.");
    expect(second).toMatchObject({ stopReason: "stop", finalText: "Second answer." });
    expect(second.usage.output).toBeGreaterThan(0);
    agent.dispose();
  });

  it("a stop during a compaction — at a run's end, or before the next prompt — aborts its summary call, and the prompt after it never runs", async () => {
    const { store, agent } = await setup(small);
    // As in the test above: the second run's answer crosses the compaction threshold.
    const big = (i: number) => `output ${i}: ${"x".repeat(20_000)}`;
    for (let i = 0; i < 5; i++) await store.appendLog({ ...entry(`b${i}`, big(i), "luigi"), isMention: false });
    await store.appendLog(entry("q1", "@mom first question"));
    small.setResponses([fauxAssistantMessage([fauxText("First answer.")])]);
    await agent.run(entry("q1", "@mom first question"), () => {});
    for (let i = 5; i < 9; i++) await store.appendLog({ ...entry(`b${i}`, big(i), "luigi"), isMention: false });

    // A summary call that answers only once its signal aborts (as a provider's request does) or the test lets it.
    let asked!: () => void;
    let summaryAsked = new Promise<void>((r) => (asked = r));
    let letSummariesEnd!: () => void;
    const summariesEnd = new Promise<void>((r) => (letSummariesEnd = r));
    const heldSummary = (_ctx: unknown, options: { signal?: AbortSignal } | undefined) => {
      asked();
      return new Promise<ReturnType<typeof fauxAssistantMessage>>((resolve) => {
        const done = () => resolve(fauxAssistantMessage([fauxText("Summary.")]));
        if (options?.signal?.aborted) return done();
        options?.signal?.addEventListener("abort", done, { once: true });
        void summariesEnd.then(done);
      });
    };
    // Settles with the run, or says the run is still going after a bound no working stop comes near.
    const stillGoing = <T>(p: Promise<T>) => Promise.race([p, new Promise<"still going">((r) => setTimeout(() => r("still going"), 5_000).unref())]);
    try {
      await store.appendLog(entry("q2", "@mom second question"));
      small.setResponses([fauxAssistantMessage([fauxText("Second answer.")]), heldSummary, heldSummary]);
      const second = agent.run(entry("q2", "@mom second question"), () => {});
      await summaryAsked;
      await agent.abort();
      // The answer was made before the stop; the compaction after it is dropped (pi compacts before the next prompt).
      expect(await stillGoing(second)).toMatchObject({ stopReason: "stop", finalText: "Second answer." });

      summaryAsked = new Promise<void>((r) => (asked = r));
      await store.appendLog(entry("q3", "@mom third question"));
      small.setResponses([heldSummary, heldSummary, fauxAssistantMessage([fauxText("Third answer.")])]);
      const events: OutboundEventBody[] = [];
      const third = agent.run(entry("q3", "@mom third question"), (e) => events.push(e));
      await summaryAsked; // the compaction pi makes before sending the prompt
      await agent.abort();
      expect(await stillGoing(third)).toMatchObject({ stopReason: "aborted", finalText: "" });
      expect(events.find((e) => e.type === "compaction_end")).toMatchObject({ aborted: true });
    } finally {
      letSummariesEnd();
      agent.dispose();
    }
  });

  it("caps what reaches the model from memory and skills, newest first with a note; a MEMORY.md that is a directory is reported and skipped", async () => {
    const problems: string[] = [];
    const { store, agent, layout } = await setup(faux, (p) => problems.push(...p));
    const older = "old note\n".repeat(300_000); // ~2.7 MB
    writeFileSync(join(layout.workspaceDir, "MEMORY.md"), `${older}- the newest global note\n`);
    mkdirSync(join(store.dir, "MEMORY.md"), { recursive: true });
    const skillDir = join(store.skillsDir, "huge");
    mkdirSync(skillDir, { recursive: true });
    // Past the 1,024 characters a description may have, within the 8 KiB of front matter the runner parses.
    writeFileSync(join(skillDir, "SKILL.md"), `---\nname: huge\ndescription: ${"d".repeat(6_000)}\n---\nbody\n`);
    await store.appendLog(entry("k1", "@mom hi"));
    let systemPrompt = "";
    faux.setResponses([
      (ctx) => {
        systemPrompt = ctx.systemPrompt ?? "";
        return fauxAssistantMessage([fauxText("Hi.")]);
      },
    ]);
    const outcome = await agent.run(entry("k1", "@mom hi"), () => {});
    expect(outcome).toMatchObject({ stopReason: "stop", finalText: "Hi." });
    expect(systemPrompt).toContain("- the newest global note");
    expect(systemPrompt).toMatch(/MEMORY\.md is 2,700,025 bytes; only its last [\d,]+ characters \(the newest notes\) are shown here/);
    expect(systemPrompt).toContain(`[cut; the whole description is in ${join(skillDir, "SKILL.md")}]`);
    expect(systemPrompt.length).toBeLessThan(40_000);
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/MEMORY\.md: 2700025 bytes, more than the 16384 a prompt takes; only its end is shown$/),
        expect.stringMatching(/MEMORY\.md: is a directory, not a regular file; memory skipped$/),
        expect.stringMatching(/SKILL\.md: description of 6000 characters cut to 1024 in the prompt$/),
      ]),
    );
    agent.dispose();
  });

  it("syncs only the newest unsynced history that fits, with a note, from a 200 MB log never synced", async () => {
    const { store, agent } = await setup();
    await store.ensureDirs();
    // 200 MB of other people's lines (written straight to the file, as years of history would be).
    const fd = openSync(store.logFile, "a");
    const chunk = Array.from({ length: 1000 }, (_, i) => JSON.stringify({ ...entry(`h-${i}`, `line ${i} ${"z".repeat(1000)}`, "luigi"), isMention: false })).join("\n") + "\n";
    const lines = Math.ceil(200 * 1_048_576 / Buffer.byteLength(chunk));
    for (let i = 0; i < lines; i++) writeSync(fd, chunk.replaceAll('"id":"h-', `"id":"h${i}-`));
    closeSync(fd);
    await store.appendLog({ ...entry("recent", "the most recent remark", "luigi"), isMention: false });
    await store.appendLog(entry("t1", "@mom what did I miss?"));
    let request: string[] = [];
    faux.setResponses([
      (ctx) => {
        request = ctx.messages.map((m) => (typeof m.content === "string" ? m.content : m.content.map((c) => ("text" in c ? c.text : "")).join("")));
        return fauxAssistantMessage([fauxText("Plenty.")]);
      },
    ]);
    const heapBefore = process.memoryUsage().heapUsed;
    const outcome = await agent.run(entry("t1", "@mom what did I miss?"), () => {});
    expect(outcome).toMatchObject({ stopReason: "stop", finalText: "Plenty." });
    const total = request.reduce((n, t) => n + t.length, 0);
    expect(total).toBeLessThan(110_000);
    expect(request[0]).toMatch(/^\[mom: \d+ earlier messages \(.*\) and \d+\.\d MB of older log lines before them of this channel were left out of your context/);
    expect(request.at(-2)).toContain("the most recent remark");
    expect(request.at(-1)).toContain("what did I miss?");
    expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(100 * 1_048_576);
    // The next run reads from the cursor this one left: nothing of the old history again.
    await store.appendLog(entry("t2", "@mom thanks"));
    faux.setResponses([
      (ctx) => {
        request = ctx.messages.map((m) => JSON.stringify(m.content));
        return fauxAssistantMessage([fauxText("Welcome.")]);
      },
    ]);
    await agent.run(entry("t2", "@mom thanks"), () => {});
    expect(request.filter((t) => t.includes("left out of your context"))).toHaveLength(1);
    agent.dispose();
    rmSync(store.logFile, { force: true });
  });

  it("shows the model at most 50,000 characters of one message, saying where the rest is", async () => {
    const { store, agent } = await setup();
    const huge = `@mom look at this ${"q".repeat(300_000)}`;
    await store.appendLog(entry("p1", huge));
    let last = "";
    faux.setResponses([
      (ctx) => {
        const m = ctx.messages.at(-1)!;
        last = typeof m.content === "string" ? m.content : m.content.map((c) => ("text" in c ? c.text : "")).join("");
        return fauxAssistantMessage([fauxText("Seen.")]);
      },
    ]);
    expect(await agent.run(entry("p1", huge), () => {})).toMatchObject({ finalText: "Seen." });
    expect(last.length).toBeLessThan(51_000);
    expect(last).toMatch(/\[message cut: 50,000 of 300,018 characters shown; the whole message is in log\.jsonl\]$/);
    agent.dispose();
  });

  it("ends with stopReason error and a message when the provider fails", async () => {
    const { store, agent } = await setup();
    await store.appendLog(entry("e1", "hello"));
    faux.setResponses([fauxAssistantMessage([], { stopReason: "error", errorMessage: "provider exploded" })]);
    const outcome = await agent.run(entry("e1", "hello"), () => {});
    expect(outcome.stopReason).toBe("error");
    expect(outcome.errorMessage).toContain("provider exploded");
    agent.dispose();
  });

  it("a model call that cannot connect names the endpoint, what failed and the fix, with no secret in it", async () => {
    const { store, agent } = await setup(faux, undefined, undefined, { baseUrl: "http://user:s3cret@127.0.0.1:1/v1?key=s3cret", retries: 0 });
    await store.appendLog(entry("c1", "hello"));
    faux.setResponses([fauxAssistantMessage([], { stopReason: "error", errorMessage: "Connection error." })]);
    const outcome = await agent.run(entry("c1", "hello"), () => {});
    expect(outcome.stopReason).toBe("error");
    expect(outcome.errorMessage).toMatch(/^Connection error: ECONNREFUSED — model faux-agent\/m1 at http:\/\/127\.0\.0\.1:1\/v1: connection refused — nothing listens there/);
    expect(outcome.errorMessage).not.toContain("s3cret");
    agent.dispose();
  });

  it("a refused key says so, with the provider's message and the endpoint", async () => {
    const { store, agent } = await setup(faux, undefined, undefined, { retries: 0 });
    await store.appendLog(entry("a1", "hello"));
    faux.setResponses([fauxAssistantMessage([], { stopReason: "error", errorMessage: "401 Incorrect API key provided" })]);
    const outcome = await agent.run(entry("a1", "hello"), () => {});
    expect(outcome.errorMessage).toMatch(/^401 Incorrect API key provided — model faux-agent\/m1 at \S+: credentials refused \(HTTP 401\) — check the key/);
    agent.dispose();
  });

  it("runs every tool in the channel's sandbox: no secrets, no other channel, no tool code, and says so in the prompt", async () => {
    const other = await setup();
    await other.store.appendLog(entry("o1", "the other channel's secret plan"));
    writeFileSync(join(other.store.dir, "MEMORY.md"), "other channel memory");
    other.agent.dispose();
    const { store, agent, layout } = await setup();
    mkdirSync(join(layout.workspaceDir, "tools", "t"), { recursive: true });
    writeFileSync(join(layout.workspaceDir, "tools", "t", "index.mjs"), "export default {};\n");
    symlinkSync(join(other.store.dir, "MEMORY.md"), join(store.dir, "MEMORY.md"));
    process.env.MOM_AGENT_TEST_SECRET = "agent-test-secret-77";
    await store.appendLog(entry("s1", "@mom try things"));
    const otherLog = join("..", other.store.ref.channelId, "log.jsonl");
    let systemPrompt = "";
    faux.setResponses([
      (ctx) => {
        systemPrompt = ctx.systemPrompt ?? "";
        return fauxAssistantMessage(
          [
            fauxToolCall("bash", { label: "Look around", command: `env; ls ..; cat ${otherLog}; echo x > ${join(layout.workspaceDir, "tools/t/index.mjs")}; rm log.jsonl; echo end` }),
            fauxToolCall("read", { label: "Read theirs", path: otherLog }),
            fauxToolCall("write", { label: "Plant a tool", path: "../../../tools/t/index.mjs", content: "evil" }),
            fauxToolCall("write", { label: "Write mine", path: "scratch/ok.txt", content: "fine" }),
          ],
          { stopReason: "toolUse" },
        );
      },
      fauxAssistantMessage([fauxText("Done.")]),
    ]);
    const events: OutboundEventBody[] = [];
    try {
      await agent.run(entry("s1", "@mom try things"), (e) => events.push(e));
    } finally {
      delete process.env.MOM_AGENT_TEST_SECRET;
    }
    const ends = events.filter((e): e is Extract<OutboundEventBody, { type: "tool_execution_end" }> => e.type === "tool_execution_end");
    // pi runs the calls at once; they end in any order.
    const [bash, read, plant, mine] = ["Look around", "Read theirs", "Plant a tool", "Write mine"].map((label) => ends.find((e) => e.label === label));
    expect(systemPrompt).toContain("Sandbox: bubblewrap");
    expect(systemPrompt).not.toContain("other channel memory");
    expect(bash!.resultText).not.toContain("agent-test-secret-77");
    expect(bash!.resultText).not.toContain("secret plan");
    expect(bash!.resultText).toMatch(/^[^\n]*PATH=|\nPATH=/);
    expect(bash!.resultText).toContain("Read-only file system");
    expect(bash!.resultText).toMatch(/rm: cannot remove 'log.jsonl': (Device or resource busy|Read-only file system)/);
    expect(read).toMatchObject({ isError: true, resultText: expect.stringContaining("not visible to this channel") });
    expect(plant).toMatchObject({ isError: true, resultText: expect.stringContaining("read-only for this channel") });
    expect(mine).toMatchObject({ isError: false });
    expect(readFileSync(join(layout.workspaceDir, "tools", "t", "index.mjs"), "utf8")).toBe("export default {};\n");
    expect(readFileSync(store.logFile, "utf8")).toContain("try things");
    agent.dispose();
  });
});
