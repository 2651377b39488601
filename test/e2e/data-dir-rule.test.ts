import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const mom = join(root, "services/cli/bin/mom.js");

function momRun(args: string[], opts: { cwd: string; env?: NodeJS.ProcessEnv }): Promise<{ code: number | null; out: string; err: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, NATS_URL: "nats://127.0.0.1:1", ...opts.env };
  if (!opts.env?.MOM_DATA) delete env.MOM_DATA;
  const child = spawn(process.execPath, [mom, ...args], { cwd: opts.cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.setEncoding("utf8").on("data", (t: string) => (out += t));
  child.stderr.setEncoding("utf8").on("data", (t: string) => (err += t));
  return new Promise((resolve) => child.once("close", (code) => resolve({ code, out, err })));
}

// One rule for naming the data dir: -d/--data DIR, else MOM_DATA, else ./data; a data dir that is
// not there is an error in every command, and so is an argument a command does not take.
describe("the data dir, in every command", () => {
  let cwd: string;
  let good: string;
  const missing = "/nonexistent-mom-data";
  beforeAll(() => {
    // The working directory has a ./data: a command that ignored what it was told would use it silently.
    cwd = mkdtempSync(join(tmpdir(), "mom-data-rule-"));
    mkdirSync(join(cwd, "data"));
    writeFileSync(join(cwd, "data", "config.json"), "{}");
    good = join(cwd, "good");
    mkdirSync(good);
    writeFileSync(join(good, "config.json"), "{}");
  });
  afterAll(() => rmSync(cwd, { recursive: true, force: true }));

  const commands = [
    ["runner"],
    ["scheduler"],
    ["events"],
    ["ingress", "cli"],
    ["receipts", "cli/local"],
    ["replay", "cli/local"],
    ["tail"],
    ["auth", "list"],
    ["auth", "add", "openai", "--api-key", "--secret", "env:NOPE"],
    ["auth", "remove", "x"],
    ["auth", "order", "openai"],
    ["usage"],
    ["tools", "list"],
    ["tools", "approve", "--all"],
  ];

  it("refuses a data dir that is not there, named with --data, -d or MOM_DATA", async () => {
    const runs = await Promise.all(
      [
        ...commands.map((c) => momRun([...c, "--data", missing], { cwd }).then((r) => ({ c: `${c.join(" ")} --data`, r }))),
        ...[["auth", "list"], ["usage"], ["tools", "list"]].map((c) => momRun([...c, "-d", missing], { cwd }).then((r) => ({ c: `${c.join(" ")} -d`, r }))),
        ...[["events"], ["auth", "list"], ["tail"]].map((c) => momRun(c, { cwd, env: { MOM_DATA: missing } }).then((r) => ({ c: `MOM_DATA ${c.join(" ")}`, r }))),
      ],
    );
    const wrong = runs.filter(({ r }) => r.code !== 1 || !r.err.startsWith(`mom: no data dir ${missing} `)).map(({ c, r }) => `${c}: ${r.code} ${r.err}${r.out}`);
    expect(wrong).toEqual([]);
    const doctor = await momRun(["doctor", "--data", missing], { cwd });
    expect(doctor.code).toBe(1);
    expect(doctor.out).toContain(`✗ config: no data dir ${missing}`);
    expect(existsSync(missing)).toBe(false);
  }, 120_000);

  it("an argument a command does not take is an error naming the data dir option, never a silent ./data", async () => {
    for (const c of [["auth", "list", missing], ["tools", "list", missing], ["usage", missing], ["tail", "cli", missing]]) {
      const r = await momRun(c, { cwd });
      expect({ c, code: r.code, err: r.err }).toEqual({
        c,
        code: 1,
        err: `mom: mom ${c.slice(0, -1).filter((a) => a !== "cli").join(" ")}: unexpected argument "${missing}" (the data dir is given with -d/--data DIR or MOM_DATA; \`mom ${c.slice(0, -1).filter((a) => a !== "cli").join(" ")} --help\` shows the arguments)\n`,
      });
    }
    const twice = await momRun(["events", good, "--data", join(cwd, "data")], { cwd });
    expect(twice).toMatchObject({ code: 1, err: `mom: the data dir is given twice (${good} and --data ${join(cwd, "data")}): give it once\n` });
  }, 60_000);

  it("mom auth uses the same parser: an unknown sub-command is said, with a suggestion", async () => {
    const r = await momRun(["auth", "lst"], { cwd });
    expect(r.code).toBe(2);
    expect(r.err).toContain("unknown command 'lst'");
    expect(r.err).toContain("(Did you mean list?)");
    const help = await momRun(["auth", "list", "--help"], { cwd });
    expect(help.code).toBe(0);
    expect(help.out).toMatch(/-d, --data <dir>\s+data directory \(default: \$MOM_DATA, else \.\/data\)/);
  }, 30_000);

  it("--data, -d, MOM_DATA and the positional form name the same data dir", async () => {
    writeFileSync(join(good, "config.json"), JSON.stringify({ auth: { order: { openai: ["k1"] } } }));
    writeFileSync(join(good, "auth-profiles.json"), JSON.stringify({ profiles: [{ id: "k1", provider: "openai", type: "api_key", secret: "sk-0123456789abcdef" }] }), { mode: 0o600 });
    for (const [args, env] of [
      [["auth", "order", "openai", "--data", good], {}],
      [["auth", "order", "openai", "-d", good], {}],
      [["auth", "order", "openai"], { MOM_DATA: good }],
    ] as Array<[string[], NodeJS.ProcessEnv]>) {
      expect(await momRun(args, { cwd, env })).toMatchObject({ code: 0, out: "auth.order.openai = k1\n" });
    }
    for (const args of [["events", good], ["events", "--data", good]]) expect(await momRun(args, { cwd })).toMatchObject({ code: 0, err: "" });
  }, 60_000);
});
