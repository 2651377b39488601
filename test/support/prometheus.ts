/** Reads one sample from Prometheus text: the sum over series of `name` whose labels include `labels`. */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) sum += Number(m[3]);
  }
  return sum;
}

export async function scrape(port: number): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  if (!res.ok) throw new Error(`/metrics answered ${res.status}`);
  return res.text();
}
