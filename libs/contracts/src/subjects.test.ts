import { describe, expect, it } from "@jest/globals";
import { createSubjects, subjects } from "./subjects.js";

describe("subjects", () => {
  it("builds the documented subjects", () => {
    const ref = { adapter: "slack-acme", channelId: "C0A34FL8PMH" };
    expect(subjects.channel("in", ref)).toBe("mom.in.slack-acme.C0A34FL8PMH");
    expect(subjects.channel("out", ref)).toBe("mom.out.slack-acme.C0A34FL8PMH");
    expect(subjects.channel("ctl", ref)).toBe("mom.ctl.slack-acme.C0A34FL8PMH");
    expect(subjects.dlq("agent-runner")).toBe("mom.dlq.agent-runner");
    expect(subjects.wildcard("in")).toBe("mom.in.>");
    expect(subjects.wildcard("out", "cli")).toBe("mom.out.cli.*");
    expect(subjects.stream("IN")).toBe("MOM_IN");
  });

  it("parses what it builds, including escaped ids", () => {
    const ref = { adapter: "discord", channelId: "weird.id with>chars" };
    const subject = subjects.channel("ctl", ref);
    expect(subject.split(".")).toHaveLength(4);
    expect(subjects.parse(subject)).toEqual({ kind: "ctl", ...ref });
    expect(subjects.parse("mom.in.cli")).toBeUndefined();
    expect(subjects.parse("other.in.cli.x")).toBeUndefined();
    expect(subjects.parse("mom.nope.cli.x")).toBeUndefined();
  });

  it("namespaces subjects and streams", () => {
    const t = createSubjects("t-42");
    expect(t.channel("in", { adapter: "cli", channelId: "x" })).toBe("t-42.in.cli.x");
    expect(t.stream("DLQ")).toBe("T_42_DLQ");
    expect(() => createSubjects("Bad.ns")).toThrow();
  });
});
