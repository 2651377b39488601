// What a Nest service needs of the bus, as its own entry point (`@mom/bus/nest`): the main entry
// stays free of Nest, so a command that only reads the bus (`mom tail`, `usage`, `replay`) does
// not load it (about half a second of a CLI command's start).
export { BusModule, BusShutdown, type BusModuleAsyncOptions } from "./nest.js";
export { JETSTREAM, JetStreamHandler, type JetStreamConsumer, type JetStreamHandlerOptions } from "./jetstream-handler.js";
export { type BeforeJetStreamDrain, JetStreamContext, JetStreamServer, type JetStreamServerHost } from "./jetstream-server.js";
export { connectJetStream, startJetStreamService } from "./jetstream-app.js";
