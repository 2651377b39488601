export * from "./nats-server.js";
export * from "./fake-llm.js";
export * from "./call-recorder.js";
export * from "./fake-discord.js";
export * from "./fake-slack.js";
export * from "./docker-engine.js";
export * from "./fake-telegram.js";
export * from "./fake-whatsapp.js";
