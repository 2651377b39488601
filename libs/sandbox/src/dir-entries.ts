import { opendirSync } from "node:fs";
import { opendir } from "node:fs/promises";

// A command can make a directory of millions of entries. readdir holds all their names at once
// (hundreds of MB, seconds of the runner's event loop for every channel); these read at most `max`.

/** Up to `max` entry names of `dir`, read a few at a time; none when it cannot be read. */
export async function someEntries(dir: string, max: number): Promise<string[]> {
  const names: string[] = [];
  if (max <= 0) return names;
  try {
    for await (const entry of await opendir(dir)) if (names.push(entry.name) >= max) break;
  } catch {
    // gone or unreadable
  }
  return names;
}

/** someEntries, synchronously. */
export function someEntriesSync(dir: string, max: number): string[] {
  const names: string[] = [];
  let handle;
  try {
    handle = opendirSync(dir);
    for (let entry = handle.readSync(); entry && names.length < max; entry = handle.readSync()) names.push(entry.name);
  } catch {
    // gone or unreadable
  } finally {
    handle?.closeSync();
  }
  return names;
}
