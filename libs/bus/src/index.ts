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
export { isTransient, retryTransient } from "./transient.js";
export { isPermissionDenied } from "./permission.js";
export type { FollowOptions, Following } from "./follow.js";
export type { KV, KvEntry, KvWatchEntry } from "@nats-io/kv";
export { type JsonKv, type JsonKvOptions, kvKey, namespacedName, openJsonKv, existingJsonKv } from "./json-kv.js";
export { type RecordStream, type RecordStreamOptions, type StreamRecord, openRecordStream } from "./record-stream.js";
export { serviceReadiness } from "./service-readiness.js";
export { serverCaveat } from "./server-caveat.js";
export { followFrom, lastPerSubject, type RangeStart, type RawMessage, type Watching, readRange, watchNew } from "./read-range.js";
export { busOptions, streamSettings } from "./config-options.js";
export { type AgedOut, type BusEntry, type ChannelWindow, type EntryKind, interleave, readChannelWindow, toEntry } from "./channel-window.js";
