// A fake LLM: a real OpenAI-compatible Chat Completions HTTP server on loopback.
//
// It speaks exactly what pi-ai's `openai-completions` provider (OpenAI SDK 6.x underneath) sends
// and parses: `POST <baseUrl>/chat/completions` with `stream: true` and
// `stream_options: {include_usage: true}`, answered as SSE `chat.completion.chunk`s
// (`choices[0].delta.content`, `delta.tool_calls[{index,id,type,function:{name,arguments}}]`,
// `finish_reason`, then a `choices: []` chunk carrying `usage`) and `data: [DONE]`.
// Errors use OpenAI's `{error:{message,type,param,code}}` body, which the SDK turns into the
// message `"<status> <message>"`.
//
// Turns are scripted per request (FIFO queue, then a fallback). Because it is a real server it
// also works across processes: see `fake-llm-main.ts` (CLI) and the `/__fake/*` control routes
// (`connectFakeLlm()`).
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export interface FakeToolCall {
  name: string;
  arguments: Record<string, unknown>;
  /** Tool call id; default `call_<request#>_<index>` (request# is 1-based since start/reset). */
  id?: string;
}

export interface FakeUsage {
  /** Uncached input tokens (pi's `usage.input`). */
  input: number;
  output: number;
  /** Cached input tokens (pi's `usage.cacheRead`); sent as `prompt_tokens_details.cached_tokens`. */
  cacheRead?: number;
}

export interface FakeReplyTurn {
  text?: string;
  toolCalls?: FakeToolCall[];
  /** Streamed first as `delta.reasoning_content` (pi turns it into a thinking block). */
  reasoning?: string;
  /** Default: a rough chars/4 estimate of the request and the reply. */
  usage?: FakeUsage;
  /** Wait this long before answering (before the response headers). */
  delayMs?: number;
  /** Wait this long between SSE chunks. */
  chunkDelayMs?: number;
  /** Override finish_reason (default "tool_calls" when toolCalls are given, else "stop"). */
  finishReason?: string;
}

export interface FakeErrorTurn {
  error: {
    status: number;
    message: string;
    /** Sent as the `retry-after` header. */
    retryAfterSeconds?: number;
    /** OpenAI error `type` / `code` (defaults derived from status). */
    type?: string;
    code?: string | null;
    /**
     * The OpenAI SDK inside pi-ai retries 408/409/429/5xx itself (2 times by default) unless the
     * server says `x-should-retry: false`. By default this fake sends that header, so one error
     * turn is exactly one request. Set true to leave the decision to the SDK.
     */
    sdkRetry?: boolean;
  };
}

export interface FakeHangTurn {
  /** Never answers; the request stays open until the client aborts or the server closes. */
  hang: true;
}

export interface FakeDisconnectTurn {
  /** Sends 200 + SSE headers, streams `afterText` (if any), then destroys the socket. */
  disconnect: { afterText?: string; delayMs?: number };
}

export type FakeTurn = FakeReplyTurn | FakeErrorTurn | FakeHangTurn | FakeDisconnectTurn;

export interface FakeRequest {
  model: string;
  messages: any[];
  tools?: any[];
  /** The whole parsed request body. */
  body: any;
  /** Request headers (lower-case names), e.g. `authorization: "Bearer fake-key"`. */
  headers: Record<string, string | string[] | undefined>;
  path: string;
  /** When it arrived (Date.now()). */
  receivedAt?: number;
  /**
   * How its response ended: "completed" once the whole response was handed to the socket,
   * "aborted" when the client went away first (a killed runner, an aborted run). Unset: still open.
   * A completed call has its usage in the ledger; an aborted one at most an estimate of it (`estimated`).
   */
  outcome?: "completed" | "aborted";
  endedAt?: number;
}

export type FakeResponder = FakeTurn | ((req: FakeRequest) => FakeTurn | Promise<FakeTurn>);

export interface FakeModelsJsonOptions {
  provider?: string;
  modelId?: string;
  contextWindow?: number;
  maxTokens?: number;
  /** USD per million tokens (default all 0). */
  cost?: { input: number; output: number; cacheRead?: number; cacheWrite?: number };
}

