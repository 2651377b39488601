import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { existsSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { bwrapAvailable } from "./bwrap-executor.js";
import { type ChannelSandbox, Sandbox } from "./sandbox.js";
import { makeDataDir, run } from "./test-support.js";

if (!bwrapAvailable()) throw new Error("bubblewrap (bwrap) is missing or cannot create namespaces here: `npm test` installs it");
if (!existsSync("/usr/bin/perl")) throw new Error("this test's attacker loop needs /usr/bin/perl (perl-base)");

// The attacker: a background command of channel a (a `process start`, in its bubblewrap sandbox)
// that keeps exchanging its directory `d` with a symlink into channel b's directory
// (renameat2(RENAME_EXCHANGE): `d` is never missing, only one or the other) while the agent's
// file tools write into `d`.
const SWAPPER = (target: string) =>
  `mkdir -p d && ln -sfn ${target} l && n=316 && { [ "$(uname -m)" != aarch64 ] || n=276; } && ` +
  `exec perl -e 'my ($d, $l) = ("d", "l"); for (;;) { syscall(${"$"}ARGV[0], -100, $d, -100, $l, 2) == 0 or die "renameat2: $!" }' $n`;

describe("the file tools against a directory swapped for a symlink while they write", () => {
  const dirs = makeDataDir();
  let ch: ChannelSandbox;
  const stop = new AbortController();
  let swapper: Promise<unknown>;
  beforeAll(async () => {
    ch = new Sandbox({ type: "bwrap", memoryMb: 256, tmpMb: 16 }, dirs).forChannel(dirs.channelA, []);
    expect((await run(ch.executor, "echo up")).output).toBe("up\n");
    swapper = run(ch.executor, SWAPPER(dirs.channelB), { signal: stop.signal, timeoutMs: 120_000 });
    // Until the loop runs, `d` is a plain directory.
    for (let i = 0; i < 100 && !existsSync(join(dirs.channelA, "l")); i++) await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 200));
  });
  afterAll(async () => {
    stop.abort();
    await swapper;
    rmSync(dirs.dataDir, { recursive: true, force: true });
  });

  // Unfixed, the write tool's open(O_CREAT) and mkdir -p followed the symlink: empty files and
  // directories of the attacker's naming appeared in channel b (or anywhere the runner may write:
  // /etc/nologin for a root runner), refused only after they were made.
  it("never creates a file or directory in another channel's directory", async () => {
    const outcomes = { written: 0, refused: 0 };
    for (let i = 0; i < 400; i++) {
      await ch.files.writeFile(`d/w-${i}.txt`, "planted").then(
        () => outcomes.written++,
        () => outcomes.refused++,
      );
      await ch.files.mkdir(`d/m-${i}/deeper`).then(
        () => outcomes.written++,
        () => outcomes.refused++,
      );
    }
    // The race was run: some calls found `d` a directory, some the symlink.
    expect(outcomes.written).toBeGreaterThan(0);
    expect(outcomes.refused).toBeGreaterThan(0);
    expect(readdirSync(dirs.channelB).filter((n) => /^[wm]-/.test(n))).toEqual([]);
  }, 120_000);
});
