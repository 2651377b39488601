import { afterAll, describe, expect, it } from "@jest/globals";
import { execFileSync } from "node:child_process";
import { linkSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cleanup, type Fixture, fixture, localDay } from "./src/test-support.js";

// The model is the attacker: it runs commands in its channel's directory between tool calls and
// picks the tools' arguments. Whatever it plants in events/ or passes as an id, the tools touch
// only the current channel's own events/ — never another channel's files or anything outside.
afterAll(cleanup);

const CREATE = "reminders.event.create";
const LIST = "reminders.event.list";
const CANCEL = "reminders.event.cancel";
const outside = mkdtempSync(join(tmpdir(), "mom-reminders-outside-"));
afterAll(() => rmSync(outside, { recursive: true, force: true }));

/** The other channel's events/ holding one event, and a snapshot of it to compare with. */
function victim(f: Fixture) {
  const dir = f.eventsDir("cli/other");
  mkdirSync(dir, { recursive: true });
  const event = JSON.stringify({ type: "periodic", channelId: "cli/other", text: "theirs", schedule: "0 9 * * *", timezone: "UTC" });
  writeFileSync(join(dir, "theirs.json"), event);
  const snapshot = () => Object.fromEntries(readdirSync(dir).map((n) => [n, readFileSync(join(dir, n), "utf8")]));
  return { dir, snapshot, before: snapshot() };
}

const oneShot = () => ({ text: "x", at: localDay(1, "09:00", "UTC"), timezone: "UTC" });

describe("a planted events/ symlink", () => {
  for (const [where, target] of [
    ["another channel's events/", (f: Fixture) => victim(f).dir],
    ["a directory outside the workspace", () => outside],
  ] as const) {
    it(`to ${where}: create, list and cancel refuse it, and nothing is written or removed there`, async () => {
      const f = fixture();
      const v = victim(f);
      const dir = target(f);
      const before = readdirSync(dir);
      symlinkSync(dir, f.eventsDir());
      const refused = /^this channel's events directory cannot be used: events: is a symlink \(the runner never follows symlinks in a channel's directory\)\. Remove it/;
      await expect(f.call(CREATE, oneShot())).rejects.toThrow(refused);
      await expect(f.call(LIST)).rejects.toThrow(refused);
      await expect(f.call(CANCEL, { id: "theirs" })).rejects.toThrow(refused);
      expect(readdirSync(dir)).toEqual(before);
      expect(v.snapshot()).toEqual(v.before);
      expect(lstatSync(f.eventsDir()).isSymbolicLink()).toBe(true);
    });
  }

  it("events/ as a regular file or a FIFO is refused at once", async () => {
    const f = fixture();
    writeFileSync(f.eventsDir(), "");
    await expect(f.call(CREATE, oneShot())).rejects.toThrow("events: is a regular file, not a directory");
    rmSync(f.eventsDir());
    execFileSync("mkfifo", [f.eventsDir()]);
    const started = Date.now();
    await expect(f.call(LIST)).rejects.toThrow("events: is a FIFO, not a directory");
    await expect(f.call(CREATE, oneShot())).rejects.toThrow(/FIFO/);
    expect(Date.now() - started).toBeLessThan(2000);
  });
});

