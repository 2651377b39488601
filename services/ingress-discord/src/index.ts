export * from "./discord-api.js";
export * from "./discord-ingress.module.js";
export * from "./discord-ingress.service.js";
export * from "./discord-options.js";
export * from "./mentions.js";
export * from "./options-from-config.js";
export * from "./renderer.js";
export * from "./start-discord-ingress.js";
