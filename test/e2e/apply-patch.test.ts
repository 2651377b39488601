import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import type { ChannelMessage, OutboundEvent } from "@mom/contracts";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { startStack, type Stack } from "../support/stack.js";
import { outboundEvents, receiptsOf } from "../support/streams.js";

// apply_patch as the agent uses it: the scripted model writes two files with bash (bubblewrap),
// sends a two-file patch whose second hunk does not fit (nothing changes; the error names the file
// and the hunk), then a good one (both files change); every call has its receipt.
describe("apply_patch end to end (scripted model, real NATS, runner, bubblewrap)", () => {
  let st: Stack;
  beforeAll(async () => {
    st = await startStack({ cli: false, config: { sandbox: { type: "bwrap" } } });
  });
  afterAll(async () => {
    await st?.stop();
  });

  const patch = (bLine: string) => `--- a/a.txt
+++ b/a.txt
@@ -1,2 +1,2 @@
 one
-two
+TWO
--- a/b.txt
+++ b/b.txt
@@ -1,2 +1,2 @@
 alpha
-${bLine}
+BETA
`;

  it("a patch with a bad hunk changes nothing; a good one changes both files", async () => {
    const ref = { adapter: "cli", channelId: "patching" };
    st.llm.enqueue(
      { toolCalls: [{ name: "bash", arguments: { label: "Write two files", command: "printf 'one\\ntwo\\n' > a.txt; printf 'alpha\\nbeta\\n' > b.txt" } }] },
      { toolCalls: [{ name: "apply_patch", arguments: { label: "Patch both", patch: patch("gamma") } }] },
      { toolCalls: [{ name: "apply_patch", arguments: { label: "Patch both again", patch: patch("beta") } }] },
      { text: "Patched." },
    );
    const m: ChannelMessage = { id: "p1", channelId: ref.channelId, timestamp: new Date().toISOString(), sender: { id: "u1", username: "ana", isBot: false }, text: "@mom patch them", attachments: [], isMention: true };
    await st.bus.publish(st.bus.subjects.channel("in", ref), m, m.id);
    let events: OutboundEvent[] = [];
    for (let i = 0; i < 600 && !events.some((e) => e.event.type === "run_ended"); i++) {
      await new Promise((r) => setTimeout(r, 50));
      events = await outboundEvents(st.bus, ref);
    }
    const ends = events.map((e) => e.event).filter((e): e is Extract<OutboundEvent["event"], { type: "tool_execution_end" }> => e.type === "tool_execution_end" && e.toolName === "apply_patch");
    expect(ends).toHaveLength(2);
    expect(ends[0]).toMatchObject({ isError: true });
    expect(ends[0]!.resultText).toContain('b.txt: hunk 1 of 1 (@@ -1,2 +1,2 @@) does not apply: the file has no "alpha" near line 1. Nothing was changed.');
    expect(ends[1]).toMatchObject({ isError: false, resultText: "Applied 2 hunks to 2 files: a.txt (+1 −1), b.txt (+1 −1)" });
    const dir = join(st.dataDir, "workspace", "channels", "cli", "patching");
    expect(readFileSync(join(dir, "a.txt"), "utf8")).toBe("one\nTWO\n");
    expect(readFileSync(join(dir, "b.txt"), "utf8")).toBe("alpha\nBETA\n");
    const receipts = (await receiptsOf(st.bus, ref)).filter((r) => r.toolId === "apply_patch").map((r) => [r.type, r.risk]);
    expect(receipts).toEqual(expect.arrayContaining([["tool.call.failed", "write"], ["tool.call.succeeded", "write"]]));
  }, 60_000);
});
