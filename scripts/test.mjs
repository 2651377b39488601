// `npm test`: install + build when needed, run Jest, and close with the plain line
// `N passed, N failed` that CI reads. Exits non-zero when anything failed or nothing ran.
// --forceExit: a test that leaks a handle must fail loudly in its own suite, never hang CI.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { ensureBubblewrap, ensureKustomize, ensureNatsServer } from "./ensure-tools.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const ensure = spawnSync(process.execPath, [join(root, "scripts/ensure.mjs")], { stdio: "inherit" });
if (ensure.status !== 0) process.exit(ensure.status ?? 1);
if (!(await ensureNatsServer()) || !ensureBubblewrap({ required: true }) || !ensureKustomize()) process.exit(1);

const outDir = mkdtempSync(join(tmpdir(), "mom-jest-"));
const outFile = join(outDir, "results.json");
const jest = spawnSync(
  process.execPath,
  // Two workers: most suites wait on sockets, timers and child processes, not on the CPU.
  [join(root, "node_modules/jest/bin/jest.js"), "--json", "--forceExit", "--maxWorkers=2", `--outputFile=${outFile}`, ...process.argv.slice(2)],
  {
    cwd: root,
    stdio: "inherit",
    env: { ...process.env, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --experimental-vm-modules`.trim() },
  },
);

let passed = 0;
let failed = 0;
let skipped = 0;
let suitesFailed = 0;
try {
  const results = JSON.parse(readFileSync(outFile, "utf8"));
  passed = results.numPassedTests;
  failed = results.numFailedTests;
  skipped = results.numPendingTests + results.numTodoTests;
  suitesFailed = results.numRuntimeErrorTestSuites;
} catch {
  failed = 1;
  console.error("mom: jest produced no results");
}
rmSync(outDir, { recursive: true, force: true });
if (suitesFailed > 0) console.error(`mom: ${suitesFailed} test suite(s) failed to run`);
console.log(`${passed} passed, ${failed + suitesFailed} failed${skipped ? `, ${skipped} skipped` : ""}`);
process.exit(jest.status !== 0 || failed > 0 || suitesFailed > 0 || passed === 0 ? 1 : 0);
