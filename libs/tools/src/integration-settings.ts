import type { Static, TSchema } from "typebox";
import Value from "typebox/value";
import type { CustomToolApi } from "./tool-contract.js";

/** An integration's settings are missing or wrong; the message names config.json's field. */
export class IntegrationSettingsError extends Error {
  override name = "IntegrationSettingsError";
}

/**
 * config.json `tools.settings.<name>`, checked against `schema` (defaults filled in). Throws an
 * IntegrationSettingsError naming each bad field as `tools.settings.<name>.<field>`, so a call
 * made before the operator configured the integration fails with what to set, not a stack.
 */
export function integrationSettings<S extends TSchema>(api: Pick<CustomToolApi, "settings">, name: string, schema: S): Static<S> {
  const raw = api.settings(name);
  if (raw === undefined) throw new IntegrationSettingsError(`the ${name} integration is not configured: set tools.settings.${name} in config.json (integrations/${name}/README.md)`);
  const value = Value.Default(schema, structuredClone(raw));
  const errors = [...Value.Errors(schema, value)];
  if (!errors.length) return value as Static<S>;
  const lines = errors.map((e) => {
    const field = [`tools.settings.${name}`, ...e.instancePath.split("/").filter(Boolean)].join(".");
    const missing = e.keyword === "required" ? ` (${String((e.params as { requiredProperties?: string[] }).requiredProperties?.join(", "))} required)` : "";
    return `  - ${field}: ${e.message}${missing}`;
  });
  throw new IntegrationSettingsError(`config.json tools.settings.${name} is invalid:\n${lines.join("\n")}`);
}
