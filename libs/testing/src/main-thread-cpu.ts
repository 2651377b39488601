/**
 * The CPU time this thread spent while `work` ran, in ms (`cpuMs`): what a test of "never blocks
 * the runner" measures. Work moved to a worker thread or a child process does not count, and
 * unlike the longest gap of a timer (which a loaded CI machine stretched to 7 s) it does not count
 * time spent waiting for a core. It still grows on a busy machine (the same image read took 0.31 s
 * alone and 1.29 s of the thread's CPU in the full suite), so a test that can should compare it with
 * `processCpuMs`, the CPU of every thread of the process over the same time, measured alike.
 */
export async function mainThreadCpu<T>(work: () => Promise<T>): Promise<{ result: T; cpuMs: number; processCpuMs: number }> {
  const before = process.threadCpuUsage();
  const all = process.cpuUsage();
  const result = await work();
  const used = process.threadCpuUsage(before);
  const usedAll = process.cpuUsage(all);
  return { result, cpuMs: (used.user + used.system) / 1000, processCpuMs: (usedAll.user + usedAll.system) / 1000 };
}
