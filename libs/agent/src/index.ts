export * from "./channel-agent.js";
export * from "./labelled-tools.js";
export * from "./log-sync.js";
export * from "./model.js";
export * from "./outbound-mapper.js";
export * from "./resource-loader.js";
export * from "./system-prompt.js";
