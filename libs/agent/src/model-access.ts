import type { StreamFn } from "@mariozechner/pi-agent-core";
import {
  type Api,
  type AssistantMessage,
  type AssistantMessageEvent,
  type AssistantMessageEventStream,
  type Context,
  calculateCost,
  createAssistantMessageEventStream,
  type Model,
  registerApiProvider,
  streamSimple,
} from "@mariozechner/pi-ai";
import { compact, estimateTokens, type ModelRegistry } from "@mariozechner/pi-coding-agent";
import type { ThinkingLevel } from "@mariozechner/pi-agent-core";
import type { ResolvedModel } from "./model.js";
import type { CompactWith } from "./resource-loader.js";
import { parseRetryAfter, type ProviderRefusal } from "@mom/auth";
import { type ProbedResponse, probeResponses } from "./response-probe.js";

/** What a model call will cost at most, by the model's prices (docs/auth.md). */
export interface CallEstimate {
  inputTokens: number;
  /** Output tokens set aside for the answer. */
  outputTokens: number;
  usd: number;
}

export type CredentialPick = { id: string; apiKey?: string } | { unavailable: string; retryAt?: number };

/**
 * Decides, around every model call of a channel, whether it may happen, with which credential,
 * and what happens when the provider refuses one. Implemented by the runner (spend limits, auth
 * profiles, shared cooldowns); the agent only calls it.
 */
export interface ModelAccess {
  /** The provider has a credential of mom's (an auth profile), whatever pi finds itself. */
  hasCredentials(provider: string): boolean;
  /**
   * Undefined to go ahead, else why the run must stop before spending (a spend limit). The
   * estimate walks the whole context, so it is made only when a limit needs it.
   */
  admit(estimate: () => CallEstimate, model: Model<Api>): Promise<string | undefined>;
  /** The credential for the next attempt (`apiKey` undefined: pi's own lookup), or why none is usable now. */
  pick(model: Model<Api>): Promise<CredentialPick>;
  /** The provider refused the credential: true to try the next one. */
  refused(credentialId: string, refusal: ProviderRefusal, model: Model<Api>): Promise<boolean>;
  /** The call ended (also in error); its usage is in the message: mom's estimate when `estimated` (estimatedUsage). */
  settled(credentialId: string, message: AssistantMessage, model: Model<Api>, estimated?: boolean): Promise<void>;
}

/** Output tokens reserved in an estimate: a typical answer, not the model's maximum. */
export const ESTIMATE_OUTPUT_TOKENS = 1024;
/** When every credential is cooling down and the first is back within this, the call waits for it. */
export const MAX_COOLDOWN_WAIT_MS = 20_000;
/** A run that mom stops carries this as the model error; the real reason travels separately (onStop). */
export const STOPPED_BEFORE_CALL = "stopped by mom before calling the model";
const MAX_ATTEMPTS = 12;

// pi hands every call a fresh tools array, but the tools in it are the session's own objects:
// measuring each once saves stringifying the whole list (schemas and all) on every call.
const toolChars = new WeakMap<object, number>();
function toolsLength(tools: Context["tools"]): number {
  if (!tools?.length) return 2;
  let n = 1 + tools.length; // brackets and commas of JSON.stringify(tools)
  for (const t of tools) {
    let len = toolChars.get(t);
    if (len === undefined) toolChars.set(t, (len = JSON.stringify(t).length));
    n += len;
  }
  return n;
}

export function estimateCall(model: Model<Api>, context: Context): CallEstimate {
  const chars = (context.systemPrompt?.length ?? 0) + toolsLength(context.tools);
  const inputTokens = Math.ceil(chars / 4) + context.messages.reduce((n, m) => n + estimateTokens(m as Parameters<typeof estimateTokens>[0]), 0);
  const outputTokens = Math.min(ESTIMATE_OUTPUT_TOKENS, model.maxTokens || ESTIMATE_OUTPUT_TOKENS);
  const usd = (inputTokens * model.cost.input + outputTokens * model.cost.output) / 1_000_000;
  return { inputTokens, outputTokens, usd };
}

/**
 * The usage of an answer stopped mid-stream, which the provider never reports (it comes last)
 * although it has read, and bills, the whole context: the input as spend limits estimate it, the
 * output from what had streamed. Undefined when the provider's own usage is there.
 */
