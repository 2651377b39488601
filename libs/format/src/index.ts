export * from "./split-message.js";
