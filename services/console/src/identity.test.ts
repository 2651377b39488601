import { Identities } from "./identity.js";

const users = { alice: { role: "approver" as const } };
const ids = (trustedProxies?: string[]) => new Identities({ port: 0, host: "127.0.0.1", identityHeader: "X-Auth-Request-User", users, ...(trustedProxies && { trustedProxies }) });

describe("the identity header's trusted proxies", () => {
  it("default to this host: loopback over IPv4, IPv6 and IPv4-mapped IPv6", () => {
    const i = ids();
    for (const a of ["127.0.0.1", "127.3.4.5", "::1", "::ffff:127.0.0.1"]) expect([a, i.trustsProxyAt(a)]).toEqual([a, true]);
    for (const a of ["10.0.0.7", "::ffff:10.0.0.7", "fd00::1", "192.168.1.1", undefined, "", "not-an-ip"]) expect([a, i.trustsProxyAt(a)]).toEqual([a, false]);
  });

  it("are replaced by console.trustedProxies: loopback is then no longer trusted unless listed", () => {
    const i = ids(["10.42.0.0/16", "fd00::/8"]);
    expect(["10.42.9.9", "::ffff:10.42.0.1", "fd00::5"].map((a) => i.trustsProxyAt(a))).toEqual([true, true, true]);
    expect(["127.0.0.1", "::1", "10.43.0.1"].map((a) => i.trustsProxyAt(a))).toEqual([false, false, false]);
  });
});
