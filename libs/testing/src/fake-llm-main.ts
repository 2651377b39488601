// CLI: run the fake LLM as its own process (benchmarks, multi-process tests).
//
//   node libs/testing/dist/fake-llm-main.js [turns.json|-] [--port N] [--host H]
//
// turns.json holds an array of FakeTurn (or `{ "turns": [...], "fallback": FakeTurn }`), consumed
// one per request in order; afterwards every request gets the fallback (text "ok"). Prints one
// JSON line `{"baseUrl":"http://127.0.0.1:PORT/v1","port":PORT}` on stdout once listening, then
// serves until SIGTERM/SIGINT. More turns can be queued at runtime via `connectFakeLlm(baseUrl)`.
// `FAKE_LLM_LOG=1` logs one JSON line per request on stderr.
import { readFileSync } from "node:fs";
import { startFakeLlm, type FakeTurn } from "./fake-llm.js";

function argValue(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

async function main(): Promise<void> {
  const positional = process.argv.slice(2).filter((a, i, all) => !a.startsWith("--") && !(i > 0 && all[i - 1]!.startsWith("--")));
  const file = positional[0];
  let turns: FakeTurn[] = [];
  let fallback: FakeTurn | undefined;
  if (file && file !== "-") {
    const parsed = JSON.parse(readFileSync(file, "utf8")) as unknown;
    if (Array.isArray(parsed)) turns = parsed as FakeTurn[];
    else if (parsed && typeof parsed === "object") {
      const o = parsed as { turns?: FakeTurn[]; fallback?: FakeTurn };
      turns = o.turns ?? [];
      fallback = o.fallback;
    } else throw new Error(`${file}: expected an array of turns`);
  }
  const portArg = argValue("--port") ?? process.env.FAKE_LLM_PORT;
  const host = argValue("--host") ?? "127.0.0.1";
  const llm = await startFakeLlm({ port: portArg ? Number(portArg) : 0, host });
  llm.enqueue(...turns);
  if (fallback) llm.setFallback(fallback);
  if (process.env.FAKE_LLM_LOG === "1") {
    const push = llm.requests.push.bind(llm.requests);
    llm.requests.push = (...items) => {
      for (const r of items) process.stderr.write(`${JSON.stringify({ fakeLlmRequest: llm.requests.length + 1, model: r.model, messages: r.messages.length })}\n`);
      return push(...items);
    };
  }
  process.stdout.write(`${JSON.stringify({ baseUrl: llm.baseUrl, port: llm.port })}\n`);
  const stop = () => {
    llm.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
}

main().catch((err) => {
  process.stderr.write(`fake-llm-main: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
