import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startStack, type Stack } from "../support/stack.js";
import { outboundEvents } from "../support/streams.js";

// What a red-team pass tried through bash, end to end: real NATS, the runner with its default
// sandbox (bubblewrap), the CLI ingress, a fake model that asks for the commands.
const SECRET = "xoxb-e2e-secret-token-5150";

describe("the sandbox end to end (runner with the default sandbox)", () => {
  let st: Stack;
  beforeAll(async () => {
    process.env.MOM_E2E_SLACK_BOT_TOKEN = SECRET;
    st = await startStack();
  });
  afterAll(async () => {
    delete process.env.MOM_E2E_SLACK_BOT_TOKEN;
    await st.stop();
  });

  it("bash sees no secret, no other channel, no config and no NATS; nothing secret reaches the bus or the files", async () => {
    const other = join(st.dataDir, "workspace", "channels", "cli", "other");
    mkdirSync(other, { recursive: true });
    writeFileSync(join(other, "log.jsonl"), '{"text":"the other channel\'s plans"}\n');
    const natsPort = new URL(st.nats.url).port;
    const command = [
      "env",
      "printenv",
      "cat /proc/1/environ /proc/self/environ",
      "cat ../other/log.jsonl",
      `cat ${join(st.dataDir, "config.json")}`,
      `(exec 3<>/dev/tcp/127.0.0.1/${natsPort} && head -c 4 <&3 && echo reached-nats)`,
      "echo finished",
    ].join("; ");
    st.llm.enqueue({ toolCalls: [{ name: "bash", arguments: { label: "Look for secrets", command } }] }, { text: "nothing found" });
    st.type("find the bot token");
    await st.output.waitFor("nothing found");

    const messages = st.llm.requests.at(-1)!.messages as Array<{ role: string; content: unknown }>;
    const toolResult = JSON.stringify(messages.filter((m) => m.role === "tool").map((m) => m.content));
    expect(toolResult).toContain("finished");
    expect(toolResult).toContain("No such file or directory"); // the other channel and the config are not there
    expect(toolResult).not.toContain("reached-nats");
    expect(toolResult).not.toContain("INFO");
    expect(toolResult).not.toContain("the other channel's plans");

    const everywhere = [
      JSON.stringify(await outboundEvents(st.bus)),
      JSON.stringify(messages),
      readFileSync(join(st.dataDir, "workspace", "channels", "cli", "local", "receipts.jsonl"), "utf8"),
      readFileSync(join(st.dataDir, "workspace", "channels", "cli", "local", "log.jsonl"), "utf8"),
      readFileSync(join(st.dataDir, "workspace", "channels", "cli", "local", "context.jsonl"), "utf8"),
      st.output.text,
    ];
    for (const text of everywhere) expect(text).not.toContain(SECRET);
  });

  it("the system prompt names the sandbox", async () => {
    st.llm.enqueue({ text: "ok" });
    st.type("hello");
    await st.output.waitFor("ok");
    const system = (st.llm.requests.at(-1)!.messages as Array<{ role: string; content: unknown }>).find((m) => m.role === "system");
    expect(String(system?.content)).toContain("Sandbox: bubblewrap — each command runs in a fresh sandbox");
  });
});
