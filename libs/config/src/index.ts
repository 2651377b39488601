export * from "./schema.js";
export { defaultConfig } from "./defaults.js";
export { loadConfig, type LoadedConfig, type ConfigPaths } from "./load-config.js";
export { ConfigError } from "./config-error.js";
export type { Issue as ConfigIssue } from "./schema-issues.js";
export { parseModelRef, type ModelRef } from "./model-ref.js";
export { isNatsUrl, redactNatsUrl } from "./nats-url.js";
export { createLogger, type Logger, type LoggerOptions } from "./logger.js";
export { adapterEntry } from "./adapter-entry.js";
