// What the model sends, checked before anything reaches the server. The model is treated as an
// attacker: a line break in a one-line value could end the property and start another (ical.js
// escapes \n but not a lone \r, which some parsers take as a line end), and a uid is a name inside
// the configured calendar, never a path to another one.

// Control characters (C0, DEL, C1) and Unicode line/paragraph separators.
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

/** A one-line text (title, location): no line breaks or control characters. */
export function oneLine(value: string, field: string): string {
  if (CONTROL.test(value)) throw new Error(`${field}: must be one line without control characters (no \\r, \\n, tabs or other control codes)`);
  const trimmed = value.trim();
  if (!trimmed) throw new Error(`${field}: must not be empty`);
  return trimmed;
}

/** A multi-line text (description): line ends become \n (which ical.js escapes); tabs stay; other control characters are refused. */
export function multiLine(value: string, field: string): string {
  const text = value.replace(/\r\n?/g, "\n");
  if (/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029]/.test(text)) throw new Error(`${field}: must not contain control characters other than line breaks and tabs`);
  return text;
}

/** A uid as caldav.event.list shows it: refused when it has control characters or looks like a path. */
export function checkUid(uid: string): string {
  if (CONTROL.test(uid)) throw new Error(`uid: must not contain line breaks or control characters; pass the uid exactly as caldav.event.list shows it`);
  if (!uid.trim()) throw new Error(`uid: must not be empty`);
  if (/[/\\]/.test(uid) || uid === "." || uid === "..") {
    throw new Error(`uid: ${JSON.stringify(uid)} looks like a path; a uid names an event in the configured calendar (as caldav.event.list shows it), not a file or another calendar`);
  }
  return uid;
}