export interface FakeLlm {
  /** e.g. `http://127.0.0.1:PORT/v1` — the `baseUrl` for an openai-completions model. */
  baseUrl: string;
  port: number;
  /** Every chat-completions request received, in arrival order. */
  requests: FakeRequest[];
  /** Scripted turns, consumed one per request, FIFO. */
  enqueue(...turns: FakeResponder[]): void;
  /** Used when the queue is empty (default: a text turn "ok"). */
  setFallback(r: FakeResponder): void;
  /**
   * Every request made with this API key (`Authorization: Bearer <key>`) gets `turn` instead of
   * the queue, e.g. a 429 for one auth profile while another works; undefined removes the rule.
   */
  byKey(key: string, turn: FakeTurn | undefined): void;
  /**
   * What `GET <baseUrl>/models` answers (default: the list `["fake-model"]`): other ids, or an
   * error (e.g. 401). A `byKey` error rule applies to that route too.
   */
  setModels(r: string[] | FakeErrorTurn): void;
  /** Number of queued turns not consumed yet. */
  pending(): number;
  /** Clears the queue and the recorded requests, restarts request numbering (ids), restores the default fallback. */
  reset(): void;
  waitForRequests(n: number, timeoutMs?: number): Promise<void>;
  modelsJson(opts?: FakeModelsJsonOptions): FakeModelsJson;
  close(): Promise<void>;
}

export interface FakeModelsJson {
  providers: Record<string, {
    baseUrl: string;
    api: "openai-completions";
    apiKey: string;
    compat: Record<string, unknown>;
    models: Array<Record<string, unknown>>;
  }>;
}

export const FAKE_API_KEY = "fake-key";
const DEFAULT_FALLBACK: FakeTurn = { text: "ok" };

/**
 * pi `models.json` content for an OpenAI-compatible fake at `baseUrl`. The compat block keeps the
 * requests plain: `system` role (not `developer`), no `reasoning_effort`, no `store`.
 */
export function fakeLlmModelsJson(baseUrl: string, opts: FakeModelsJsonOptions = {}): FakeModelsJson {
  const provider = opts.provider ?? "fake";
  const modelId = opts.modelId ?? "fake-model";
  return {
    providers: {
      [provider]: {
        baseUrl,
        api: "openai-completions",
        apiKey: FAKE_API_KEY,
        compat: {
          supportsDeveloperRole: false,
          supportsReasoningEffort: false,
          supportsStore: false,
          supportsUsageInStreaming: true,
        },
        models: [
          {
            id: modelId,
            name: `Fake ${modelId}`,
            reasoning: false,
            input: ["text", "image"],
            contextWindow: opts.contextWindow ?? 128000,
            maxTokens: opts.maxTokens ?? 16384,
            cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, ...opts.cost },
          },
        ],
      },
    },
  };
}

// ---------------------------------------------------------------------------------------------

function isError(t: FakeTurn): t is FakeErrorTurn {
  return typeof (t as FakeErrorTurn).error === "object" && (t as FakeErrorTurn).error !== null;
}
function isHang(t: FakeTurn): t is FakeHangTurn {
  return (t as FakeHangTurn).hang === true;
}
function isDisconnect(t: FakeTurn): t is FakeDisconnectTurn {
  return typeof (t as FakeDisconnectTurn).disconnect === "object" && (t as FakeDisconnectTurn).disconnect !== null;
}

/** Splits text into several streaming deltas (word-ish pieces; at least 2 when length >= 2). */
export function splitDeltas(text: string): string[] {
  if (text.length === 0) return [];
  const words = text.match(/\s*\S+\s*|\s+/g) ?? [text];
  if (words.length >= 2) return words;
  if (text.length < 2) return [text];
  const parts = Math.min(3, text.length);
  const size = Math.ceil(text.length / parts);
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

/** Splits a JSON string into ~3 pieces (tool call arguments are streamed in fragments). */
function splitArgs(json: string): string[] {
  if (json.length <= 2) return [json];
  const size = Math.max(1, Math.ceil(json.length / 3));
  const out: string[] = [];
  for (let i = 0; i < json.length; i += size) out.push(json.slice(i, i + size));
  return out;
}

function estimateTokens(s: string): number {
  return Math.max(1, Math.ceil(s.length / 4));
}

function errorType(status: number): string {
  if (status === 400) return "invalid_request_error";
  if (status === 401) return "authentication_error";
  if (status === 403) return "permission_error";
  if (status === 404) return "not_found_error";
  if (status === 429) return "rate_limit_error";
  if (status >= 500) return "server_error";
  return "api_error";
}

function errorCode(status: number): string | null {
  if (status === 401) return "invalid_api_key";
  if (status === 429) return "rate_limit_exceeded";
  return null;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0 || signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": String(Buffer.byteLength(text)),
    ...headers,
  });
  res.end(text);
}

