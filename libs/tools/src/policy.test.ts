import { describe, expect, it } from "@jest/globals";
import { decide, isAllowed, matchesList, type PolicyLayers } from "./policy.js";

describe("matchesList", () => {
  it.each([
    ["bash", ["bash"], true],
    ["sessions_list", ["sessions_*"], true],
    ["github.issues.create", ["github.*"], true], // * spans the dots of a tool id
    ["github.issues.create", ["gitlab.*"], false],
    ["foo.bar.baz", ["*", "!foo*"], false],
    ["bar.baz.qux", ["*", "!foo*"], true],
    ["read", ["!bash"], true],
    ["bash", ["!bash"], false],
    ["read", [], false],
  ] as const)("%s against %j → %s", (id, patterns, expected) => {
    expect(matchesList(id, [...patterns])).toBe(expected);
  });
});

describe("layers narrow, deny wins", () => {
  const table: Array<[string, PolicyLayers, boolean]> = [
    ["bash", { layers: [] }, true],
    ["bash", { layers: [{ allow: ["*"] }, { allow: ["read", "write"] }] }, false],
    ["read", { layers: [{ allow: ["*"] }, { allow: ["read", "write"] }] }, true],
    // a later layer cannot widen: channel allows bash but the adapter already narrowed it away
    ["bash", { layers: [undefined, { allow: ["read"] }, { allow: ["bash", "read"] }] }, false],
    ["bash", { layers: [{ allow: ["*"], deny: ["bash"] }, { allow: ["bash"] }] }, false],
    ["bash", { layers: [{ allow: ["*"] }, undefined, undefined, { deny: ["bash"] }] }, false],
    ["github.issues.create", { layers: [{ allow: ["github.*", "!github.*.delete"] }] }, true],
    ["github.repo.delete", { layers: [{ allow: ["github.*", "!github.*.delete"] }] }, false],
  ];
  it.each(table)("%s with %j → %s", (id, p, allowed) => {
    expect(isAllowed(id, p).allowed).toBe(allowed);
  });
  it("says which layer refused", () => {
    expect(isAllowed("bash", { layers: [undefined, undefined, { deny: ["bash"] }] }).reason).toBe("denied by channel policy");
    expect(isAllowed("bash", { layers: [undefined, { allow: ["read"] }] }).reason).toBe("not allowed by adapter policy");
  });
});

describe("decide", () => {
  const none: PolicyLayers = { layers: [] };
  it("asks for destructive custom tools by default, not for built-ins", () => {
    expect(decide("files.repo.wipe", "destructive", true, none).decision).toBe("ask");
    expect(decide("bash", "destructive", false, none).decision).toBe("allow");
    expect(decide("notes.todo.add", "write", true, none).decision).toBe("allow");
  });
  it("asks per id or glob, auto-allows per glob, and denies before asking", () => {
    expect(decide("bash", "destructive", false, { layers: [], ask: ["bash"] }).decision).toBe("ask");
    expect(decide("files.repo.wipe", "destructive", true, { layers: [], autoAllow: ["files.*"] }).decision).toBe("allow");
    expect(decide("bash", "destructive", false, { layers: [{ deny: ["bash"] }], ask: ["bash"] }).decision).toBe("deny");
  });
});
