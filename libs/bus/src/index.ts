export { Bus, noJetStreamMessage, type PublishOptions, type PublishResult, type StreamSummary } from "./bus.js";
export type { BusOptions, StreamRetention, StreamSettings } from "./options.js";
export { DEFAULT_STREAM_SETTINGS, DEFAULT_DRAIN_TIMEOUT_MS, streamRetention } from "./options.js";
export { type ConsumeOptions, type Delivery, type Consumption, RejectedInput } from "./consume-types.js";
export { buildDeadLetter, type DeadLetterInput } from "./dead-letter.js";
export { STREAM_TOKENS, streamConfigs } from "./provision.js";
export {
  type FileInfo,
  type FileSource,
  FileTooLargeError,
  filesBucketName,
  fileBelongsTo,
  fileObjectName,
  type PutFileMeta,
  type PutFileResult,
} from "./files.js";
export { retryDelayMs } from "./process-message.js";
export { BusModule, BusShutdown, type BusModuleAsyncOptions } from "./nest.js";
export { JETSTREAM, JetStreamHandler, type JetStreamConsumer, type JetStreamHandlerOptions } from "./jetstream-handler.js";
export { type BeforeJetStreamDrain, JetStreamContext, JetStreamServer, type JetStreamServerHost } from "./jetstream-server.js";
export { connectJetStream, startJetStreamService } from "./jetstream-app.js";
export type { FollowOptions, Following } from "./follow.js";
export type { KV, KvEntry, KvWatchEntry } from "@nats-io/kv";
export { type JsonKv, type JsonKvOptions, kvKey, namespacedName, openJsonKv } from "./json-kv.js";
export { type RecordStream, type RecordStreamOptions, type StreamRecord, openRecordStream } from "./record-stream.js";
export { serviceReadiness } from "./service-readiness.js";
export { serverCaveat } from "./server-caveat.js";
export { lastPerSubject, type RangeStart, type RawMessage, type Watching, readRange, watchNew } from "./read-range.js";
export { busOptions, streamSettings } from "./config-options.js";