function normalizeTurns(x: unknown): FakeTurn[] {
  if (Array.isArray(x)) return x as FakeTurn[];
  if (x && typeof x === "object") return [x as FakeTurn];
  throw new Error("expected a FakeTurn or an array of FakeTurn");
}

export async function startFakeLlm(opts: { port?: number; host?: string } = {}): Promise<FakeLlm> {
  const host = opts.host ?? "127.0.0.1";
  const requests: FakeRequest[] = [];
  const queue: FakeResponder[] = [];
  let fallback: FakeResponder = DEFAULT_FALLBACK;
  let modelsAnswer: string[] | FakeErrorTurn = ["fake-model"];
  const keyTurns = new Map<string, FakeTurn>();
  let waiters: Array<{ n: number; resolve: () => void }> = [];
  const sockets = new Set<Socket>();
  const live = new Set<AbortController>();
  let closed = false;
  let seq = 0;

  const notify = () => {
    const ready = waiters.filter((w) => requests.length >= w.n);
    waiters = waiters.filter((w) => requests.length < w.n);
    for (const w of ready) w.resolve();
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err) => {
      if (!res.headersSent && !res.destroyed) {
        sendJson(res, 500, { error: { message: `fake-llm: ${String(err?.message ?? err)}`, type: "server_error", param: null, code: null } }, { "x-should-retry": "false" });
      } else {
        res.destroy();
      }
    });
  });
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.setNoDelay(true);
    s.on("close", () => sockets.delete(s));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://x");
    const path = url.pathname;

    // ---- control routes (for other processes) ----
    if (path.startsWith("/__fake/")) {
      const raw = req.method === "POST" ? await readBody(req) : "";
      const body = raw ? JSON.parse(raw) : undefined;
      switch (`${req.method} ${path}`) {
        case "GET /__fake/requests":
          return sendJson(res, 200, requests);
        case "POST /__fake/enqueue":
          queue.push(...normalizeTurns(body));
          return sendJson(res, 200, { pending: queue.length });
        case "POST /__fake/fallback":
          fallback = normalizeTurns(body)[0] ?? DEFAULT_FALLBACK;
          return sendJson(res, 200, {});
        case "POST /__fake/by-key":
          if (body?.turn) keyTurns.set(String(body.key), body.turn);
          else keyTurns.delete(String(body?.key));
          return sendJson(res, 200, {});
        case "POST /__fake/models":
          modelsAnswer = body;
          return sendJson(res, 200, {});
        case "POST /__fake/reset":
          api.reset();
          return sendJson(res, 200, {});
        default:
          return sendJson(res, 404, { error: { message: `unknown control route ${path}` } });
      }
    }

    if (req.method === "GET" && /\/models\/?$/.test(path)) {
      const key = /^Bearer (.+)$/.exec(String(req.headers.authorization ?? ""))?.[1];
      const keyed = key !== undefined ? keyTurns.get(key) : undefined;
      const answer = keyed && isError(keyed) ? keyed : modelsAnswer;
      if (Array.isArray(answer)) return sendJson(res, 200, { object: "list", data: answer.map((id) => ({ id, object: "model", created: 0, owned_by: "fake" })) });
      const e = answer.error;
      return sendJson(res, e.status, { error: { message: e.message, type: e.type ?? errorType(e.status), param: null, code: e.code === undefined ? errorCode(e.status) : e.code } });
    }
    if (req.method !== "POST" || !/\/chat\/completions\/?$/.test(path)) {
      return sendJson(res, 404, { error: { message: `fake-llm: no route ${req.method} ${path}`, type: "invalid_request_error", param: null, code: "unknown_url" } });
    }

    const raw = await readBody(req);
    let body: any;
    try {
      body = JSON.parse(raw);
    } catch {
      return sendJson(res, 400, { error: { message: "fake-llm: request body is not JSON", type: "invalid_request_error", param: null, code: null } }, { "x-should-retry": "false" });
    }
    const fr: FakeRequest = {
      model: String(body?.model ?? ""),
      messages: Array.isArray(body?.messages) ? body.messages : [],
      ...(Array.isArray(body?.tools) ? { tools: body.tools } : {}),
      body,
      headers: { ...req.headers },
      path,
      receivedAt: Date.now(),
    };
    const reqNo = ++seq;
    // Take the responder synchronously so turns are matched to requests in arrival order.
    const key = /^Bearer (.+)$/.exec(String(req.headers.authorization ?? ""))?.[1];
    const responder = key !== undefined && keyTurns.has(key) ? keyTurns.get(key)! : queue.length > 0 ? queue.shift()! : fallback;
    requests.push(fr);
    notify();

    const ac = new AbortController();
    live.add(ac);
    res.on("finish", () => {
      fr.outcome ??= "completed";
      fr.endedAt ??= Date.now();
    });
    res.on("close", () => {
      fr.outcome ??= "aborted";
      fr.endedAt ??= Date.now();
      ac.abort();
      live.delete(ac);
    });
    const turn = typeof responder === "function" ? await responder(fr) : responder;
    if (ac.signal.aborted) return;
    await respond(turn, fr, reqNo, res, ac.signal);
  }

  async function respond(turn: FakeTurn, fr: FakeRequest, reqNo: number, res: ServerResponse, signal: AbortSignal): Promise<void> {
    const id = `chatcmpl-fake-${reqNo}`;
    const created = Math.floor(Date.now() / 1000);
    const model = fr.model || "fake-model";
    const baseHeaders = { "x-request-id": `req_fake_${reqNo}` };

    if (isHang(turn)) {
      // Leave the response open; the "close" listener cleans up on client abort / server close.
      return;
    }

    if (isError(turn)) {
      const e = turn.error;
      const headers: Record<string, string> = { ...baseHeaders };
      if (e.retryAfterSeconds !== undefined) headers["retry-after"] = String(e.retryAfterSeconds);
      if (!e.sdkRetry) headers["x-should-retry"] = "false";
      return sendJson(res, e.status, {
        error: { message: e.message, type: e.type ?? errorType(e.status), param: null, code: e.code === undefined ? errorCode(e.status) : e.code },
      }, headers);
    }

    const streaming = fr.body?.stream === true;
    const write = (obj: unknown) => {
      if (!res.destroyed) res.write(`data: ${JSON.stringify(obj)}\n\n`);
    };
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
      id,
      object: "chat.completion.chunk",
      created,
      model,
      system_fingerprint: "fp_fake",
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      ...(fr.body?.stream_options?.include_usage ? { usage: null } : {}),
    });

    if (isDisconnect(turn)) {
      await sleep(turn.disconnect.delayMs ?? 0, signal);
      if (signal.aborted) return;
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", ...baseHeaders });
      write(chunk({ role: "assistant", content: "" }));
      for (const d of splitDeltas(turn.disconnect.afterText ?? "")) write(chunk({ content: d }));
      // Let the bytes leave before killing the connection.
      await new Promise<void>((r) => res.write("", () => r()));
      res.socket?.destroy();
      res.destroy();
      return;
    }

    const t = turn as FakeReplyTurn;
    await sleep(t.delayMs ?? 0, signal);
    if (signal.aborted) return;

    const text = t.text ?? "";
    const toolCalls = (t.toolCalls ?? []).map((tc, i) => ({
      id: tc.id ?? `call_${reqNo}_${i}`,
      name: tc.name,
      args: JSON.stringify(tc.arguments ?? {}),
    }));
    const finish = t.finishReason ?? (toolCalls.length > 0 ? "tool_calls" : "stop");
    const u = t.usage ?? {
      input: estimateTokens(JSON.stringify(fr.messages) + JSON.stringify(fr.tools ?? [])),
      output: estimateTokens(text + (t.reasoning ?? "") + toolCalls.map((c) => c.name + c.args).join("")),
    };
    const cached = u.cacheRead ?? 0;
    const usage = {
      prompt_tokens: u.input + cached,
      completion_tokens: u.output,
      total_tokens: u.input + cached + u.output,
      prompt_tokens_details: { cached_tokens: cached, audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
    };

    if (!streaming) {
      const message: Record<string, unknown> = { role: "assistant", content: text.length > 0 ? text : null, refusal: null };
      if (t.reasoning) message.reasoning_content = t.reasoning;
      if (toolCalls.length > 0) {
        message.tool_calls = toolCalls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.args } }));
      }
      return sendJson(res, 200, {
        id,
        object: "chat.completion",
        created,
        model,
        system_fingerprint: "fp_fake",
        choices: [{ index: 0, message, logprobs: null, finish_reason: finish }],
        usage,
      }, baseHeaders);
    }

    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      connection: "keep-alive",
      ...baseHeaders,
    });
    const gap = t.chunkDelayMs ?? 0;
    const pieces: Array<Record<string, unknown>> = [];
    pieces.push(chunk({ role: "assistant", content: "", refusal: null }));
    for (const d of splitDeltas(t.reasoning ?? "")) pieces.push(chunk({ reasoning_content: d }));
    for (const d of splitDeltas(text)) pieces.push(chunk({ content: d }));
    toolCalls.forEach((c, index) => {
      pieces.push(chunk({ tool_calls: [{ index, id: c.id, type: "function", function: { name: c.name, arguments: "" } }] }));
      for (const a of splitArgs(c.args)) pieces.push(chunk({ tool_calls: [{ index, function: { arguments: a } }] }));
    });
    pieces.push(chunk({}, finish));
    for (let i = 0; i < pieces.length; i++) {
      if (signal.aborted) return;
      if (i > 0) await sleep(gap, signal);
      if (signal.aborted) return;
      write(pieces[i]);
    }
    if (fr.body?.stream_options?.include_usage) {
      write({ id, object: "chat.completion.chunk", created, model, system_fingerprint: "fp_fake", choices: [], usage });
    }
    if (!res.destroyed) res.end("data: [DONE]\n\n");
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const addr = server.address();
  if (!addr || typeof addr !== "object") throw new Error("fake-llm: no address");
  const port = addr.port;
  const baseUrl = `http://${host}:${port}/v1`;

  const api: FakeLlm = {
    baseUrl,
    port,
    requests,
    enqueue: (...turns) => {
      queue.push(...turns);
    },
    setFallback: (r) => {
      fallback = r;
    },
    pending: () => queue.length,
    setModels: (r) => {
      modelsAnswer = r;
    },
    byKey: (key, turn) => {
      if (turn) keyTurns.set(key, turn);
      else keyTurns.delete(key);
    },
    reset: () => {
      queue.length = 0;
      keyTurns.clear();
      requests.length = 0;
      seq = 0;
      fallback = DEFAULT_FALLBACK;
      modelsAnswer = ["fake-model"];
    },
    waitForRequests: (n, timeoutMs = 10000) => {
      if (requests.length >= n) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const w = {
          n,
          resolve: () => {
            clearTimeout(timer);
            resolve();
          },
        };
        const timer = setTimeout(() => {
          waiters = waiters.filter((x) => x !== w);
          reject(new Error(`fake-llm: expected ${n} request(s) within ${timeoutMs} ms, got ${requests.length}`));
        }, timeoutMs);
        waiters.push(w);
      });
    },
    modelsJson: (o) => fakeLlmModelsJson(baseUrl, o),
    close: async () => {
      if (closed) return;
      closed = true;
      for (const ac of live) ac.abort();
      const done = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      server.closeAllConnections?.();
      await done;
    },
  };
  return api;
}

