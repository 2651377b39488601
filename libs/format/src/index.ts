export * from "./split-message.js";
export * from "./slack-mrkdwn.js";
export * from "./format-usage.js";
export * from "./batches.js";
export * from "./chat-markup.js";
