import { afterEach, beforeEach, describe, expect, it } from "@jest/globals";
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { WorkspaceLayout } from "@mom/store";
import { pino } from "pino";
import { ChannelList } from "./channel-list.js";

let root: string;
let layout: WorkspaceLayout;
const warnings: string[] = [];
const log = pino({ level: "warn" }, { write: (line: string) => void warnings.push(JSON.parse(line).msg) });

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "mom-channel-list-"));
  layout = new WorkspaceLayout(root);
  warnings.length = 0;
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const addChannel = (adapter: string, channelId: string) => mkdirSync(layout.channelDir({ adapter, channelId }), { recursive: true });

/** Asks until the list has `name` (the refresh it started runs in the background), at most `tries` times. */
async function eventually(list: ChannelList, name: string, tries = 200): Promise<string[]> {
  for (let i = 0; i < tries; i++) {
    const names = await list.get();
    if (names.includes(name)) return names;
    await new Promise((r) => setTimeout(r, 5));
  }
  return list.get();
}

describe("ChannelList", () => {
  it("lists the workspace's channels as qualified ids", async () => {
    addChannel("slack-acme", "C1");
    addChannel("cli", "local");
    expect(await new ChannelList(layout, log).get()).toEqual(["cli/local", "slack-acme/C1"]);
  });

  it("keeps its list until it is older than the refresh time", async () => {
    addChannel("cli", "a");
    const list = new ChannelList(layout, log, 3_600_000);
    expect(await list.get()).toEqual(["cli/a"]);
    addChannel("cli", "b");
    expect(await list.get()).toEqual(["cli/a"]);
  });

  it("lists again in the background once the list is stale, and the next run sees the new channel", async () => {
    addChannel("cli", "a");
    const list = new ChannelList(layout, log, 0);
    expect(await list.get()).toEqual(["cli/a"]);
    addChannel("cli", "b");
    expect(await eventually(list, "cli/b")).toEqual(["cli/a", "cli/b"]);
  });

  it("keeps the list it had, and says so, when the directory cannot be read", async () => {
    // channels/ is a symlink swapped in one rename for one to a file: a refresh running meanwhile
    // never sees the directory missing (which means "no channels", not "cannot read").
    mkdirSync(`${layout.channelsDir}.real`, { recursive: true });
    symlinkSync(`${layout.channelsDir}.real`, layout.channelsDir);
    addChannel("cli", "a");
    const list = new ChannelList(layout, log, 0);
    expect(await list.get()).toEqual(["cli/a"]);
    writeFileSync(`${layout.channelsDir}.file`, "not a directory");
    symlinkSync(`${layout.channelsDir}.file`, `${layout.channelsDir}.next`);
    renameSync(`${layout.channelsDir}.next`, layout.channelsDir);
    for (let i = 0; i < 200 && warnings.length === 0; i++) {
      expect(await list.get()).toEqual(["cli/a"]);
      await new Promise((r) => setTimeout(r, 5));
    }
    expect(warnings).toContain("could not list the workspace's channels; prompts keep the list they had");
  });
});
