export * from "./slack-ingress.js";
export * from "./slack-options.js";
