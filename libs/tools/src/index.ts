export * from "./policy.js";
export * from "./receipts.js";
export * from "./tool-contract.js";
export * from "./custom-tools.js";
export * from "./host-api.js";
export * from "./invoke-tool.js";
export * from "./prompt.js";
export * from "./timeout.js";
export { CUSTOM_TOOL_ID, describeType, prepareToolArgs, toolContractErrors } from "./tool-schema.js";
