export * from "./cli-options.js";
export * from "./cli-renderer.js";
export * from "./terminal-chat.js";
export * from "./start-cli-ingress.js";
export * from "./chat-commands.js";
