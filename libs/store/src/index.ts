export { WorkspaceLayout } from "./layout.js";
export { ChannelStore, RUNNER_FILES, type LogSender, type ReadLogOptions, type ReadLogResult, senderOf } from "./channel-store.js";
export { parseLogLines, type SkippedLine } from "./log-lines.js";
export { appendLine } from "./append-line.js";
export { type BeneathOptions, DirBeneath, fdPath, type ListedEntry, listDir, moveAsideBeneath, openBeneath, openDirBeneath, type OpenMode, readBeneath, readRange, readTailBeneath, RefusedPathError, writeFileAtomicBeneath, writeNewFileBeneath } from "./beneath.js";
export { formatFileSize, formatSizeOverLimit, guessMimeType, modelImageType, safeFileName, writeNewFile } from "./attachment-files.js";
export { type LogCursor, type PlacedEntry, LOG_TAIL_BYTES, readLogSince, readLogTail } from "./log-reader.js";
export { JobEnded, JobRecord, JobStarted, runningJobs } from "./job-records.js";
