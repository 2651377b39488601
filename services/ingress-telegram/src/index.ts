export * from "./telegram-html.js";
export * from "./telegram-inbound.js";
export * from "./telegram-ingress.js";
export * from "./telegram-options.js";
export * from "./telegram-surface.js";
export * from "./telegram-updates.js";
