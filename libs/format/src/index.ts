export * from "./split-message.js";
export * from "./slack-mrkdwn.js";
export * from "./format-usage.js";
