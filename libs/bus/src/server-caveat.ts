/**
 * What a nats-server release is known to get wrong that mom works around, said to the operator, or
 * undefined. Before a fix of March 2023 (nats-server pull request 3942) the server dropped a pull
 * request that expired just as a message for it arrived, without the 408 that tells the client:
 * nats.js then counts the pull as pending and a channel's feed sits still until the feed's
 * watch re-opens it (libs/bus/src/follow.ts, docs/scaling.md). 2.10 is the first line sure to
 * have the fix; `npm run bench -- pull-expiry` tells for any binary.
 *
 * In a cluster (`cluster` is the server's cluster name), before 2.11 a stream leader keeps the
 * msg-id of a write whose proposal a leader change lost, answering "duplicate, sequence 0" for it
 * until the duplicate window ends: mom asks again (Bus.publish) and the write comes late or fails
 * (test/chaos/msgid-in-flight.test.ts). 2.11 forgets it.
 */
export function serverCaveat(version: string | undefined, cluster?: string): string | undefined {
  const m = /^v?(\d+)\.(\d+)\./.exec(version ?? "");
  if (!m) return undefined;
  const [major, minor] = [Number(m[1]), Number(m[2])];
  if (major === 2 && minor < 10) {
    return `nats-server ${version} can lose a channel feed's pull request as it expires (fixed in 2023): the feed then waits 5-15 s until mom notices. Use nats-server 2.10 or newer (docs/scaling.md).`;
  }
  if (cluster && major === 2 && minor === 10) {
    return `nats-server ${version} in cluster ${cluster}: after a stream leader change it can refuse a write's msg-id for the duplicate window (2 min by default), so that write (a scheduled event, a reply) comes late or fails. Use nats-server 2.11 or newer (docs/scaling.md).`;
  }
  return undefined;
}
