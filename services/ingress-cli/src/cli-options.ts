import type { Logger } from "pino";
import type { ChatModels } from "./chat-commands.js";
import type { RendererOutput } from "./cli-renderer.js";

export interface CliIngressOptions {
  /** Adapter name from config.json (type "cli"), the subject token; several terminals may share it. */
  adapter: string;
  /** Channel id within the adapter; one terminal conversation. */
  channelId: string;
  user: { id: string; username: string; displayName?: string };
  input: NodeJS.ReadableStream;
  output: RendererOutput;
  logger: Logger;
  /** Called when the input ends (Ctrl-D), so the process can shut down. */
  onInputEnd?: () => void;
  /** Where files mom attaches are saved (`mom up` / `mom ingress`: `<dataDir>/downloads`; default `./mom-downloads`). */
  downloadsDir?: string;
  /** `/attach <path>` paths are relative to this (default: the process's cwd). */
  cwd?: string;
  /** config `attachments.maxBytes` (default 20 MiB): larger files are neither sent nor downloaded. */
  maxAttachmentBytes?: number;
  /** What `/model` shows and checks (chatModels(loaded, "<adapter>/<channel>")); without it `/model` knows only the last run's. */
  models?: ChatModels;
  /** Ctrl-C typed on an interactive terminal (raw mode: no signal is sent); default: SIGINT to this process. */
  onInterrupt?: () => void;
}

