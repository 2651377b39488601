export * from "./script-pool.js";
export * from "./declarations.js";
export * from "./run-code-tool.js";