// ---------------------------------------------------------------------------------------------
// Cross-process use

/** Drives a fake LLM in another process through its `/__fake/*` control routes. */
export interface FakeLlmRemote {
  baseUrl: string;
  requests(): Promise<FakeRequest[]>;
  enqueue(...turns: FakeTurn[]): Promise<void>;
  setFallback(turn: FakeTurn): Promise<void>;
  byKey(key: string, turn: FakeTurn | undefined): Promise<void>;
  reset(): Promise<void>;
  setModels(r: string[] | FakeErrorTurn): Promise<void>;
  waitForRequests(n: number, timeoutMs?: number): Promise<FakeRequest[]>;
  modelsJson(opts?: FakeModelsJsonOptions): FakeModelsJson;
}

export function connectFakeLlm(baseUrl: string): FakeLlmRemote {
  const root = baseUrl.replace(/\/v1\/?$/, "").replace(/\/$/, "");
  const call = async (method: string, route: string, body?: unknown): Promise<any> => {
    const r = await fetch(`${root}/__fake/${route}`, {
      method,
      ...(body !== undefined ? { body: JSON.stringify(body), headers: { "content-type": "application/json" } } : {}),
    });
    if (!r.ok) throw new Error(`fake-llm control ${route}: HTTP ${r.status}`);
    return r.json();
  };
  const remote: FakeLlmRemote = {
    baseUrl,
    requests: () => call("GET", "requests"),
    enqueue: async (...turns) => void (await call("POST", "enqueue", turns)),
    setFallback: async (turn) => void (await call("POST", "fallback", turn)),
    byKey: async (key, turn) => void (await call("POST", "by-key", { key, turn })),
    reset: async () => void (await call("POST", "reset", {})),
    setModels: async (r) => void (await call("POST", "models", r)),
    waitForRequests: async (n, timeoutMs = 10000) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const rs = await remote.requests();
        if (rs.length >= n) return rs;
        if (Date.now() > deadline) throw new Error(`fake-llm: expected ${n} request(s) within ${timeoutMs} ms, got ${rs.length}`);
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    modelsJson: (o) => fakeLlmModelsJson(baseUrl, o),
  };
  return remote;
}

