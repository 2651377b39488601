import { afterEach, describe, expect, it } from "@jest/globals";
import { usageReport } from "@mom/cli";
import { DeadLetter, parsePayload, validator } from "@mom/contracts";
import { openLedgerStream } from "@mom/usage";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { startStack, type Stack, type StackOptions } from "../support/stack.js";
import { connectionOf } from "../../libs/bus/src/bus.js"; // the NATS handles behind a Bus: tests and benches only

// Spend limits against the fake LLM with priced models: the check before each call stops a run
// before the money is spent; the usage ledger (a JetStream stream) outlives the runner.
let s: Stack | undefined;
afterEach(async () => {
  await s?.stop();
  s = undefined;
});
// $10 per million input tokens, $30 per million output tokens.
const priced: StackOptions["models"] = (json) => {
  for (const m of json.providers.fake!.models) m.cost = { input: 10, output: 30, cacheRead: 1, cacheWrite: 0 };
  return json;
};
async function stack(limits: object): Promise<Stack> {
  s = await startStack({ config: { limits }, models: priced });
  return s;
}

describe("spend limits", () => {
  it("an invalid ledger record is dead-lettered once and never counted", async () => {
    s = await startStack({ runner: false, config: { limits: { global: { day: { tokens: 50_000 } } } }, models: priced });
    const st = s;
    const ledger = await openLedgerStream(st.bus);
    await ledger.append("cli.local", { id: "bad", totalTokens: 1_000_000 }, "bad-record");
    await st.startRunner();
    st.type("hello");
    await st.output.waitFor("ok");
    expect(st.llm.requests).toHaveLength(1);
    const dlq = st.bus.subjects.stream("DLQ");
    const info = await connectionOf(st.bus).jsm.streams.info(dlq);
    const letters = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
      const r = parsePayload(validator(DeadLetter), (await connectionOf(st.bus).jsm.streams.getMessage(dlq, { seq })).data);
      if (r.ok) letters.push(r.value);
    }
    expect(letters).toEqual([expect.objectContaining({ stage: "agent-runner", subject: ledger.subject("cli.local"), msgId: "seq-1", reason: expect.stringMatching(/^usage ledger record not counted: /) })]);
  });

  it("a token limit crossed mid-run stops it before the next model call", async () => {
    const st = await stack({ channels: { "cli/local": { day: { tokens: 30_000 } } } });
    st.llm.enqueue(
      { toolCalls: [{ name: "bash", arguments: { label: "Write a file", command: "echo done > made.txt" } }], usage: { input: 50_000, output: 10 } },
      { text: "never asked" },
    );
    st.type("do it");
    await st.output.waitFor(/✗ Error: Token limit reached: this channel \(cli\/local\) has used 50,010 tokens of its 30,000 tokens daily budget/);
    expect(st.output.text).toMatch(/It resets at \d{4}-\d\d-\d\d 00:00 UTC; to go on sooner, raise limits\.channels\["cli\/local"\]\.day in config\.json\./);
    expect(st.llm.requests).toHaveLength(1);
    expect(st.llm.pending()).toBe(1);
    // The tool call the model asked for did happen; only the next model call was refused.
    expect(readFileSync(join(st.loaded.paths.workspaceDir, "channels", "cli", "local", "made.txt"), "utf8")).toBe("done\n");
    expect(st.output.text).not.toContain("retry 1/");
  });

  it("a USD limit refuses a call whose estimate alone would cross it, without calling the model", async () => {
    const st = await stack({ global: { month: { usd: 0.001 } } });
    st.type("hello");
    await st.output.waitFor(/✗ Error: Spend limit reached: mom overall has used \$0\.0000 of its \$0\.0010 monthly budget and the next model call would cost about \$0\.0\d+/);
    expect(st.llm.requests).toHaveLength(0);
  });

  it("without limits a runner appends each call to the ledger but does not read it back", async () => {
    const st = await stack({});
    st.llm.enqueue({ text: "counted", usage: { input: 20_000, output: 1_000 } });
    st.type("one");
    await st.output.waitForAnswer("counted");
    expect(await usageReport(["--data", st.dataDir])).toMatch(/cli\/local\s+1\s+20,000\s+1,000\s/);
    // A follower would be a consumer on the stream, fed every replica's every call.
    const { state } = await connectionOf(st.bus).jsm.streams.info((await openLedgerStream(st.bus)).stream);
    expect(state.messages).toBe(1);
    expect(state.consumer_count).toBe(0);
  });

  it("the ledger survives a runner restart: totals, limits and `mom usage`", async () => {
    const st = await stack({ adapters: { cli: { day: { usd: 1 } } } });
    st.llm.enqueue({ text: "first", usage: { input: 20_000, output: 1_000 } }, { text: "second", usage: { input: 40_000, output: 2_000 } });
    st.type("one");
    await st.output.waitFor("first");
    st.type("two");
    await st.output.waitForAnswer("second");
    // $0.23 + $0.46 = $0.69 spent; a restarted runner reads that back from the stream.
    await st.runner!.close();
    await st.startRunner();
    st.llm.enqueue({ text: "third", usage: { input: 30_000, output: 1_000 } });
    st.type("three");
    await st.output.waitFor("third");
    st.type("four");
    await st.output.waitFor(/✗ Error: Spend limit reached: adapter cli has used \$1\.02 of its \$1\.00 daily budget/);
    expect(st.llm.requests).toHaveLength(3);

    const byChannel = await usageReport(["--data", st.dataDir]);
    expect(byChannel).toMatch(/^usage since \d{4}-\d\d-01T00:00:00\.000Z by channel\n/);
    expect(byChannel).toMatch(/cli\/local\s+3\s+90,000\s+4,000\s+0\s+0\s+94,000\s+\$1\.0200/);
    const byModel = await usageReport(["--by", "model", "--since", new Date().toISOString().slice(0, 10), "--data", st.dataDir]);
    expect(byModel).toMatch(/fake\/fake-model\s+3\s+/);
    await expect(usageReport(["--by", "user", "--data", st.dataDir])).rejects.toThrow(/--by: expected channel, adapter or model/);

    // And a NATS restart: the ledger is a file-backed stream.
    if (st.nats.restart) {
      await st.runner!.close();
      st.runner = undefined;
      await st.nats.restart();
      expect(await usageReport(["--by", "adapter", "--data", st.dataDir])).toMatch(/cli\s+3\s+90,000\s+4,000\s+0\s+0\s+94,000\s+\$1\.0200/);
    }
  });

  it("pi's compaction summary is a metered model call: written to the ledger like any other", async () => {
    const st = await stack({ global: { month: { tokens: 10_000_000 } } });
    // 120k of a 128k window: pi compacts after the answer, with a summary call of its own.
    st.llm.enqueue({ text: "long answer", usage: { input: 120_000, output: 10 } }, { text: "## Summary\nThe user asked for a long answer.", usage: { input: 700, output: 40 } });
    st.type("please");
    await st.output.waitFor("long answer");
    await st.llm.waitForRequests(2);
    expect(JSON.stringify(st.llm.requests[1]!.messages)).toContain("<conversation>");
    let report = "";
    while (!/cli\/local\s+2\s/.test(report)) report = await usageReport(["--data", st.dataDir]);
    expect(report).toMatch(/cli\/local\s+2\s+120,700\s+50\s/);
  }, 40_000);

  it("a compaction that would cross a limit is not made, and the channel is told", async () => {
    // The answer's 120,010 tokens leave less than the summary call's estimate (its prompt plus 1,024 out).
    const st = await stack({ channels: { "cli/local": { day: { tokens: 120_500 } } } });
    st.llm.enqueue({ text: "long answer", usage: { input: 120_000, output: 10 } }, { text: "never asked" });
    st.type("please");
    await st.output.waitFor(/Token limit reached: this channel \(cli\/local\) has used 120,010 tokens of its 120,500 tokens daily budget/);
    expect(st.llm.requests).toHaveLength(1);
    expect(st.llm.pending()).toBe(1);
  }, 40_000);
});