export function estimatedUsage(model: Model<Api>, context: Context, message: AssistantMessage): AssistantMessage["usage"] | undefined {
  if (message.stopReason !== "aborted" || message.usage.totalTokens > 0) return undefined;
  const input = estimateCall(model, context).inputTokens;
  const output = message.content.length ? estimateTokens(message as Parameters<typeof estimateTokens>[0]) : 0;
  const usage = { input, output, cacheRead: 0, cacheWrite: 0, totalTokens: input + output, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
  calculateCost(model, usage);
  return usage;
}

/** How a pi session of a channel (its own, or a sub-agent's) calls the model: the channel's model and credentials. */
export function sessionModel(o: { resolved: ResolvedModel; thinkingLevel?: ThinkingLevel; modelAccess?: ModelAccess }) {
  const { model, authStorage, modelRegistry } = o.resolved;
  return { model, thinkingLevel: o.thinkingLevel ?? "off", authStorage, modelRegistry: o.modelAccess ? withPickedCredential(modelRegistry, o.modelAccess) : modelRegistry };
}

/**
 * The registry pi's session asks before a prompt (is there a credential?) and for the calls mom's
 * stream function does not make (compaction summaries): it answers with the channel's credentials,
 * so a setup whose only credentials are auth profiles works. Everything else is the shared registry's.
 */
export function withPickedCredential(registry: ModelRegistry, access: ModelAccess): ModelRegistry {
  const own = Object.create(registry) as ModelRegistry;
  own.hasConfiguredAuth = (model) => access.hasCredentials(model.provider) || registry.hasConfiguredAuth(model);
  own.getApiKeyAndHeaders = async (model) => {
    const pick = await access.pick(model);
    const real = await registry.getApiKeyAndHeaders(model);
    if (!("id" in pick) || pick.apiKey === undefined) return real;
    return { ok: true, apiKey: pick.apiKey, headers: real.ok ? real.headers : model.headers };
  };
  return own;
}

function stoppedMessage(model: Model<Api>): AssistantMessage {
  return {
    role: "assistant",
    content: [],
    api: model.api,
    provider: model.provider,
    model: model.id,
    usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
    stopReason: "error",
    errorMessage: STOPPED_BEFORE_CALL,
    timestamp: Date.now(),
  };
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

/**
 * pi's stream function with mom's access rules around it: admit (spend limits) → pick a
 * credential → call → on a refusal before any output, let `access` set the credential aside and
 * try the next → report usage. `onStop` gets the reason when mom itself ends the run, because pi
 * retries errors whose text looks transient and the reason may contain such words or numbers.
 */
export function guardedStreamFn(base: StreamFn, access: ModelAccess, registry: ModelRegistry, onStop: (reason: string) => void): StreamFn {
  return (model, context, options) => {
    const out = createAssistantMessageEventStream();
    const stop = (reason: string) => {
      // A run stopped by its user while waiting for a credential is aborted, not failed.
      const aborted = options?.signal?.aborted === true;
      if (!aborted) onStop(reason);
      const message: AssistantMessage = aborted ? { ...stoppedMessage(model), stopReason: "aborted", errorMessage: "aborted" } : stoppedMessage(model);
      out.push({ type: "error", reason: aborted ? "aborted" : "error", error: message });
      out.end(message);
    };
    const call = async (apiKey: string | undefined, tag: Record<string, string>) => {
      // One attempt per credential: the SDK's own retries would hit a refused key again.
      if (apiKey === undefined) return base(model, context, { ...options, maxRetries: 0, headers: { ...options?.headers, ...tag } });
      const auth = await registry.getApiKeyAndHeaders(model);
      let headers = auth.ok ? auth.headers : model.headers;
      if (auth.ok && auth.apiKey && headers?.Authorization === `Bearer ${auth.apiKey}`) headers = { ...headers, Authorization: `Bearer ${apiKey}` };
      return streamSimple(model, context, { ...options, apiKey, maxRetries: 0, headers: { ...headers, ...options?.headers, ...tag } });
    };
    void (async () => {
      // pi asks for the next answer even after its run was stopped during a tool call: no request then.
      if (options?.signal?.aborted) return stop("aborted");
      const reason = await access.admit(() => estimateCall(model, context), model);
      if (reason) return stop(reason);
      for (let attempt = 1; ; attempt++) {
        const pick = await access.pick(model);
        if ("unavailable" in pick) {
          const waitMs = (pick.retryAt ?? Infinity) - Date.now();
          if (waitMs > MAX_COOLDOWN_WAIT_MS || attempt > MAX_ATTEMPTS || options?.signal?.aborted) return stop(pick.unavailable);
          await sleep(Math.max(0, waitMs), options?.signal);
          continue;
        }
        const seen: ProbedResponse[] = [];
        const probe = probeResponses(seen, (tag) => call(pick.apiKey, tag));
        let inner: Awaited<typeof probe.result>;
        let first: IteratorResult<AssistantMessageEvent>;
        let events: AsyncIterator<AssistantMessageEvent>;
        try {
          inner = await probe.result;
          events = inner[Symbol.asyncIterator]();
          first = await events.next();
        } finally {
          probe.release();
        }
        const failed = first.done ? undefined : (first.value as AssistantMessageEvent);
        if (failed?.type === "error" && failed.reason === "error" && attempt < MAX_ATTEMPTS) {
          const last = seen.at(-1);
          const refusal: ProviderRefusal = {
            message: failed.error.errorMessage ?? "",
            ...(last && last.status >= 400 && { status: last.status }),
            ...(last && parseRetryAfter(last.retryAfter) !== undefined && { retryAfterMs: parseRetryAfter(last.retryAfter)! }),
          };
          if (await access.refused(pick.id, refusal, model)) continue;
        }
        // The closing event waits until the usage is recorded, so the next call's admit sees it.
        let closing: AssistantMessageEvent | undefined;
        for (let e = first; !e.done; e = await events.next()) {
          const ev = e.value as AssistantMessageEvent;
          if (ev.type === "done" || ev.type === "error") closing = ev;
          else out.push(ev);
        }
        const final = closing ? (closing.type === "done" ? closing.message : closing.type === "error" ? closing.error : undefined) : undefined;
        const message = final ?? (await inner.result());
        const estimate = estimatedUsage(model, context, message);
        await access.settled(pick.id, estimate ? { ...message, usage: estimate } : message, model, estimate !== undefined).catch(() => {});
        if (closing) out.push(closing);
        out.end(message);
        return;
      }
    })().catch((err: unknown) => {
      const message = { ...stoppedMessage(model), errorMessage: err instanceof Error ? err.message : String(err) };
      out.push({ type: "error", reason: "error", error: message });
      out.end(message);
    });
    return out;
  };
}

/** The pi-ai API id of models routed through a channel's guard (the real API rides along). */
const GUARDED_API = "mom-guarded";
const ROUTE = Symbol("mom.guarded-route");
type Routed = Model<Api> & { [ROUTE]?: { streamFn: StreamFn; api: Api } };
let guardedApiRegistered = false;

/**
 * pi's compaction summary (`compact`, which calls pi-ai's `completeSimple` itself, not the
 * agent's stream function) made through the channel's guarded stream function: the model is
 * handed over under an API id whose provider forwards to that function, so the summary call is
 * admitted against the spend limits, uses and rotates the channel's credentials and is written to
 * the usage ledger like every other call.
 */
export function guardedCompaction(streamFn: StreamFn, registry: ModelRegistry): CompactWith {
  // One provider for every channel: each routed model carries its own channel's stream function.
  if (!guardedApiRegistered) {
    guardedApiRegistered = true;
    const forward = (model: Routed, context: Context, options?: object): AssistantMessageEventStream => {
      const route = model[ROUTE];
      if (!route) throw new Error(`model ${model.id} was not routed through a channel's guard`);
      // guardedStreamFn answers synchronously with its own stream.
      return route.streamFn({ ...model, api: route.api }, context, options) as AssistantMessageEventStream;
    };
    registerApiProvider({ api: GUARDED_API as Api, stream: forward, streamSimple: forward }, "mom");
  }
  return async (event, model) => {
    const auth = await registry.getApiKeyAndHeaders(model);
    const routed: Routed = { ...model, api: GUARDED_API as Api, [ROUTE]: { streamFn, api: model.api } };
    return compact(event.preparation, routed, (auth.ok && auth.apiKey) || "", auth.ok ? auth.headers : undefined, event.customInstructions, event.signal);
  };
}
