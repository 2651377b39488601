import { afterEach, describe, expect, it } from "@jest/globals";
import { runDoctor, toolsCommand } from "@mom/cli";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startStack, type Stack } from "../support/stack.js";

let s: Stack | undefined;
afterEach(async () => {
  await s?.stop();
  s = undefined;
});

function writeTool(st: Stack, dir: string, source: string) {
  const d = join(st.loaded.paths.workspaceDir, "tools", dir);
  mkdirSync(d, { recursive: true });
  writeFileSync(join(d, "index.ts"), source);
}

/** What an admin does after reviewing a tool: `mom tools approve <dir>`. */
const approve = (st: Stack, ...dirs: string[]) => toolsCommand(["approve", ...dirs, "--data", st.dataDir]);

const greeter = (greeting: string) => `
import Type from "typebox";
export default {
  id: "demo.greeting.say",
  description: "Greets someone by name",
  risk: "read",
  parameters: Type.Object({ name: Type.String({ description: "who to greet" }), times: Type.Optional(Type.Integer()) }),
  async execute(args) {
    return "${greeting}, " + args.name + "!".repeat(args.times ?? 1);
  },
};
`;

const invoke = (tool: string, args: object, label = "Use the tool") => ({ toolCalls: [{ name: "invoke_tool", arguments: { label, tool, args } }] });
const receiptTypes = (st: Stack) =>
  readFileSync(join(st.loaded.paths.workspaceDir, "channels/cli/local/receipts.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l))
    .map((r) => `${r.toolId}:${r.type}`);

describe("custom host tools through invoke_tool", () => {
  it("loads a workspace tool, lists it in the prompt, runs it, and hot-reloads a change", async () => {
    s = await startStack({ runner: false });
    writeTool(s, "greet", greeter("Hello"));
    writeTool(s, "broken", "export default { id: 'not valid', execute: 1 };");
    await approve(s, "greet", "broken");
    await s.startRunner();
    s.llm.enqueue(invoke("demo.greeting.say", { name: "ana", times: "2" }), { text: "greeted" });
    s.type("greet ana");
    await s.output.waitFor("greeted");
    const prompt = JSON.stringify(s.llm.requests[0]!.messages[0]);
    expect(prompt).toContain("demo.greeting.say");
    expect(prompt).toContain("Greets someone by name");
    expect(JSON.stringify(s.llm.requests[1]!.messages.at(-1))).toContain("Hello, ana!!");
    expect(receiptTypes(s)).toEqual(["demo.greeting.say:tool.call.requested", "demo.greeting.say:tool.call.started", "demo.greeting.say:tool.call.succeeded"]);

    // the broken tool is reported by doctor and did not stop the good one
    const doctor = (await runDoctor(s.dataDir)).find((c) => c.name === "custom tools")!;
    expect(doctor).toMatchObject({ ok: false, optional: true });
    expect(doctor.detail).toContain("demo.greeting.say");
    expect(doctor.detail).toContain("broken");

    writeTool(s, "greet", greeter("Servus"));
    await approve(s, "greet");
    const deadline = Date.now() + 10_000;
    let answer = "";
    while (!answer.includes("Servus") && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 400));
      s.llm.enqueue(invoke("demo.greeting.say", { name: "ana" }), (req) => ({ text: `saw: ${JSON.stringify(req.messages.at(-1))}` }));
      s.output.text = "";
      s.type("again");
      await s.output.waitFor("saw:");
      answer = s.output.text;
    }
    expect(answer).toContain("Servus, ana!");
  }, 40_000);

  it("asks before a destructive custom tool runs, and rejects invalid arguments clearly", async () => {
    s = await startStack({ runner: false });
    writeTool(
      s,
      "wipe",
      `import Type from "typebox";
export default () => ({ id: "demo.scratch.wipe", description: "Empties scratch", risk: "destructive", parameters: Type.Object({ confirm: Type.Boolean() }), async execute() { return "wiped"; } });`,
    );
    await approve(s, "wipe");
    await s.startRunner();
    s.llm.enqueue(invoke("demo.scratch.wipe", { confirm: "definitely" }), invoke("demo.scratch.wipe", { confirm: true }), { text: "all clean" });
    s.type("wipe scratch");
    await s.output.waitFor("🔐 Approval needed: mom wants to run demo.scratch.wipe (destructive)");
    expect(JSON.stringify(s.llm.requests[1]!.messages.at(-1))).toMatch(/confirm/);
    s.type("y");
    await s.output.waitFor("all clean");
    expect(JSON.stringify(s.llm.requests[2]!.messages.at(-1))).toContain("wiped");
    expect(receiptTypes(s)).toEqual([
      "demo.scratch.wipe:tool.call.requested",
      "demo.scratch.wipe:tool.call.approved",
      "demo.scratch.wipe:tool.call.started",
      "demo.scratch.wipe:tool.call.succeeded",
    ]);
  }, 30_000);

  it("loads a new or changed workspace tool only after an admin approves it; the global dir's without", async () => {
    const globalDir = mkdtempSync(join(tmpdir(), "mom-global-tools-"));
    mkdirSync(join(globalDir, "ping"));
    writeFileSync(
      join(globalDir, "ping/index.ts"),
      `import Type from "typebox";\nexport default { id: "demo.global.ping", description: "Pings", risk: "read", parameters: Type.Object({}), async execute() { return "pong"; } };\n`,
    );
    s = await startStack({ runner: false, config: { tools: { globalDir } } });
    const marker = join(s.dataDir, "imported.txt");
    // Importing the file leaves a mark: an unapproved tool must not even be imported (probed).
    const marking = (greeting: string) => `import { appendFileSync } from "node:fs";\nappendFileSync(${JSON.stringify(marker)}, "${greeting}\\n");\n${greeter(greeting)}`;
    writeTool(s, "greet", marking("Hello"));
    await s.startRunner();
    expect(await toolsCommand(["list", "--data", s.dataDir])).toMatch(/greet {2}NEW: not loaded until approved/);
    let doctor = (await runDoctor(s.dataDir)).find((c) => c.name === "custom tools")!;
    expect(doctor.detail).toContain("not loaded: a new tool");
    expect(doctor.detail).toContain("mom tools approve greet");

    // mom doctor made one tiny model call of its own: the run's first request comes after it.
    const first = s.llm.requests.length;
    s.llm.enqueue(invoke("demo.greeting.say", { name: "ana" }), (req) => ({ text: `saw: ${JSON.stringify(req.messages.at(-1))}` }));
    s.type("greet ana");
    await s.output.waitFor("saw:");
    expect(s.output.text).toContain("Unknown custom tool");
    expect(JSON.stringify(s.llm.requests[first]!.messages[0])).not.toContain("demo.greeting.say");
    expect(JSON.stringify(s.llm.requests[first]!.messages[0])).toContain("demo.global.ping");
    expect(() => readFileSync(marker, "utf8")).toThrow();

    // Approved while the runner runs: the next calls find it, without a restart.
    expect(await approve(s, "greet")).toMatch(/^approved greet: sha256 [0-9a-f]{12}, 1 files \(greet\/index.ts\)$/);
    const callUntil = async (want: string) => {
      for (;;) {
        s!.llm.enqueue(invoke("demo.greeting.say", { name: "ana" }), (req) => ({ text: `saw: ${JSON.stringify(req.messages.at(-1))}` }));
        s!.output.text = "";
        s!.type("again");
        await s!.output.waitFor("saw:");
        if (s!.output.text.includes(want)) return;
        await new Promise((r) => setTimeout(r, 300));
      }
    };
    await callUntil("Hello, ana!");

    // Changed: unloaded until approved again; a helper in tools/_lib counts as a change too.
    writeTool(s, "greet", marking("Servus"));
    await callUntil("Unknown custom tool");
    expect(await toolsCommand(["list", "--data", s.dataDir])).toMatch(/greet {2}CHANGED: not loaded until approved again/);
    expect(readFileSync(marker, "utf8")).not.toContain("Servus");
    expect(await toolsCommand(["approve", "--all", "--data", s.dataDir])).toMatch(/^approved greet/);
    await callUntil("Servus, ana!");
    mkdirSync(join(s.loaded.paths.workspaceDir, "tools/_lib"), { recursive: true });
    writeFileSync(join(s.loaded.paths.workspaceDir, "tools/_lib/util.ts"), "export const x = 1;\n");
    expect(await toolsCommand(["list", "--data", s.dataDir])).toMatch(/greet {2}CHANGED/);
    await expect(toolsCommand(["approve", "nope", "--data", s.dataDir])).rejects.toThrow(/no tool nope/);
  }, 60_000);
});
