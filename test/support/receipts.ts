import type { Receipt } from "@mom/contracts";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Stack } from "./stack.js";

/** A channel's receipts.jsonl as written so far (none yet: []), oldest first. */
export function channelReceipts(st: Pick<Stack, "loaded">, channel = "cli/local"): Receipt[] {
  const file = join(st.loaded.paths.workspaceDir, "channels", channel, "receipts.jsonl");
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as Receipt);
}