describe("planted entries inside events/", () => {
  it("a symlinked event file pointing at another channel's event: listed as no event, not cancelled, not overwritten", async () => {
    const f = fixture();
    const v = victim(f);
    mkdirSync(f.eventsDir());
    symlinkSync(join(v.dir, "theirs.json"), join(f.eventsDir(), "mine.json"));
    const { details } = await f.call(LIST);
    expect(details.events).toEqual([]);
    expect(details.problems).toEqual([{ id: "mine", problem: "is a symlink: never an event file (the scheduler skips it)" }]);
    await expect(f.call(CANCEL, { id: "mine" })).rejects.toThrow("events/mine.json: is a symlink (the runner never follows symlinks in a channel's directory); it is not an event file, and nothing was changed");
    await expect(f.call(CREATE, { ...oneShot(), id: "mine" })).rejects.toThrow('an event with id "mine" already exists');
    expect(v.snapshot()).toEqual(v.before);
    expect(lstatSync(join(f.eventsDir(), "mine.json")).isSymbolicLink()).toBe(true);
    expect(readdirSync(f.eventsDir())).toEqual(["mine.json"]);
  });

  it("a dangling symlink where a new event would go is not written through", async () => {
    const f = fixture();
    mkdirSync(f.eventsDir());
    symlinkSync(join(outside, "created.json"), join(f.eventsDir(), "trap.json"));
    await expect(f.call(CREATE, { ...oneShot(), id: "trap" })).rejects.toThrow('an event with id "trap" already exists');
    expect(readdirSync(outside)).not.toContain("created.json");
  });

  it("a FIFO named like an event never blocks a tool: listed as no event, refused by cancel and create", async () => {
    const f = fixture();
    mkdirSync(f.eventsDir());
    execFileSync("mkfifo", [join(f.eventsDir(), "fifo.json")]);
    const started = Date.now();
    expect((await f.call(LIST)).details.problems).toEqual([{ id: "fifo", problem: "is a FIFO, not a regular file" }]);
    await expect(f.call(CANCEL, { id: "fifo" })).rejects.toThrow("events/fifo.json: is a FIFO, not a regular file");
    await expect(f.call(CREATE, { ...oneShot(), id: "fifo" })).rejects.toThrow("already exists");
    expect(Date.now() - started).toBeLessThan(2000);
    expect(lstatSync(join(f.eventsDir(), "fifo.json")).isFIFO()).toBe(true);
  });

  it("a hard link to another channel's event is only unlinked here by cancel: theirs stays", async () => {
    const f = fixture();
    const v = victim(f);
    mkdirSync(f.eventsDir());
    linkSync(join(v.dir, "theirs.json"), join(f.eventsDir(), "copy.json"));
    // It names the other channel, so it is not this channel's event (the scheduler refuses it too).
    expect((await f.call(LIST)).details.problems).toEqual([{ id: "copy", problem: expect.stringMatching(/^"channelId" is "cli\/other", but this file is in the events directory of cli\/local/) }]);
    await f.call(CANCEL, { id: "copy" });
    expect(v.snapshot()).toEqual(v.before);
  });
});

describe("ids that are paths", () => {
  it("cancel refuses every id that is not one plain name, before touching a file", async () => {
    const f = fixture();
    const v = victim(f);
    await f.call(CREATE, { ...oneShot(), id: "mine" });
    const rel = `../../other/events/theirs`;
    for (const id of [rel, `${rel}.json`, join(v.dir, "theirs"), "/etc/passwd", "a/b", "..", ".", ".mine", "", "  ", "mine\n", "mine\u0000"]) {
      await expect(f.call(CANCEL, { id })).rejects.toThrow(/is not an event id: ids are the names reminders\.event\.list shows/);
    }
    expect(v.snapshot()).toEqual(v.before);
    expect(f.eventFiles()).toEqual(["mine.json"]);
  });

  it("create refuses such ids too, and writes nothing anywhere", async () => {
    const f = fixture();
    const v = victim(f);
    for (const id of ["../other/events/x", "../../../../tmp/x", "/tmp/x", "a/b", "..", ".x", "x\n", ""]) {
      await expect(f.call(CREATE, { ...oneShot(), id })).rejects.toThrow(/is not usable: an id is 1-80 letters/);
    }
    expect(f.eventFiles()).toEqual([]);
    expect(v.snapshot()).toEqual(v.before);
  });

  it("an event always targets the calling channel: another channelId cannot be smuggled in", async () => {
    const f = fixture();
    // Extra keys are not parameters; the file is built from the checked ones only.
    const { details } = await f.call(CREATE, { ...oneShot(), channelId: "cli/other", type: "immediate" } as object);
    expect(JSON.parse(readFileSync(join(f.eventsDir(), `${details.id}.json`), "utf8"))).toMatchObject({ channelId: "cli/local", type: "one-shot" });
    expect(f.eventFiles("cli/other")).toEqual([]);
  });
});
