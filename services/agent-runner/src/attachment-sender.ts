import type { AttachFile } from "@mom/agent";
import { type Bus, fileObjectName } from "@mom/bus";
import type { ChannelRef } from "@mom/contracts";
import type { Logger } from "pino";
import type { ActiveRun } from "./active-run.js";

export interface AttachmentSenderDeps {
  bus: Bus;
  ref: ChannelRef;
  /** The channel's run in progress. */
  active: ActiveRun;
  log: Logger;
}

/**
 * The runner's side of the attach tool: puts the bytes into the files bucket under a fresh
 * object name and emits an `attachment` event in the current run (so it is numbered with the
 * run's other events and carries the trigger's replyTo). Throws when no run is in progress or
 * the Object Store refuses the put; the tool turns that into an error the model sees.
 */
export function attachmentSender(deps: AttachmentSenderDeps): (file: AttachFile, signal?: AbortSignal) => Promise<void> {
  return async (file, signal) => {
    const run = deps.active.current;
    if (!run) throw new Error("no run in progress: files can only be attached while answering a message");
    const objectKey = fileObjectName(deps.ref, file.filename);
    await deps.bus.putFile(objectKey, file.bytes, {
      ...(file.mimeType !== undefined && { mimeType: file.mimeType }),
      ...(file.title !== undefined && { description: file.title }),
    });
    // Stopped (or timed out) during the put: pi has given the call up and the run is ending, or has
    // ended — an attachment now would be posted after the stop, after the run's run_ended.
    if (signal?.aborted || deps.active.current !== run) throw new Error("aborted: the file was not attached");
    const { replyTo } = run.message;
    run.publisher.emit({
      type: "attachment",
      objectKey,
      filename: file.filename,
      path: file.path,
      ...(file.title !== undefined && { title: file.title }),
      ...(file.mimeType !== undefined && { mimeType: file.mimeType }),
      size: file.size,
      ...(replyTo !== undefined && { replyTo }),
    });
    deps.log.info({ objectKey, path: file.path, size: file.size }, "file attached");
  };
}
