export * from "./options-from-config.js";
export * from "./start-telegram-ingress.js";
export * from "./telegram-html.js";
export * from "./telegram-inbound.js";
export * from "./telegram-ingress.module.js";
export * from "./telegram-ingress.service.js";
export * from "./telegram-options.js";
export * from "./telegram-surface.js";
