import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { screenOf } from "../support/screen.js";
import { startStack, type Stack } from "../support/stack.js";

const channelDir = (s: Stack) => join(s.loaded.paths.workspaceDir, "channels", "cli", "local");
const FRAME = /[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]/;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
// On a terminal the usage line comes after the live rows were erased, not right after a newline.
const answered = (answer: string) => new RegExp(`${answer.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}[\\s\\S]*[\\d,]+ in · `);

// The terminal chat on a terminal: stdin and stdout are TTYs. Keys are typed as a person types
// them; while the chat has not put the terminal in raw mode, the terminal itself echoes them
// where the cursor is (cooked mode), as a real one does.
describe("terminal chat on a terminal, while mom is busy", () => {
  let s: Stack;
  const input = () => s.input as unknown as { isRaw?: boolean };
  const press = (keys: string) => {
    if (!input().isRaw) s.output.write(keys.replace(/\r/g, "\n")); // the terminal's own echo
    s.input.write(input().isRaw ? keys : keys.replace(/\r/g, "\n"));
  };
  beforeAll(async () => {
    s = await startStack({ tty: true });
  });
  afterAll(async () => {
    await s?.stop();
  });

  it("what is typed during a run stays on its own row below the working line, never on it", async () => {
    s.llm.enqueue({ text: "first answer", delayMs: 2500 }, { text: "second answer" });
    press("one\r");
    await s.output.waitFor("working…");
    for (const ch of "queued message while busy") {
      press(ch);
      await sleep(20);
    }
    await sleep(400); // the working line is redrawn several times meanwhile
    const during = await screenOf(s.output.text);
    // the spinner's row has no typed text on it; the typed text is the row the cursor is on
    const spinnerRows = during.rows.filter((r) => FRAME.test(r));
    expect(spinnerRows.length).toBeGreaterThan(0);
    for (const r of spinnerRows) expect(r).not.toContain("queued");
    expect(during.cursorRow).toBe("> queued message while busy");
    expect(during.rows.at(-1)).toBe("> queued message while busy");
    expect(during.rows.at(-2)).toMatch(/^[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] working…$/);

    press("\r");
    await s.output.waitFor(answered("second answer"));
    const after = await screenOf(s.output.text);
    // the transcript: each typed line on a row of its own, then the answers; no spinner left behind
    expect(after.rows).toContain("> one");
    expect(after.rows).toContain("> queued message while busy");
    expect(after.rows.indexOf("> one")).toBeLessThan(after.rows.indexOf("first answer"));
    expect(after.rows.indexOf("first answer")).toBeLessThan(after.rows.indexOf("second answer"));
    expect(after.rows.filter((r) => FRAME.test(r))).toEqual([]);
    expect(after.cursorRow).toBe("> ");
    // the model got exactly what was typed
    expect(JSON.stringify(s.llm.requests.at(-1)!.messages)).toContain("[@tester]: queued message while busy");
  });

  it("a streamed answer's words and the typed line do not mix either", async () => {
    s.output.text = "";
    s.llm.enqueue({ text: "Streaming words arrive one by one here.", chunkDelayMs: 300 });
    press("stream it\r");
    await s.output.waitFor("Streaming");
    press("half typed");
    await s.output.waitFor(answered("one by one here."));
    const { rows, cursorRow } = await screenOf(s.output.text);
    expect(rows).toContain("Streaming words arrive one by one here.");
    expect(cursorRow).toBe("> half typed");
    expect(rows.filter((r) => r.includes("half typed"))).toEqual(["> half typed"]);
    press("\x15"); // Ctrl-U: the half-typed line is dropped
  });
});

