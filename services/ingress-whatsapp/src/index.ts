export * from "./graph-api.js";
export * from "./whatsapp-format.js";
export * from "./whatsapp-ingress.js";
export * from "./whatsapp-options.js";
export * from "./whatsapp-surface.js";
export * from "./whatsapp-webhook.js";
export * from "./whatsapp-webhook-server.js";
