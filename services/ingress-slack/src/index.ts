export * from "./slack-ingress.js";
export * from "./slack-options.js";
export * from "./slack-renderer.js";
export * from "./slack-inbound.js";
