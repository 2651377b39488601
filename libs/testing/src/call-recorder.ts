// A list of everything a fake server saw, that a test can wait on. Shared by the fake platform
// servers (Discord, Slack, …): each records its own call type, tests assert on what the platform
// would have seen.

export class CallRecorder<T> {
  readonly calls: T[] = [];
  private waiters = new Set<() => void>();

  record(call: T): T {
    this.calls.push(call);
    for (const w of [...this.waiters]) w();
    return call;
  }

  filter(pred: (c: T) => boolean): T[] {
    return this.calls.filter(pred);
  }

  clear(): void {
    this.calls.length = 0;
  }

  /**
   * Resolves with the calls matching `pred` once there are at least `count` of them (default 1);
   * rejects after `timeoutMs` saying how many matched, with the last recorded calls for context.
   */
  async waitFor(pred: (c: T) => boolean, opts: { count?: number; timeoutMs?: number; what?: string } = {}): Promise<T[]> {
    const count = opts.count ?? 1;
    const timeoutMs = opts.timeoutMs ?? 15_000;
    const matching = () => this.calls.filter(pred);
    let found = matching();
    if (found.length >= count) return found;
    return new Promise<T[]>((resolve, reject) => {
      const check = () => {
        found = matching();
        if (found.length >= count) done(() => resolve(found));
      };
      const timer = setTimeout(() => {
        const recent = this.calls.slice(-10).map((c) => JSON.stringify(c).slice(0, 300));
        done(() =>
          reject(new Error(`timed out after ${timeoutMs} ms waiting for ${count} ${opts.what ?? "matching call(s)"}; got ${found.length}. Last calls:\n${recent.join("\n")}`)),
        );
      }, timeoutMs);
      const done = (fn: () => void) => {
        clearTimeout(timer);
        this.waiters.delete(check);
        fn();
      };
      this.waiters.add(check);
    });
  }
}
