/** Status and `retry-after` of the HTTP responses a provider SDK received. */
export interface ProbedResponse {
  status: number;
  retryAfter: string | null;
}

// pi-ai turns a failed provider call into an error message and drops the response headers, but
// rotation needs the status and `retry-after`. Every pi-ai provider that speaks HTTP passes the
// call's `headers` to the global fetch, so a tag header marks the call's requests; a fetch wrapper
// takes the tag off before anything is sent and files the response under it. (AsyncLocalStorage
// did the same without a tag, but on Node 20 it switches on promise hooks for the whole process,
// which cost the runner ~5% of its CPU.)
const TAG = "x-mom-response-probe";
const sinks = new Map<string, ProbedResponse[]>();
let nextId = 0;
let installed = false;

type HeadersArg = NonNullable<RequestInit["headers"]>;

function untag(headers: HeadersArg): { id: string; rest: HeadersArg } | undefined {
  if (headers instanceof Headers) {
    const id = headers.get(TAG);
    if (id === null) return undefined;
    const rest = new Headers(headers);
    rest.delete(TAG);
    return { id, rest };
  }
  if (Array.isArray(headers)) {
    const at = headers.findIndex(([k]) => k.toLowerCase() === TAG);
    return at < 0 ? undefined : { id: headers[at]![1]!, rest: headers.filter((_, i) => i !== at) };
  }
  const key = Object.keys(headers).find((k) => k.toLowerCase() === TAG);
  if (key === undefined) return undefined;
  const { [key]: id, ...rest } = headers as Record<string, string>;
  return { id: id!, rest };
}

function install(): void {
  installed = true;
  const original = globalThis.fetch;
  globalThis.fetch = async (input, init) => {
    const tagged = init?.headers ? untag(init.headers) : undefined;
    if (!tagged) return original(input, init);
    const res = await original(input, { ...init, headers: tagged.rest });
    sinks.get(tagged.id)?.push({ status: res.status, retryAfter: res.headers.get("retry-after") });
    return res;
  };
}

/**
 * Calls `call` with the headers that mark its requests; their responses land in `sink` until
 * `release` (the caller judges a refusal on the call's first event, so it releases after that).
 */
export function probeResponses<T>(sink: ProbedResponse[], call: (tag: Record<string, string>) => T): { result: T; release: () => void } {
  if (!installed) install();
  const id = String(++nextId);
  sinks.set(id, sink);
  const release = () => void sinks.delete(id);
  try {
    return { result: call({ [TAG]: id }), release };
  } catch (err) {
    release();
    throw err;
  }
}