describe("terminal chat commands: stop, /help, /new, /model", () => {
  let s: Stack;
  beforeAll(async () => {
    s = await startStack({
      models: (json) => {
        json.providers.fake!.models.push({ ...json.providers.fake!.models[0], id: "other-model", name: "Other" });
        return json;
      },
    });
  });
  afterAll(async () => {
    await s?.stop();
  });

  it("`stop` with queued messages aborts the run and says what happened to each of them", async () => {
    s.llm.enqueue({ hang: true });
    const before = s.llm.requests.length;
    s.type("slow one");
    await s.llm.waitForRequests(before + 1);
    s.type("queued two");
    s.type("queued three");
    await s.output.waitFor("position 2");
    s.type("stop");
    await s.output.waitFor(/^stop: /m);
    const out = s.output.text;
    expect(out).toContain("■ Stopped");
    expect(out).toContain("cancelled before it started: “queued two” (cancelled by @tester)");
    expect(out).toContain("cancelled before it started: “queued three” (cancelled by @tester)");
    expect(out).toContain("stop: aborted the run; 2 queued messages cancelled");
    // the cancelled messages never reached the model
    await sleep(300);
    expect(s.llm.requests.length).toBe(before + 1);
  });

  it("`/help` lists the commands without sending anything to mom", async () => {
    s.output.text = "";
    const before = s.llm.requests.length;
    s.type("/help");
    await s.output.waitFor("Ctrl-D");
    for (const c of ["/help", "/new", "/model", "/model <name>", "/attach <path>", "stop"]) expect(s.output.text).toContain(`  ${c}`);
    s.type("/frobnicate");
    await s.output.waitFor("unknown command /frobnicate (/help lists the commands)");
    expect(s.llm.requests.length).toBe(before);
  });

  it("`/new` starts a fresh session: the next prompt has no earlier history, log.jsonl keeps it, context.jsonl is archived", async () => {
    s.output.text = "";
    s.llm.enqueue({ text: "noted: the secret word is pelican" });
    s.type("remember the secret word pelican");
    await s.output.waitForAnswer("noted: the secret word is pelican");
    s.output.text = "";
    s.type("/new");
    s.llm.enqueue({ text: "fresh answer" });
    s.type("what was the secret word?");
    await s.output.waitFor("Started a new session");
    await s.output.waitForAnswer("fresh answer");
    expect(s.output.text.indexOf("Started a new session")).toBeLessThan(s.output.text.indexOf("fresh answer"));

    const last = JSON.stringify(s.llm.requests.at(-1)!.messages);
    expect(last).toContain("what was the secret word?");
    expect(last).not.toContain("pelican");
    expect(last).not.toContain("slow one"); // nor anything said before (synced log lines included)
    expect(last).not.toContain("/new");

    const dir = channelDir(s);
    const archives = readdirSync(dir).filter((f) => /^context-.*\.jsonl$/.test(f));
    expect(archives).toHaveLength(1);
    expect(readFileSync(join(dir, archives[0]!), "utf8")).toContain("pelican");
    expect(readFileSync(join(dir, "context.jsonl"), "utf8")).not.toContain("pelican");
    expect(readFileSync(join(dir, "log.jsonl"), "utf8")).toContain("pelican");
    expect(s.output.text).toContain(archives[0]!);

    // and the new session goes on as one: the next run sees the fresh exchange
    s.llm.enqueue({ text: "still fresh" });
    s.type("and now?");
    await s.output.waitForAnswer("still fresh");
    const next = JSON.stringify(s.llm.requests.at(-1)!.messages);
    expect(next).toContain("fresh answer");
    expect(next).not.toContain("pelican");
    expect(existsSync(join(dir, "context.jsonl"))).toBe(true);
  });

  it("`/model` shows the chat's model and the configured ones; `/model <name>` says how to switch (config.json, restart)", async () => {
    s.output.text = "";
    const before = s.llm.requests.length;
    s.type("/model");
    await s.output.waitFor("configured:");
    expect(s.output.text).toContain('model: fake/fake-model (config.json model)');
    expect(s.output.text).toContain("configured: fake/fake-model, fake/other-model");
    s.type("/model other-model");
    await s.output.waitFor("restart mom");
    expect(s.output.text).toContain(`set channels["cli/local"].model to "fake/other-model" in ${s.loaded.paths.configFile} and restart mom`);
    s.type("/model nope");
    await s.output.waitFor('unknown model "nope"');
    expect(s.llm.requests.length).toBe(before);
  });
});
