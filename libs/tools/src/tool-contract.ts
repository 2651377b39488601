import type { Static, TSchema } from "typebox";

/** How much harm a call can do; policy and approvals key off it. */
export type Risk = "read" | "write" | "destructive";
export const RISKS: readonly Risk[] = ["read", "write", "destructive"];

/** Default per-call timeout, combined with the run's abort signal. */
export const DEFAULT_TOOL_TIMEOUT_MS = 120_000;

export interface ToolCallContext {
  /** Aborted when the run is aborted or the call times out. */
  signal: AbortSignal;
  /** Qualified channel id, `<adapter>/<channelId>`. */
  channel: string;
  /** The channel's directory (the agent's working directory). */
  cwd: string;
}

export type ToolOutput = string | { text: string; details?: unknown };

/**
 * A tool mom can call. Custom host tools (workspace/tools/<name>/index.ts) export one of these,
 * or a factory `(api) => tool`. `id` is `integration.resource.action` for custom tools
 * (e.g. `github.issues.create`); arguments are validated against `parameters` before `execute`.
 */
export interface MomTool<S extends TSchema = TSchema> {
  id: string;
  description: string;
  risk: Risk;
  parameters: S;
  timeoutMs?: number;
  execute(args: Static<S>, ctx: ToolCallContext): Promise<ToolOutput>;
}

/** What a custom tool factory gets: the runner's data dir and host access. */
export interface CustomToolApi {
  dataDir: string;
  workspaceDir: string;
  /** Runs a shell command on the host (not in the sandbox). */
  exec(command: string, opts?: { cwd?: string; timeoutMs?: number; signal?: AbortSignal }): Promise<{ stdout: string; stderr: string; exitCode: number | null }>;
  readFile(path: string): Promise<string>;
  writeFile(path: string, content: string): Promise<void>;
  /**
   * An integration's settings: config.json `tools.settings.<name>` (free-form; the integration
   * checks it, e.g. with `integrationSettings`), or undefined when the operator set none.
   */
  settings(name: string): unknown;
  /**
   * A credential, read at each call and never shown to the agent: `env:NAME`, `file:PATH`
   * (relative to the data dir) or `profile:<id>` (that auth profile's secret). Throws an Error
   * naming the reference (never a value) when it cannot be read.
   */
  secret(ref: string): string;
}

/** What a tool module exports: one tool, or several (an integration's), or a factory of either. */
export type CustomToolExport = MomTool | MomTool[] | ((api: CustomToolApi) => MomTool | MomTool[] | Promise<MomTool | MomTool[]>);

export interface GateCall {
  toolCallId: string;
  toolId: string;
  risk: Risk;
  args: unknown;
  timeoutMs?: number;
  /** A call made by a run_code script or a sub-agent: the run_code or spawn call's id, carried by every receipt. */
  parentToolCallId?: string;
}

/**
 * The one place every tool call goes through: policy (allow / ask / deny), approvals, receipts
 * and the timeout. Built-in tools and `invoke_tool` both call it; `fn` runs only when allowed.
 */
export interface ToolGate {
  run<T>(call: GateCall, signal: AbortSignal | undefined, fn: (signal: AbortSignal) => Promise<T>): Promise<T>;
}