/**
 * Path of the compiled CLI (`dist/fake-llm-main.js`). Works whether this module runs from
 * `dist/` or from `src/` (Jest maps `@mom/testing` to sources), so it needs a prior `tsc -b`.
 */
export function fakeLlmMainPath(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const dist = basename(here) === "src" ? join(here, "..", "dist") : here;
  return join(dist, "fake-llm-main.js");
}

export interface SpawnedFakeLlm extends FakeLlmRemote {
  port: number;
  pid: number;
  stop(): Promise<void>;
}

/** Starts the fake in a child process (`node dist/fake-llm-main.js <turns.json>`). */
export async function spawnFakeLlm(opts: { turns?: FakeTurn[]; port?: number; timeoutMs?: number } = {}): Promise<SpawnedFakeLlm> {
  const dir = mkdtempSync(join(tmpdir(), "fake-llm-"));
  const file = join(dir, "turns.json");
  writeFileSync(file, JSON.stringify(opts.turns ?? []));
  const args = [fakeLlmMainPath(), file, ...(opts.port !== undefined ? ["--port", String(opts.port)] : [])];
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"] });
  const cleanup = () => rmSync(dir, { recursive: true, force: true });
  try {
    const line = await new Promise<string>((resolve, reject) => {
      let buf = "";
      const timer = setTimeout(() => reject(new Error("fake-llm-main did not print its address")), opts.timeoutMs ?? 10000);
      child.stdout!.setEncoding("utf8");
      child.stdout!.on("data", (d: string) => {
        buf += d;
        const nl = buf.indexOf("\n");
        if (nl >= 0) {
          clearTimeout(timer);
          resolve(buf.slice(0, nl));
        }
      });
      child.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`fake-llm-main exited with ${code}`));
      });
      child.once("error", (e) => {
        clearTimeout(timer);
        reject(e);
      });
    });
    child.stdout!.resume();
    const info = JSON.parse(line) as { baseUrl: string; port: number };
    const exited = new Promise<void>((r) => (child.exitCode !== null ? r() : child.once("exit", () => r())));
    return {
      ...connectFakeLlm(info.baseUrl),
      port: info.port,
      pid: child.pid!,
      stop: async () => {
        if (child.exitCode === null) child.kill("SIGTERM");
        await exited;
        cleanup();
      },
    };
  } catch (e) {
    child.kill("SIGKILL");
    cleanup();
    throw e;
  }
}
