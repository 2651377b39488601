export * from "./discord-api.js";
export * from "./discord-ingress.js";
export * from "./discord-options.js";
export * from "./mentions.js";
export * from "./renderer.js";
