export * from "./commands.js";
export * from "./doctor.js";
export * from "./receipts-command.js";
export * from "./local-nats.js";
export * from "./nats-target.js";
export * from "./bus-options.js";
export * from "./auth-command.js";
export * from "./usage-command.js";
export { toolsCommand, TOOLS_USAGE } from "./tools-command.js";
