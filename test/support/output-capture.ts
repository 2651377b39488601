/** Collects what a service writes to its terminal and lets a test wait for text to appear. */
export class OutputCapture {
  text = "";
  private waiters: Array<() => void> = [];

  write = (chunk: string): void => {
    this.text += chunk;
    for (const w of this.waiters.splice(0)) w();
  };

  /**
   * Waits until a run that answered `answer` has ended in the terminal: answers stream in as the
   * model writes them, and the run's usage line follows only once its `run_ended` arrived.
   */
  waitForAnswer(answer: string, timeoutMs = 15_000): Promise<void> {
    const escaped = answer.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    return this.waitFor(new RegExp(`${escaped}[\\s\\S]*\\n {2}[\\d,]+ in · `), timeoutMs);
  }

  /** The JSON log lines written so far (a service's pino output), parsed. */
  jsonLines(): Record<string, unknown>[] {
    return this.text
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  }

  async waitFor(pattern: string | RegExp, timeoutMs = 15_000): Promise<void> {
    const matches = () => (typeof pattern === "string" ? this.text.includes(pattern) : pattern.test(this.text));
    const deadline = Date.now() + timeoutMs;
    while (!matches()) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${String(pattern)}; output so far:\n${this.text}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.min(left, 200));
        this.waiters.push(() => (clearTimeout(t), resolve()));
      });
    }
  }
}
