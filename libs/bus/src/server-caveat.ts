/**
 * What a nats-server release is known to get wrong that mom works around, said to the operator, or
 * undefined. Before a fix of March 2023 (nats-server pull request 3942) the server dropped a pull
 * request that expired just as a message for it arrived, without the 408 that tells the client:
 * nats.js then counts the pull as pending and a channel's feed sits still until the feed's
 * watch re-opens it (libs/bus/src/follow.ts, docs/scaling.md). 2.10 is the first line sure to
 * have the fix; `npm run bench -- pull-expiry` tells for any binary.
 */
export function serverCaveat(version: string | undefined): string | undefined {
  const m = /^v?(\d+)\.(\d+)\./.exec(version ?? "");
  if (!m) return undefined;
  const [major, minor] = [Number(m[1]), Number(m[2])];
  if (major > 2 || (major === 2 && minor >= 10)) return undefined;
  return `nats-server ${version} can lose a channel feed's pull request as it expires (fixed in 2023): the feed then waits 5-15 s until mom notices. Use nats-server 2.10 or newer (docs/scaling.md).`;
}
