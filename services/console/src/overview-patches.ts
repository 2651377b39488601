import type { LiveState } from "./live-state.js";
import type { Views } from "./views.js";

/**
 * What one browser on the live overview is sent: out-of-band swaps (htmx) keyed by stable ids, so
 * that a change to one channel costs the page one table row, not the whole overview. Each patch is
 * one SSE message: one per changed row, one for whichever small sections (today's figures, the
 * runners, the channel count, recent runs) read differently from what this page last got.
 *
 * One instance per SSE connection: it remembers which rows the page has (to insert a new channel
 * after its predecessor, in sorted order, and to delete one that left) and the sections it last sent.
 */
export class OverviewPatches {
  private readonly dirty = new Set<string>();
  private shown = new Set<string>();
  private sections = new Map<string, string>();
  private day = "";

  constructor(
    private readonly state: LiveState,
    private readonly views: Views,
    /** This process's state version as the page was rendered: `${epoch}.${version}`. */
    private readonly epoch: string,
  ) {}

  /** What to send on connecting: nothing when the page shows the current state (`since`), else the whole body. */
  start(since: string | undefined): string[] {
    const current = since === `${this.epoch}.${this.state.version}`;
    const full = this.resync();
    return current ? [] : [full];
  }

  /** A change to these channels (and possibly the sections) since the last flush. */
  note(channels: readonly string[]): void {
    for (const c of channels) this.dirty.add(c);
  }

  /** The patches for everything noted since the last flush; repeated changes of a row are one patch. */
  flush(): string[] {
    const summary = this.state.summary();
    if (summary.day !== this.day) return [this.resync()]; // a new UTC day: every row's counts start again
    const out: string[] = [];
    const dirty = [...this.dirty].sort();
    this.dirty.clear();
    let names: string[] | undefined;
    for (const channel of dirty) {
      const view = this.state.channelView(channel);
      const id = this.views.rowId(channel);
      if (!view) {
        if (this.shown.delete(channel)) out.push(`<template><tr id="${id}" hx-swap-oob="delete"></tr></template>`);
        continue;
      }
      if (this.shown.has(channel)) {
        out.push(`<template>${this.views.render("overview-row", { c: view, oob: true })}</template>`);
        continue;
      }
      // A new row goes after the nearest channel before it that the page has, or first.
      names ??= this.state.channelNames();
      let prev: string | undefined;
      for (let i = names.indexOf(channel) - 1; i >= 0 && prev === undefined; i--) if (this.shown.has(names[i]!)) prev = names[i];
      const where = prev === undefined ? "afterbegin:#channel-rows" : `afterend:#${this.views.rowId(prev)}`;
      out.push(`<template><tbody hx-swap-oob="${where}">${this.views.render("overview-row", { c: view })}</tbody></template>`);
      this.shown.add(channel);
    }
    const changed = [...this.renderSections(summary)].filter(([k, html]) => this.sections.get(k) !== html);
    for (const [k, html] of changed) this.sections.set(k, html);
    if (changed.length) out.push(changed.map(([, html]) => `<template>${html}</template>`).join("\n"));
    return out;
  }

  /** The whole body as one swap; from here on the page has every current row and section. */
  private resync(): string {
    const overview = this.state.snapshot();
    this.dirty.clear();
    this.shown = new Set(overview.channels.map((c) => c.channel));
    this.sections = this.renderSections(overview);
    this.day = overview.day;
    return `<template>${this.views.render("overview-body", { overview, oob: true })}</template>`;
  }

  private renderSections(o: ReturnType<LiveState["summary"]>): Map<string, string> {
    return new Map([
      ["today", this.views.render("overview-today", { o, oob: true })],
      ["runners", this.views.render("overview-runners", { o, oob: true })],
      ["count", `<span id="channel-count" hx-swap-oob="true">${o.channelCount}</span>`],
      ["recent", this.views.render("overview-recent", { o, oob: true })],
    ]);
  }
}
