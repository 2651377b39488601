import type { FakeLlm, TestNats } from "@mom/testing";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A temp data dir whose config.json points at the test NATS and whose models.json at the fake LLM. */
export function writeTestDataDir(prefix: string, nats: TestNats, llm: FakeLlm, config: object = {}, models: object = llm.modelsJson()): string {
  const dataDir = mkdtempSync(join(tmpdir(), prefix));
  writeFileSync(join(dataDir, "models.json"), JSON.stringify(models));
  writeFileSync(
    join(dataDir, "config.json"),
    JSON.stringify({ model: "fake/fake-model", nats: { url: nats.url, namespace: nats.namespace }, log: { level: "warn" }, ...config }),
  );
  return dataDir;
}
