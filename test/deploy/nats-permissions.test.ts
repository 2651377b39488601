import { describe, expect, it } from "@jest/globals";
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");

// The least-privilege NATS users in deploy/nats/auth.conf, exercised by the real services.
describe("deploy/nats/auth.conf", () => {
  it("lets each service do its job, refuses the rest, and never leaks a password", () => {
    const r = spawnSync("bash", [join(root, "deploy/nats/verify-permissions.sh")], { encoding: "utf8", timeout: 120_000 });
    expect(`${r.stdout}\n${r.stderr}`).toContain("PASS: deploy/nats/auth.conf");
    expect(r.status).toBe(0);
  }, 130_000);
});
