export * from "./telegram-html.js";
export * from "./telegram-ingress.js";
export * from "./telegram-options.js";
