/**
 * The last `max` bytes of a job's output (stdout and stderr as they came), and how many bytes came
 * in all: a job that prints for an hour costs the runner `max` bytes, and a reader that asks from
 * an offset learns how much of what it missed is gone.
 */
export class OutputTail {
  private chunks: Buffer[] = [];
  private kept = 0;
  /** Bytes of output so far, kept or not. */
  total = 0;

  constructor(private readonly max: number) {}

  push(chunk: Buffer): void {
    this.total += chunk.length;
    if (chunk.length >= this.max) {
      this.chunks = [Buffer.from(chunk.subarray(chunk.length - this.max))];
      this.kept = this.max;
      return;
    }
    this.chunks.push(chunk);
    this.kept += chunk.length;
    while (this.kept > this.max) {
      const head = this.chunks[0]!;
      const over = this.kept - this.max;
      if (head.length <= over) {
        this.chunks.shift();
        this.kept -= head.length;
      } else {
        this.chunks[0] = head.subarray(over);
        this.kept -= over;
      }
    }
  }

  /** Where the kept bytes start, as an offset into the whole output. */
  get keptFrom(): number {
    return this.total - this.kept;
  }

  /** The output from offset `from` on, as far as it is kept; `dropped`: bytes after `from` no longer kept. */
  since(from: number): { text: string; dropped: number } {
    const start = Math.max(from, this.keptFrom);
    const all = Buffer.concat(this.chunks);
    return { text: all.subarray(start - this.keptFrom).toString("utf8"), dropped: start - Math.min(from, start) };
  }

  /** At most the last `n` bytes. */
  last(n: number): { text: string; dropped: number } {
    return this.since(Math.max(0, this.total - n));
  }
}
