import type { Logger } from "pino";
import type { RendererOutput } from "./cli-renderer.js";

export const CLI_OPTIONS = Symbol("CLI_OPTIONS");

export interface CliIngressOptions {
  /** Adapter name from config.json (type "cli"), the subject token. */
  adapter: string;
  /** Channel id within the adapter; one terminal conversation. */
  channelId: string;
  user: { id: string; username: string; displayName?: string };
  input: NodeJS.ReadableStream;
  output: RendererOutput;
  logger: Logger;
  /** Called when the input ends (Ctrl-D), so the process can shut down. */
  onInputEnd?: () => void;
}
