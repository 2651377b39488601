import { afterEach, describe, expect, it } from "@jest/globals";
import type { ChannelMessage } from "@mom/contracts";
import { mkdirSync, readFileSync, renameSync } from "node:fs";
import { join } from "node:path";
import { eventually } from "../support/discord-stack.js";
import { startStack, type Stack, type StackOptions } from "../support/stack.js";
import { outboundEvents } from "../support/streams.js";

// Bad or heavy input that reaches a run: each is answered once, clearly, and loses nothing.
let s: Stack | undefined;
afterEach(async () => {
  await s?.stop();
  s = undefined;
});
async function stack(opts: StackOptions = {}): Promise<Stack> {
  s = await startStack({ cli: false, ...opts });
  return s;
}

function message(text: string, extra: Partial<ChannelMessage> = {}): ChannelMessage {
  return {
    id: `m-${Math.random().toString(36).slice(2)}`,
    channelId: "local",
    timestamp: new Date().toISOString(),
    sender: { id: "u-tester", username: "tester", isBot: false },
    text,
    attachments: [],
    isMention: true,
    ...extra,
  };
}
const publish = (st: Stack, m: ChannelMessage, msgId = m.id) => st.bus.publish(st.bus.subjects.channel("in", { adapter: "cli", channelId: "local" }), m, msgId);
const ended = async (st: Stack) => (await outboundEvents(st.bus)).filter((e) => e.event.type === "run_ended");

describe("bad input that reaches a run", () => {
  it("answers a message re-sent under a new msg-id once, and says so in the log (during its run and after)", async () => {
    const st = await stack();
    st.llm.enqueue({ text: "the one answer", delayMs: 1000 });
    const m = message("@mom hello once");
    await publish(st, m, "first-copy");
    await st.llm.waitForRequests(1);
    await publish(st, m, "second-copy");
    await eventually(() => st.logs.find((l) => l.msg === "duplicate message: already taken in; not answering it again" && l.msgId === m.id), "the duplicate logged");
    await eventually(async () => (await ended(st)).length === 1, "the answer");
    await publish(st, m, "third-copy");
    const late = await eventually(() => st.logs.find((l) => l.msg === "duplicate message: already answered; not answering it again" && l.msgId === m.id), "the late duplicate logged");
    expect(late.answeredBy).toEqual(expect.any(String));
    // A later message is still answered, after both duplicates were passed over.
    await publish(st, message("@mom and this"));
    await eventually(async () => (await ended(st)).length === 2, "the next answer");
    expect(st.llm.requests).toHaveLength(2);
    const started = (await outboundEvents(st.bus)).filter((e) => e.event.type === "run_started");
    expect(started.map((e) => (e.event as { trigger: { messageId: string } }).trigger.messageId).filter((id) => id === m.id)).toHaveLength(1);
  });

  it("publishes the end of a run whose answer is over 1 MB, cut with a note; the whole answer stays in log.jsonl", async () => {
    const st = await stack();
    // Twelve 100,000-character words: the fake model streams them as twelve deltas.
    const answer = Array.from({ length: 12 }, (_, i) => String.fromCharCode(97 + i).repeat(100_000)).join(" ");
    st.llm.enqueue({ text: answer });
    await publish(st, message("@mom write a lot"));
    const [end] = await eventually(async () => {
      const e = await ended(st);
      return e.length ? e : undefined;
    }, "run_ended");
    const body = end!.event as { stopReason: string; finalText: string };
    expect(body.stopReason).toBe("stop");
    expect(body.finalText.startsWith("a".repeat(100_000))).toBe(true);
    expect(body.finalText).toMatch(/\[answer cut: 100,000 of 1,200,011 characters shown; the whole answer is in channels\/cli\/local\/log\.jsonl\]$/);
    const log = readFileSync(join(st.loaded.paths.workspaceDir, "channels", "cli", "local", "log.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
    expect(log.find((e) => e.isBot)?.text).toBe(answer);
    expect(st.logs.filter((l) => String(l.msg).includes("could not publish"))).toEqual([]);
  });

  it("an answer that cannot be written to log.jsonl still reaches the channel, saying so, and is not run again", async () => {
    const st = await stack();
    st.llm.enqueue({ text: "the unsaved answer", delayMs: 1000 });
    await publish(st, message("@mom answer this"));
    await st.llm.waitForRequests(1);
    // The log becomes unwritable while the model answers (as a read-only volume would make it).
    const log = join(st.loaded.paths.workspaceDir, "channels", "cli", "local", "log.jsonl");
    renameSync(log, `${log}.bak`);
    mkdirSync(log);
    const [end] = await eventually(async () => {
      const e = await ended(st);
      return e.length ? e : undefined;
    }, "run_ended");
    const body = end!.event as { stopReason: string; finalText: string };
    expect(body.stopReason).toBe("stop");
    expect(body.finalText).toMatch(/^the unsaved answer\n\n_\(mom could not save this answer in the channel's log\.jsonl, so it will not be part of this channel's history: .*(EISDIR|log\.jsonl: is a directory, not a regular file).*\)_$/s);
    expect(st.logs.find((l) => l.msg === "could not write the answer to log.jsonl; publishing it anyway")).toBeDefined();
    // Done: not redelivered and answered again.
    await new Promise((r) => setTimeout(r, 1500));
    expect(st.llm.requests).toHaveLength(1);
    expect(await ended(st)).toHaveLength(1);
  });

  it("an abort on mom.ctl needs the requester or an admin; the aborted run's pending approval is reported denied, not expired", async () => {
    const st = await stack({ config: { policy: { ask: ["bash"] } } });
    st.llm.enqueue({ toolCalls: [{ name: "bash", arguments: { label: "Risky", command: "echo risky" } }] }, { text: "never said" });
    await publish(st, message("@mom do the risky thing"));
    const requested = await eventually(async () => (await outboundEvents(st.bus)).find((e) => e.event.type === "approval_requested"), "approval_requested");
    const ctl = st.bus.subjects.channel("ctl", { adapter: "cli", channelId: "local" });
    const abort = (by?: { id: string; username: string }) => ({ type: "abort", ts: new Date().toISOString(), ...(by && { requestedBy: by }) });
    await st.bus.publish(ctl, abort(), "abort-anonymous");
    await st.bus.publish(ctl, abort({ id: "u-mallory", username: "mallory" }), "abort-mallory");
    await eventually(() => st.logs.filter((l) => String(l.msg).startsWith("abort refused: ")).length === 2, "both aborts refused");
    expect(st.logs.map((l) => l.msg)).toEqual(
      expect.arrayContaining([
        "abort refused: it does not say who asks (requestedBy)",
        "abort refused: u-mallory is neither an admin of adapter cli nor the person whose message started the run",
      ]),
    );
    expect(await ended(st)).toHaveLength(0);
    await st.bus.publish(ctl, abort({ id: "u-tester", username: "tester" }), "abort-tester");
    const [end] = await eventually(async () => {
      const e = await ended(st);
      return e.length ? e : undefined;
    }, "run_ended");
    expect(end!.event).toMatchObject({ stopReason: "aborted" });
    const resolved = (await outboundEvents(st.bus)).find((e) => e.event.type === "approval_resolved");
    expect(resolved?.event).toEqual({ type: "approval_resolved", approvalId: (requested.event as { approvalId: string }).approvalId, outcome: "denied", decidedBy: "@tester" });
  });
});
