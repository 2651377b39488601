import type { Issue } from "./schema-issues.js";

/**
 * A configuration problem an operator must fix. The message alone is enough to fix it: it names
 * the source (file or env var), the JSON path and what was expected, one line per problem.
 */
export class ConfigError extends Error {
  override readonly name = "ConfigError";

  constructor(
    /** The file path or `env NAME` the problem is in. */
    readonly source: string,
    readonly issues: readonly Issue[],
  ) {
    super(issues.map((issue) => `${source}: ${issue.path ? `${issue.path}: ` : ""}${issue.message}`).join("\n"));
  }
}
