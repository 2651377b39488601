/**
 * Runs tasks one at a time per key, in the order they were pushed; different keys run side by
 * side. A failed task does not stop the ones after it (its promise rejects, the queue goes on).
 */
export class ChannelQueue {
  private readonly tails = new Map<string, Promise<unknown>>();

  push<T>(key: string, task: () => Promise<T>): Promise<T> {
    const prev = this.tails.get(key) ?? Promise.resolve();
    const run = prev.then(task, task);
    const tail = run.catch(() => undefined);
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return run;
  }

  /** Resolves when every task pushed so far has settled. */
  async idle(): Promise<void> {
    while (this.tails.size > 0) await Promise.all([...this.tails.values()]);
  }
}
