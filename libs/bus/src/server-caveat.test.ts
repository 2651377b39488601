import { describe, expect, it } from "@jest/globals";
import { serverCaveat } from "./server-caveat.js";

describe("serverCaveat", () => {
  it("warns about releases before 2.10, which lose expiring pull requests", () => {
    expect(serverCaveat("2.9.10")).toMatch(/^nats-server 2\.9\.10 can lose a channel feed's pull request.*2\.10 or newer/);
    expect(serverCaveat("2.2.6")).toBeDefined();
  });

  it("says nothing for 2.10 and later, or a version it cannot read", () => {
    for (const v of ["2.10.0", "2.10.29", "2.15.1", "3.0.0", undefined, "", "dev"]) expect(serverCaveat(v)).toBeUndefined();
  });

  it("warns about 2.10 in a cluster, whose stream leaders can refuse a lost write's msg-id for the duplicate window", () => {
    expect(serverCaveat("2.10.27", "mom")).toMatch(/^nats-server 2\.10\.27 in cluster mom: .*duplicate window.*2\.11 or newer/);
    for (const v of ["2.11.0", "2.15.1"]) expect(serverCaveat(v, "mom")).toBeUndefined();
  });
});
