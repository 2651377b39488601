// The words of `mom replay` and `mom tail` live in @mom/render (the web console shows the same);
// decoding lives in @mom/bus. Re-exported for the CLI's modules.
export { entryJson, formatEntry, type ViewOptions } from "@mom/render";
export { type BusEntry, type EntryKind, interleave, toEntry } from "@mom/bus";
