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
// Checked before the build: a typo should cost nothing.
const workers = process.env.MOM_TEST_WORKERS ?? "3";
if (!/^[1-9]\d*$/.test(workers)) {
  console.error(`npm test: MOM_TEST_WORKERS must be a whole number of Jest workers, 1 or more (got "${workers}")`);
  process.exit(2);
}
const ensure = spawnSync(process.execPath, [join(root, "scripts/ensure.mjs")], { stdio: "inherit" });
if (ensure.status !== 0) process.exit(ensure.status ?? 1);
if (!(await ensureNatsServer()) || !ensureBubblewrap({ required: true }) || !ensureKustomize()) process.exit(1);

// The whole suite runs in two phases. Most suites wait on sockets, timers and child processes more
// than on the CPU: three workers keep two cores busy (~90%). The fault tests (test/chaos) hold
// timing bounds under node and runner faults, so they run after the rest, two at a time, as they
// were measured. A run of chosen paths is one phase of two workers.
const args = process.argv.slice(2);
const phases = args.length > 0 ? [{ workers: 2, args }] : [
  { workers: Number(workers), args: ["--testPathIgnorePatterns", "/test/chaos/"] },
  { workers: 2, args: ["test/chaos"] },
];

let passed = 0;
let failed = 0;
let skipped = 0;
let suitesFailed = 0;
let jestFailed = false;
for (const phase of phases) {
  const outDir = mkdtempSync(join(tmpdir(), "mom-jest-"));
  const outFile = join(outDir, "results.json");
  const jest = spawnSync(
    process.execPath,
    [join(root, "node_modules/jest/bin/jest.js"), "--json", "--forceExit", `--maxWorkers=${phase.workers}`, `--outputFile=${outFile}`, ...phase.args],
    {
      cwd: root,
      stdio: "inherit",
      env: { ...process.env, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --experimental-vm-modules`.trim() },
    },
  );
  jestFailed ||= jest.status !== 0;
  try {
    const results = JSON.parse(readFileSync(outFile, "utf8"));
    passed += results.numPassedTests;
    failed += results.numFailedTests;
    skipped += results.numPendingTests + results.numTodoTests;
    suitesFailed += results.numRuntimeErrorTestSuites;
  } catch {
    failed += 1;
    console.error(`mom: jest produced no results (${phase.args.join(" ")})`);
  }
  rmSync(outDir, { recursive: true, force: true });
}
if (process.env.MOM_DEPLOY_LOG) {
  const verdict = deployVerdict(process.env.MOM_DEPLOY_LOG);
  console.log(verdict.text);
  if (verdict.passed) passed++;
  else if (verdict.failed) failed++;
}
if (suitesFailed > 0) console.error(`mom: ${suitesFailed} test suite(s) failed to run`);
console.log(`${passed} passed, ${failed + suitesFailed} failed${skipped ? `, ${skipped} skipped` : ""}`);
process.exit(jestFailed || failed > 0 || suitesFailed > 0 || passed === 0 ? 1 : 0);

// .ci/run runs `npm run test:deploy` (tens of minutes on a new machine) before the suite and hands
// its output over, so that its verdict sits just above the closing line, which counts it.
function deployVerdict(file) {
  let lines;
  try {
    lines = readFileSync(file, "utf8").split("\n");
  } catch (e) {
    return { failed: true, text: `test:deploy: FAIL - its output ${file} cannot be read: ${e.message}` };
  }
  const at = lines.findIndex((l) => /^test:deploy: (PASS|FAIL|NOT RUN)/.test(l));
  if (at < 0) return { failed: true, text: `test:deploy: FAIL - it printed no verdict; its last lines:\n${lines.slice(-15).join("\n")}` };
  const line = lines[at];
  if (line.startsWith("test:deploy: PASS")) return { passed: true, text: line };
  if (line.startsWith("test:deploy: NOT RUN")) return { text: line };
  return { failed: true, text: lines.slice(at, at + 40).join("\n").trimEnd() };
}
