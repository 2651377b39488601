export { ChannelList } from "./channel-list.js";
export * from "./channel-worker.js";
export * from "./model-catalog.js";
export * from "./runner-options.js";
export * from "./runner.module.js";
export * from "./runner.service.js";
export * from "./start-runner.js";
export { channelSandbox } from "./workspace-sandbox.js";
export * from "./redrive.js";
