// nats.js takes one server or a comma-separated list, each `scheme://host:port` or bare
// `host:port`. Catching a wrong scheme here beats a reconnect loop that never says why.
const SCHEMES = new Set(["nats:", "tls:", "ws:", "wss:"]);
export const NATS_URL_EXPECTED = "a NATS server URL like nats://127.0.0.1:4222 (comma-separated for several)";

export function isNatsUrl(value: string): boolean {
  const servers = value.split(",").map((s) => s.trim());
  return servers.every((server) => {
    if (server === "" || /\s/.test(server)) return false;
    const hasScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(server);
    try {
      const url = new URL(hasScheme ? server : `nats://${server}`);
      return SCHEMES.has(url.protocol) && url.hostname !== "";
    } catch {
      return false;
    }
  });
}

/** The URL as it may be shown or logged: `user:pass@` / `token@` become `***@`. */
export function redactNatsUrl(value: string): string {
  return value
    .split(",")
    .map((s) => s.trim().replace(/^((?:[a-z][a-z0-9+.-]*:\/\/)?)[^@/]*@/i, "$1***@"))
    .join(",");
}
