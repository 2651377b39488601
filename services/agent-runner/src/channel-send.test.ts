import { describe, expect, it } from "@jest/globals";
import type { Bus } from "@mom/bus";
import type { MomConfig } from "@mom/config";
import { type ChannelMessage, createSubjects, type OutboundEvent, type Receipt } from "@mom/contracts";
import { pino } from "pino";
import { ActiveRun, type RunInProgress } from "./active-run.js";
import { channelSend, postSender } from "./channel-send.js";

const subjects = createSubjects("mom");
const message = (id: string, sender: { id: string; username: string }): ChannelMessage => ({
  id,
  channelId: "-100200",
  timestamp: new Date().toISOString(),
  sender: { ...sender, isBot: false },
  text: "post it",
  attachments: [],
  isMention: true,
});

/** A bus that records publishes and files, and answers every post with `answer` as the target's ingress would. */
function stubBus(answer: (postId: string) => Receipt | undefined) {
  const published: Array<{ subject: string; data: OutboundEvent; msgId: string }> = [];
  const files: string[] = [];
  const bus = {
    subjects,
    async putFile(name: string) {
      files.push(name);
    },
    async streamState() {
      return { lastSeq: 41, created: "" };
    },
    async publish(subject: string, data: OutboundEvent, msgId: string) {
      published.push({ subject, data, msgId });
      return { duplicate: false, seq: 1 };
    },
    follow(o: { from: number; filterSubject: string; handler: (d: { data: Receipt }) => void }) {
      expect(o.from).toBe(42);
      const postId = published.at(-1)!.data.runId;
      const r = answer(postId);
      const t = r ? setTimeout(() => o.handler({ data: r }), 5) : undefined;
      return { stop: () => clearTimeout(t), done: Promise.resolve(), expect() {} };
    },
  } as unknown as Bus;
  return { bus, published, files };
}

const config = {
  adapters: { tg: { type: "telegram" }, cli: { type: "cli" } },
  send: { routes: [{ from: "tg/-100200", to: ["tg/-100300"] }], timeoutSeconds: 1 },
  attachments: { maxBytes: 1000 },
} as unknown as Pick<MomConfig, "adapters" | "send" | "attachments">;

function setup(answer: (postId: string) => Receipt | undefined, run?: Partial<RunInProgress>) {
  const { bus, published, files } = stubBus(answer);
  const active = new ActiveRun();
  if (run) active.current = { runId: "run-1", message: message("m1", { id: "1001", username: "ana" }), publisher: {} as never, receipts: [], ...run };
  const deps = {
    bus,
    ref: { adapter: "tg", channelId: "-100200" },
    active,
    config,
    policy: { layers: [] },
    knownChannels: async () => [
      { adapter: "tg", channelId: "-100200" },
      { adapter: "tg", channelId: "-100300" },
    ],
    workspaceDir: "/nowhere",
    publishRetryMs: 0,
    log: pino({ level: "silent" }),
  };
  return { send: postSender(deps), published, files, deps };
}

const delivered = (postId: string, type: Receipt["type"], detail: string): Receipt => ({ receiptId: `${postId}:d`, type, runId: postId, toolCallId: "", toolId: "chat.deliver", risk: "write", ts: "", argsHash: "", detail });

describe("the runner's side of send", () => {
  it("publishes one post on the target's outbound subject and answers with the target ingress's delivery receipt", async () => {
    const t = setup((id) => delivered(id, "delivery.succeeded", "accepted by the platform as 7"), {});
    const said = await t.send({ channel: "tg/-100300", text: "hello ops", file: { bytes: new Uint8Array([1]), filename: "a.txt", path: "channels/tg/-100200/a.txt", size: 1 } });
    expect(said).toBe("Posted in tg/-100300 with a.txt (accepted by the platform as 7).");
    expect(t.published).toHaveLength(1);
    const [p] = t.published;
    expect(p!.subject).toBe("mom.out.tg.-100300");
    expect(p!.msgId).toBe(`${p!.data.runId}:0`);
    expect(p!.data.event).toEqual({
      type: "post",
      text: "hello ops",
      file: { objectKey: t.files[0], filename: "a.txt", path: "channels/tg/-100200/a.txt", size: 1 },
      from: "tg/-100200",
      fromRunId: "run-1",
      requestedBy: { adapter: "tg", id: "1001", username: "ana" },
      access: "check",
    });
    // The file goes into the target channel's part of the files bucket (the target's runner saves only its own).
    expect(t.files[0]).toMatch(/^tg\/-100300\/[0-9a-f-]+\/a\.txt$/);
  });

  it("a refusal by the target's ingress, and no answer at all, are errors the model reads", async () => {
    const refused = setup((id) => delivered(id, "delivery.failed", "not posted: @ana cannot see this telegram chat"), {});
    await expect(refused.send({ channel: "tg/-100300", text: "x" })).rejects.toThrow("not posted in tg/-100300: @ana cannot see this telegram chat");
    const silent = setup(() => undefined, {});
    await expect(silent.send({ channel: "tg/-100300", text: "x" })).rejects.toThrow(/no word from the tg ingress within 1 s that tg\/-100300 got the message .*do not send it again unless they ask/);
  });

  it("refuses before anything is published: no run, someone else's message steered into the run, a channel mom never saw, the policy's no", async () => {
    const none = setup(() => undefined);
    await expect(none.send({ channel: "tg/-100300", text: "x" })).rejects.toThrow("no run in progress");
    const steered = setup(() => undefined, { steered: [message("m2", { id: "1002", username: "bob" })] });
    await expect(steered.send({ channel: "tg/-100300", text: "x" })).rejects.toThrow("not sent: messages from @bob were added to this run started by @ana");
    const own = setup((id) => delivered(id, "delivery.succeeded", "ok"), { steered: [message("m3", { id: "1001", username: "ana" })] });
    await expect(own.send({ channel: "tg/-100300", text: "x" })).resolves.toMatch(/^Posted in tg\/-100300/);
    const unseen = setup(() => undefined, {});
    unseen.deps.knownChannels = async () => [];
    await expect(postSender(unseen.deps)({ channel: "tg/-100300", text: "x" })).rejects.toThrow("not sent: mom has never had a message in tg/-100300");
    const refused = setup(() => undefined, {});
    await expect(refused.send({ channel: "tg/-100400", text: "x" })).rejects.toThrow("not sent: config.json send.routes allows no post from tg/-100200 to tg/-100400");
    for (const t of [none, steered, unseen, refused]) expect(t.published).toEqual([]);
  });

  it("is offered only with a route from the channel that policy leaves in", () => {
    const t = setup(() => undefined);
    expect(channelSend(t.deps).offered).toBe(true);
    expect(channelSend(t.deps).prompt()).toContain("From here you may post to: tg/-100300.");
    expect(channelSend({ ...t.deps, policy: { layers: [{ deny: ["send"] }] } }).offered).toBe(false);
    expect(channelSend({ ...t.deps, ref: { adapter: "tg", channelId: "-100300" } }).offered).toBe(false);
    expect(channelSend({ ...t.deps, ref: { adapter: "tg", channelId: "-100300" } }).prompt()).toBe("");
  });
});
