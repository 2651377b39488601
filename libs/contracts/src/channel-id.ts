// A qualified channel id is `<adapter>/<channelId>`; on the bus the adapter is one subject token and
// the platform's channel id is escaped into exactly one more token, so wildcards like
// `mom.in.slack-acme.*` keep working whatever characters a platform uses in its ids.

export const ADAPTER_NAME_PATTERN = /^[a-z0-9-]+$/;

export function assertAdapterName(adapter: string): void {
  if (!ADAPTER_NAME_PATTERN.test(adapter)) {
    throw new Error(`invalid adapter name ${JSON.stringify(adapter)}: expected [a-z0-9-]+`);
  }
}

// Everything but [A-Za-z0-9_-] becomes `~XX` (UTF-8 bytes, upper-case hex), `~` included, so the
// mapping is a bijection and ordinary platform ids (C0A34FL8PMH, 1234567890, -100123) stay readable.
const SAFE = /[A-Za-z0-9_-]/;
const ALL_SAFE = /^[A-Za-z0-9_-]+$/;

export function escapeChannelToken(channelId: string): string {
  if (channelId.length === 0) throw new Error("channel id must not be empty");
  // Most platform ids need no escaping; this runs for every event a run publishes.
  if (ALL_SAFE.test(channelId)) return channelId;
  let out = "";
  for (const ch of channelId) {
    if (SAFE.test(ch)) {
      out += ch;
      continue;
    }
    for (const byte of Buffer.from(ch, "utf8")) out += `~${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

export function unescapeChannelToken(token: string): string {
  if (ALL_SAFE.test(token)) return token; // nothing escaped, hence canonical (every run lists every channel)
  if (!/^(?:[A-Za-z0-9_-]|~[0-9A-F]{2})+$/.test(token)) {
    throw new Error(`invalid escaped channel token ${JSON.stringify(token)}`);
  }
  const bytes: number[] = [];
  for (let i = 0; i < token.length; ) {
    if (token[i] === "~") {
      bytes.push(parseInt(token.slice(i + 1, i + 3), 16));
      i += 3;
    } else {
      bytes.push(token.charCodeAt(i));
      i += 1;
    }
  }
  const decoded = Buffer.from(bytes);
  const text = new TextDecoder("utf-8", { fatal: true }).decode(decoded);
  if (escapeChannelToken(text) !== token) throw new Error(`non-canonical escaped channel token ${JSON.stringify(token)}`);
  return text;
}

export interface ChannelRef {
  adapter: string;
  channelId: string;
}

export function qualifiedChannelId(ref: ChannelRef): string {
  assertAdapterName(ref.adapter);
  if (!ref.channelId) throw new Error("channel id must not be empty");
  return `${ref.adapter}/${ref.channelId}`;
}

export function parseQualifiedChannelId(qualified: string): ChannelRef {
  const slash = qualified.indexOf("/");
  if (slash <= 0 || slash === qualified.length - 1) {
    throw new Error(`invalid qualified channel id ${JSON.stringify(qualified)}: expected "<adapter>/<channelId>"`);
  }
  const ref = { adapter: qualified.slice(0, slash), channelId: qualified.slice(slash + 1) };
  assertAdapterName(ref.adapter);
  return ref;
}
