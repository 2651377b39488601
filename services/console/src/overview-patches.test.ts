import { describe, expect, it } from "@jest/globals";
import type { BusEntry } from "@mom/bus";
import type { OutboundEvent } from "@mom/contracts";
import { LiveState } from "./live-state.js";
import { OverviewPatches } from "./overview-patches.js";
import { rowId, Views } from "./views.js";

let now = new Date("2026-03-02T12:00:00Z");
let seq = 0;
const out = (channel: string, runId: string, event: OutboundEvent["event"]): BusEntry =>
  ({ kind: "out", stream: "MOM_OUT", seq: ++seq, time: now.toISOString(), subject: "x", channel, data: { runId, seq, ts: now.toISOString(), event } }) as BusEntry;
const started = (channel: string, runId: string) => out(channel, runId, { type: "run_started", trigger: { messageId: `m-${runId}`, senderId: "u1", username: "ann", text: "hi" }, model: "fake/m" });

function setup(channels: string[]) {
  const state = new LiveState(() => now);
  channels.forEach((c, i) => state.outbound(started(c, `r${i}`)));
  const changed: string[] = [];
  state.on("change", (cs) => changed.push(...cs));
  const patches = new OverviewPatches(state, new Views(), "e1");
  return { state, patches, changed };
}
const rowsIn = (patch: string) => [...patch.matchAll(/<tr id="([^"]+)"/g)].map((m) => m[1]);

describe("OverviewPatches", () => {
  it("a page rendered at the current version gets nothing on connecting; an older one gets the whole body once", () => {
    const { state, patches } = setup(["cli/a", "cli/b"]);
    expect(patches.start(`e1.${state.version}`)).toEqual([]);
    const stale = new OverviewPatches(state, new Views(), "e1").start(`e0.${state.version}`); // another process's page
    expect(stale).toHaveLength(1);
    expect(stale[0]).toContain('id="overview-body" hx-swap-oob="true"');
    expect(rowsIn(stale[0]!)).toEqual([rowId("cli/a"), rowId("cli/b")]);
  });

  it("a change to one channel sends that row alone, repeated changes of it once, and the figures separately", () => {
    const { state, patches, changed } = setup(["cli/a", "cli/b", "cli/c"]);
    patches.start(`e1.${state.version}`);
    state.outbound(out("cli/b", "r1", { type: "run_ended", stopReason: "error", errorMessage: "x", finalText: "", usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } }, durationMs: 5 }));
    state.outbound(started("cli/b", "r9"));
    expect(changed).toEqual(["cli/b", "cli/b"]);
    patches.note(changed);
    const sent = patches.flush();
    expect(sent).toHaveLength(2);
    expect(rowsIn(sent[0]!)).toEqual([rowId("cli/b")]);
    expect(sent[0]).toMatch(/hx-swap-oob="true"[^>]*>[\s\S]*running[\s\S]*<td>2<\/td>\s*<td>1<\/td>/);
    // The sections that read differently: today's figures and recent runs, not the runners or the count.
    expect(sent[1]).toContain('<section id="today"');
    expect(sent[1]).toContain('<section id="recent"');
    expect(sent[1]).not.toContain('id="runners"');
    expect(sent[1]).not.toContain('id="channel-count"');
    expect(rowsIn(sent[1]!)).toEqual([]);
    // Nothing changed since: nothing to send.
    expect(patches.flush()).toEqual([]);
  });

  it("a new channel is inserted after its predecessor in sorted order (or first); one that leaves is deleted", () => {
    const { state, patches, changed } = setup(["cli/b", "cli/d"]);
    patches.start(`e1.${state.version}`);
    state.outbound(started("cli/c", "rc"));
    state.outbound(started("cli/a", "ra"));
    patches.note(changed);
    const sent = patches.flush();
    expect(sent[0]).toContain('<tbody hx-swap-oob="afterbegin:#channel-rows">');
    expect(rowsIn(sent[0]!)).toEqual([rowId("cli/a")]);
    expect(sent[1]).toContain(`<tbody hx-swap-oob="afterend:#${rowId("cli/b")}">`);
    expect(sent.at(-1)).toContain('<span id="channel-count" hx-swap-oob="true">4</span>');
    // A channel known only by its ownership record goes when the record does.
    changed.length = 0;
    state.channelRecord("cli/z", { owner: "runner-1", doneSeq: 0, streamCreated: "2026-03-01T00:00:00Z" });
    patches.note(changed);
    patches.flush();
    state.channelRecord("cli/z", undefined);
    patches.note(["cli/z"]);
    expect(patches.flush()[0]).toBe(`<template><tr id="${rowId("cli/z")}" hx-swap-oob="delete"></tr></template>`);
  });

  it("a new UTC day re-sends the whole body, since every row's counts start again", () => {
    const { state, patches } = setup(["cli/a"]);
    patches.start(`e1.${state.version}`);
    now = new Date("2026-03-03T00:00:01Z");
    patches.note([]);
    const [body] = patches.flush();
    expect(body).toContain('id="overview-body"');
    expect(body).toMatch(/<td>0<\/td>\s*<td>0<\/td>/);
  });

  it("row ids survive any channel id: no quote, space or selector character leaks into the id", () => {
    const id = rowId('slack/T1:C"> <script>#x.y');
    expect(id).toMatch(/^ch-[A-Za-z0-9_-]+$/);
  });
});
