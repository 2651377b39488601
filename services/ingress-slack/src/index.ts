export * from "./slack-ingress.module.js";
export * from "./slack-ingress.service.js";
export * from "./slack-options.js";
export * from "./slack-renderer.js";
export * from "./slack-inbound.js";
export * from "./start-slack-ingress.js";
export * from "./slack-config.js";
