/**
 * The CPU time this thread spent while `work` ran, in ms: what a test of "never blocks the runner"
 * measures. Work moved to a worker thread or a child process does not count, and unlike the
 * longest gap of a timer (which a loaded CI machine stretched to 7 s) it does not grow when the
 * machine is busy.
 */
export async function mainThreadCpu<T>(work: () => Promise<T>): Promise<{ result: T; cpuMs: number }> {
  const before = process.threadCpuUsage();
  const result = await work();
  const used = process.threadCpuUsage(before);
  return { result, cpuMs: (used.user + used.system) / 1000 };
}
