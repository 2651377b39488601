export { WorkspaceLayout } from "./layout.js";
export { ChannelStore, type LogSender, type ReadLogOptions, type ReadLogResult, senderOf } from "./channel-store.js";
export { parseLogLines, type SkippedLine } from "./log-lines.js";
export { appendLine } from "./append-line.js";
export { formatFileSize, formatSizeOverLimit, guessMimeType, modelImageType, safeFileName, writeNewFile } from "./attachment-files.js";
export { type LogCursor, type PlacedEntry, LOG_TAIL_BYTES, readLogSince, readLogTail } from "./log-reader.js";
