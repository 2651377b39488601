/**
 * The longest the event loop was held while `work` ran, in ms: what a test of "never blocks the
 * runner" measures (a 10 ms timer, the largest gap between its ticks).
 */
export async function longestStall<T>(work: () => Promise<T>): Promise<{ result: T; stall: number }> {
  let last = performance.now();
  let stall = 0;
  const tick = setInterval(() => {
    const now = performance.now();
    stall = Math.max(stall, now - last);
    last = now;
  }, 10);
  try {
    const result = await work();
    return { result, stall: Math.max(stall, performance.now() - last) };
  } finally {
    clearInterval(tick);
  }
}
