// Loads custom tool files in a worker thread, the way the registry then loads them in the
// runner, and reports for each whether loading finished. A loop or a process.exit() while
// importing (or in the factory) ends this worker, not the runner. Plain JavaScript next to the
// package (not in src/) so that one file serves the built runner and the tests.
import { parentPort, workerData } from "node:worker_threads";
import { createJiti } from "jiti";
// The same modules a tool may import as in the runner (the built package: this file is not compiled).
import { VIRTUAL_MODULES as virtualModules } from "../dist/custom-tools.js";

const refuse = () => Promise.reject(new Error("not available while the tool is being checked"));
const api = {
  dataDir: workerData.dataDir,
  workspaceDir: workerData.workspaceDir,
  exec: refuse,
  readFile: refuse,
  writeFile: refuse,
  // Only whether loading finishes matters here; the runner's own load sees the real settings.
  settings: () => undefined,
  secret: () => {
    throw new Error("not available while the tool is being checked");
  },
};

async function load(path) {
  const jiti = createJiti(import.meta.url, { moduleCache: false, fsCache: false, tryNative: false, interopDefault: false, virtualModules });
  try {
    const mod = await jiti.import(path);
    const exported = typeof mod === "function" ? mod : (mod?.default ?? mod?.tool);
    // Errors are the runner's to report when it loads the file; here only finishing matters.
    if (typeof exported === "function") await Promise.resolve(exported(api)).catch(() => {});
  } catch {
    // the runner's own load reports it
  }
}

parentPort.on("message", async ({ id, path }) => {
  await load(path);
  parentPort.postMessage({ id });
});
// Warm up the TypeScript transform so the first real file is timed fairly.
const warm = createJiti(import.meta.url, { moduleCache: false, fsCache: false, tryNative: false });
warm.evalModule("export const x: number = 1;", { filename: new URL("warm-up.ts", import.meta.url).pathname });
parentPort.postMessage({ ready: true });
