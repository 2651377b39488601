import { AsyncLocalStorage } from "node:async_hooks";

/** Status and `retry-after` of the HTTP responses a provider SDK received. */
export interface ProbedResponse {
  status: number;
  retryAfter: string | null;
}

const current = new AsyncLocalStorage<ProbedResponse[]>();
let installed = false;

/**
 * pi-ai turns a failed provider call into an error message and drops the response headers, but
 * rotation needs the status and `retry-after`. The provider SDKs call the global fetch inside the
 * stream they start, so a fetch that only looks at responses, scoped to one model call by
 * AsyncLocalStorage, sees them without changing any request.
 */
export function probeResponses<T>(sink: ProbedResponse[], call: () => T): T {
  if (!installed) {
    installed = true;
    const original = globalThis.fetch;
    globalThis.fetch = async (input, init) => {
      const res = await original(input, init);
      current.getStore()?.push({ status: res.status, retryAfter: res.headers.get("retry-after") });
      return res;
    };
  }
  return current.run(sink, call);
}
