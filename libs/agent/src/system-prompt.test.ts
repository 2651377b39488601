import { describe, expect, it } from "@jest/globals";
import { buildSystemPrompt, type SystemPromptInput } from "./system-prompt.js";

const base: SystemPromptInput = {
  qualifiedChannelId: "slack/C-PUBLIC",
  workspaceDir: "/data/workspace",
  channelDir: "/data/workspace/channels/slack/C-PUBLIC",
  memory: { global: "", channel: "" },
  users: [],
  now: new Date("2026-03-01T10:00:00Z"),
  timezone: "UTC",
  sandbox: "bubblewrap",
};

// Issue 30, item 7: a prompt reaches only its own channel.
describe("the system prompt", () => {
  it("names no other channel unless the operator opted in (runner.listChannels)", () => {
    const prompt = buildSystemPrompt(base);
    expect(prompt).not.toContain("Channels mom knows");
    expect(prompt.match(/slack\/[A-Z-]+/g)!.every((id) => id === "slack/C-PUBLIC")).toBe(true);
    const listed = buildSystemPrompt({ ...base, channels: ["slack/C-PUBLIC", "slack/D-PRIVATE-DM"] });
    expect(listed).toContain("## Channels mom knows\n- slack/C-PUBLIC\n- slack/D-PRIVATE-DM\n\n## Environment");
  });

  it("tells the model to schedule in its own channel's events/ and that other targets are refused", () => {
    const prompt = buildSystemPrompt(base);
    expect(prompt).toContain("writing JSON files into /data/workspace/channels/slack/C-PUBLIC/events/");
    expect(prompt).toContain("An event file can only target this channel");
    expect(prompt).toContain('"channelId": "slack/C-PUBLIC"');
    expect(prompt).not.toContain("/data/workspace/events/");
    // With the reminders integration installed, its tool instead (the Custom tools section lists it).
    expect(prompt).toContain("If the Custom tools section lists `reminders.event.create`, use `reminders.event.create`");
  });

  it("says the global memory and skills are read-only, unless the channel is a shared writer", () => {
    const reader = buildSystemPrompt(base);
    expect(reader).toContain("MEMORY.md            global memory, shared by all channels, read-only here");
    expect(reader).toContain("The global /data/workspace/MEMORY.md is read-only here");
    expect(reader).toContain("Write what should outlive this conversation to /data/workspace/channels/slack/C-PUBLIC/MEMORY.md");
    const writer = buildSystemPrompt({ ...base, sharedWritable: true });
    expect(writer).not.toContain("read-only here");
    expect(writer).toContain("/data/workspace/MEMORY.md for facts that matter everywhere");
  });
});
