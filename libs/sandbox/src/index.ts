export * from "./bwrap-executor.js";
export * from "./confined-files.js";
export * from "./docker-executor.js";
export * from "./executor.js";
export * from "./host-executor.js";
export * from "./sandbox.js";
export * from "./view.js";
