import type { ConformanceTarget, IngressUnderTest, PlatformDriver } from "@mom/ingress-sdk/testing";
import { startTestNats, type TestNats } from "@mom/testing";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * A conformance target for an ingress run as deployed: a NATS server of its own and a data dir
 * whose config.json declares the one adapter under test. `setup` starts the platform's side and
 * returns the adapter's entry; `teardown` stops it, before NATS and the data dir go.
 */
export function deployedTarget(o: {
  adapter: string;
  setup(dataDir: string): Promise<Record<string, unknown>>;
  teardown(): Promise<unknown>;
  ingress: IngressUnderTest;
  platform: PlatformDriver;
  /** More of config.json than nats and the adapter. */
  config?: Record<string, unknown>;
}): ConformanceTarget & { prepare(): Promise<void>; dispose(): Promise<void> } {
  let nats: TestNats | undefined;
  let dataDir = "";
  const server = () => {
    if (!nats) throw new Error("the conformance target is not prepared yet");
    return nats;
  };
  return {
    adapter: o.adapter,
    ingress: o.ingress,
    platform: o.platform,
    get natsUrl() {
      return server().url;
    },
    get namespace() {
      return server().namespace;
    },
    async prepare() {
      nats = await startTestNats();
      dataDir = mkdtempSync(join(tmpdir(), `mom-conformance-${o.adapter}-`));
      const adapter = await o.setup(dataDir);
      writeFileSync(join(dataDir, "config.json"), JSON.stringify({ nats: { url: nats.url, namespace: nats.namespace }, adapters: { [o.adapter]: adapter }, ...o.config }));
    },
    async dispose() {
      await o.teardown();
      await nats?.stop();
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
