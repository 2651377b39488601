export * from "./nats-server.js";
export * from "./fake-llm.js";
