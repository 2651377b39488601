export * from "./discord-ingress.js";
export * from "./discord-options.js";
