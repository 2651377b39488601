import { randomBytes } from "node:crypto";

/** The event's file in the channel's events/: `<id>.json`. */
export const fileOf = (id: string) => `${id}.json`;
/** The id of an event file: its name without `.json`. */
export const idOf = (file: string) => file.slice(0, -".json".length);

/** A newline, tab or NUL is never part of an id, not even at its end (where trimming would drop it). */
const CONTROL = /[\u0000-\u001f\u007f]/;

/** The ids create accepts (and makes): a file name with nothing to escape or hide. */
const NEW_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$/;

/** A given id for a new event, or an error saying what an id may be. */
export function checkNewId(raw: string): string {
  const id = raw.trim().replace(/\.json$/, "");
  if (!NEW_ID.test(id) || CONTROL.test(raw)) {
    throw new Error(`"id" ${JSON.stringify(raw)} is not usable: an id is 1-80 letters, digits, "-", "_" or ".", starting with a letter or digit (or leave it out and one is made)`);
  }
  return id;
}

/** A fresh id from the reminder's first words and a random tail: `stand-up-with-ana-3f9a1c`. */
export function newId(text: string): string {
  const words = text
    .toLowerCase()
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .match(/[a-z0-9]+/g);
  const stem = (words ?? []).slice(0, 4).join("-").slice(0, 40).replace(/-+$/, "") || "reminder";
  return `${stem}-${randomBytes(3).toString("hex")}`;
}

/**
 * The file an id names in the channel's events/, for list and cancel, which also take the names of
 * event files someone wrote by hand. Whatever is not one plain name (`../x`, `/etc/passwd`,
 * `a/b`, `.hidden`, control characters) is refused before any file is touched.
 */
export function existingFile(raw: string): string {
  const id = raw.trim().replace(/\.json$/, "");
  if (!id || id.includes("/") || id.startsWith(".") || CONTROL.test(raw)) {
    throw new Error(`${JSON.stringify(raw)} is not an event id: ids are the names reminders.event.list shows (one name: no "/", not starting with ".")`);
  }
  return fileOf(id);
}
