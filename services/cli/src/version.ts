import { readFileSync } from "node:fs";

/** The version in services/cli/package.json (dist/ sits beside it). */
export function momVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string };
  return pkg.version;
}
