export * from "./commands.js";
export * from "./doctor.js";
export * from "./receipts-command.js";
export * from "./local-nats.js";
export * from "./nats-target.js";
export * from "./auth-command.js";
export * from "./usage-command.js";
export { toolsCommand } from "./tools-command.js";
export * from "./data-dir.js";
