export * from "./cli-ingress.module.js";
export * from "./cli-ingress.service.js";
export * from "./cli-options.js";
export * from "./cli-renderer.js";
export * from "./start-cli-ingress.js";
export * from "./chat-commands.js";
