// `npm run test:deploy`: the image and the compose file on a real Docker engine, with nothing pulled.
//
//   1. starts a private dockerd (state cached under ~/.cache/mom/deploy-test, so base images and
//      build layers survive between runs; socket and runtime state in a temporary directory);
//   2. makes the base images without a registry: `debootstrap --variant=minbase trixie` with
//      Debian's nodejs and nats-server, imported with `docker import` (cached by recipe), plus npm
//      on top for the build stages;
//   3. builds the image from deploy/docker-compose.yml's `build:` section (deploy/Dockerfile, with
//      those bases as build arguments), checks it (non-root, no dev dependencies, bubblewrap works
//      with the compose file's security options) and prints its size;
//   4. starts nats + runner + scheduler from the compose file (with `docker run`: this machine has
//      no Compose v2; the test translates each service's image, command, user, read-only root,
//      tmpfs, security options, environment and volumes, and waits for NATS's /healthz as `service_healthy` would), talks through the `cli`
//      service to the fake LLM (libs/testing, in a container "model" on the same network), has the agent run
//      a command in its bwrap sandbox, fires a scheduler event, then stops everything with SIGTERM
//      and checks the runner drained.
//
// Exits 0 after printing "NOT RUN: <why>" when no engine can be started here (not root, no
// dockerd and no apt); `MOM_DEPLOY_TEST_REQUIRED=1` turns that into a failure. Containers, network,
// volume and the daemon are removed at the end of every run, passed or failed.
import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import YAML from "yaml";
import { cacheDir, debianMirror } from "../../scripts/ensure-tools.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const composeFile = join(root, "deploy/docker-compose.yml");
const stateDir = cacheDir("deploy-test");
const run = mkdtempSync(join(tmpdir(), "mom-dt-"));
const project = `momtest${process.pid}`;
const sock = join(run, "docker.sock");
const env = { ...process.env, DOCKER_HOST: `unix://${sock}` };
let passed = 0;

// ---------------------------------------------------------------- helpers
const log = (line) => process.stdout.write(`${line}\n`);
const ok = (what) => (passed++, log(`ok   ${what}`));
class NotRun extends Error {}
function fail(msg) {
  throw new Error(msg);
}
function sh(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: "utf8", env, maxBuffer: 64 << 20, timeout: opts.timeout ?? 120_000, input: opts.input, cwd: opts.cwd ?? root, stdio: opts.stdio });
  if (r.error) fail(`${cmd} ${args.slice(0, 3).join(" ")}: ${r.error.message}`);
  if (r.status !== 0 && !opts.allowFail) fail(`${cmd} ${args.slice(0, 4).join(" ")} exited ${r.status}: ${(r.stderr || r.stdout || "").trim().split("\n").slice(-8).join("\n")}`);
  return r;
}
const docker = (...args) => sh("docker", args).stdout.trim();
const has = (cmd) => spawnSync("sh", ["-c", `command -v ${cmd}`], { stdio: "ignore" }).status === 0;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(what, seconds, probe) {
  for (let i = 0; i < seconds * 4; i++) {
    if (await probe()) return;
    await sleep(250);
  }
  fail(`timed out after ${seconds} s waiting for ${what}`);
}

// ---------------------------------------------------------------- 1. the engine
let dockerd;
async function startEngine() {
  if (process.getuid?.() !== 0) throw new NotRun("dockerd and debootstrap need root, and this is not root");
  const missing = [["dockerd", "docker.io"], ["docker", "docker.io"], ["debootstrap", "debootstrap"]].filter(([c]) => !has(c)).map(([, p]) => p);
  if (missing.length) {
    if (!has("apt-get")) throw new NotRun(`missing ${[...new Set(missing)].join(", ")} and no apt-get to install them`);
    log(`test:deploy: installing ${[...new Set(missing)].join(" ")}`);
    sh("apt-get", ["update", "-qq"], { timeout: 600_000 });
    sh("apt-get", ["install", "-y", "-qq", ...new Set(missing)], { timeout: 600_000, env: { ...env, DEBIAN_FRONTEND: "noninteractive" } });
  }
  mkdirSync(join(stateDir, "docker"), { recursive: true });
  // No default bridge: the test's containers use one network of their own, builds the host's.
  // (iptables stays on: the network's embedded DNS, which resolves service names, relies on it.)
  dockerd = spawn("dockerd", ["--data-root", join(stateDir, "docker"), "--exec-root", join(run, "exec"), "-H", `unix://${sock}`, "--pidfile", join(run, "dockerd.pid"), "--bridge=none"], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let daemonLog = "";
  dockerd.stderr.on("data", (d) => (daemonLog = (daemonLog + d).slice(-4000)));
  const exited = new Promise((r) => dockerd.once("exit", (code) => r(code)));
  for (let i = 0; i < 120; i++) {
    if (dockerd.exitCode !== null) throw new NotRun(`dockerd exited (${dockerd.exitCode}): ${daemonLog.trim().split("\n").slice(-3).join(" | ")}`);
    if (spawnSync("docker", ["version"], { env, stdio: "ignore" }).status === 0) break;
    await sleep(250);
  }
  if (spawnSync("docker", ["version"], { env, stdio: "ignore" }).status !== 0) throw new NotRun(`dockerd did not answer on ${sock} within 30 s`);
  dockerd.exited = exited;
  ok(`private dockerd ${docker("version", "-f", "{{.Server.Version}}")} (state in ${stateDir})`);
}

async function stopEngine() {
  if (!dockerd || dockerd.exitCode !== null) return;
  dockerd.kill("SIGTERM");
  const timer = setTimeout(() => dockerd.kill("SIGKILL"), 30_000);
  await dockerd.exited;
  clearTimeout(timer);
}

// ---------------------------------------------------------------- 2. base images, cached
function baseImages() {
  const packages = ["nodejs", "nats-server", "ca-certificates"];
  // The machine's own extra CAs (an egress proxy's, say) go into the base, so the build stages
  // trust what this host trusts; they are part of the recipe, hence of the cache key.
  const caDir = "/usr/local/share/ca-certificates";
  const cas = existsSync(caDir) ? readdirSync(caDir).filter((n) => n.endsWith(".crt")).sort() : [];
  const recipe = JSON.stringify({ suite: "trixie", variant: "minbase", packages, cas: cas.map((n) => [n, readFileSync(join(caDir, n), "utf8")]) });
  const key = createHash("sha256").update(recipe).digest("hex").slice(0, 12);
  const base = `mom-test/base:trixie-${key}`;
  const buildBase = `mom-test/build-base:trixie-${key}`;
  const present = (tag) => spawnSync("docker", ["image", "inspect", tag], { env, stdio: "ignore" }).status === 0;

  if (!present(base)) {
    const tarball = join(stateDir, `base-trixie-${key}.tar`);
    if (!existsSync(tarball)) {
      const mirror = debianMirror();
      if (!mirror) fail("no Debian mirror found in apt's sources (needed by debootstrap)");
      const dir = join(stateDir, `rootfs-${key}`);
      rmSync(dir, { recursive: true, force: true });
      log(`test:deploy: debootstrap trixie (${packages.join(", ")}) - a few minutes, once per machine`);
      sh("debootstrap", ["--variant=minbase", `--include=${packages.join(",")}`, "trixie", dir, mirror], { timeout: 1_200_000 });
      for (const n of cas) writeFileSync(join(dir, "usr/local/share/ca-certificates", n), readFileSync(join(caDir, n)));
      sh("chroot", [dir, "update-ca-certificates"]);
      sh("chroot", [dir, "apt-get", "clean"]);
      rmSync(join(dir, "var/lib/apt/lists"), { recursive: true, force: true });
      mkdirSync(join(dir, "var/lib/apt/lists/partial"), { recursive: true });
      sh("tar", ["-C", dir, "-cf", `${tarball}.tmp`, "."], { timeout: 600_000 });
      sh("mv", [`${tarball}.tmp`, tarball]);
      rmSync(dir, { recursive: true, force: true });
    }
    sh("sh", ["-c", `docker import - ${base} < "${tarball}"`], { timeout: 600_000 });
  }
  if (!present(buildBase)) {
    log("test:deploy: build base = base + Debian's npm");
    const dockerfile = `FROM ${base}\nRUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends npm >/dev/null && rm -rf /var/lib/apt/lists/*\n`;
    sh("docker", ["build", "--network", "host", "-t", buildBase, "-"], { input: dockerfile, timeout: 900_000 });
  }
  ok(`base images without a registry: ${base} (debootstrap + docker import), ${buildBase}`);
  return { base, buildBase };
}

// ---------------------------------------------------------------- 3. the image
function buildImage(compose, bases) {
  const b = compose.services.runner.build;
  const tag = compose.services.runner.image;
  const context = resolve(dirname(composeFile), b.context);
  const t0 = Date.now();
  sh("docker", ["build", "--network", "host", "-f", join(context, b.dockerfile), "--build-arg", `NODE_IMAGE=${bases.base}`, "--build-arg", `BUILD_IMAGE=${bases.buildBase}`, "-t", tag, context], {
    timeout: 1_800_000,
    stdio: ["ignore", "ignore", "pipe"],
  });
  ok(`docker build -f ${b.dockerfile} (compose's build section) -> ${tag} in ${Math.round((Date.now() - t0) / 1000)} s`);

  const info = JSON.parse(docker("image", "inspect", tag))[0];
  if (info.Config.User !== "1000:1000") fail(`image user is "${info.Config.User}", expected 1000:1000`);
  const size = (bytes) => `${Math.round(bytes / 1e6)} MB`;
  const baseSize = JSON.parse(docker("image", "inspect", bases.base))[0].Size;
  ok(`image size ${size(info.Size)} (${size(baseSize)} of it the base, ${size(info.Size - baseSize)} mom + packages); runs as 1000:1000`);

  const devOnly = ["typescript", "jest", "@swc/core", "nx", "kubernetes-models", "@testcontainers/nats"];
  const found = docker("run", "--rm", "--network", "none", "--entrypoint", "sh", tag, "-c", `cd /app/node_modules && for p in ${devOnly.join(" ")}; do [ -e "$p" ] && echo "$p"; done; command -v npm; true`);
  if (found) fail(`the image has build-only things: ${found.split("\n").join(", ")}`);
  ok(`only production dependencies: no ${devOnly.join(", ")}, no npm`);
  return tag;
}

// ---------------------------------------------------------------- 4. the compose services
/** ${VAR}, ${VAR:-default} against the variables the test sets (never the caller's environment). */
function interpolate(value, vars) {
  if (typeof value === "string") return value.replace(/\$\{(\w+)(?::-([^}]*))?\}/g, (_, name, def) => (vars[name] ? vars[name] : (def ?? "")));
  if (Array.isArray(value)) return value.map((v) => interpolate(v, vars));
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolate(v, vars)]));
  return value;
}

const seconds = (d) => Number(/^(\d+)s$/.exec(d ?? "")?.[1] ?? 10);

/** `docker run` arguments for one compose service (the keys this compose file uses). */
function runArgs(name, svc, { network, imageFor }) {
  const args = ["--name", `${project}-${name}`, "--network", network, "--network-alias", name, "--stop-timeout", String(seconds(svc.stop_grace_period))];
  if (svc.user) args.push("--user", svc.user);
  if (svc.read_only) args.push("--read-only");
  for (const t of svc.tmpfs ?? []) args.push("--tmpfs", t);
  for (const opt of svc.security_opt ?? []) args.push("--security-opt", opt);
  for (const [k, v] of Object.entries(svc.environment ?? {})) args.push("-e", `${k}=${v ?? ""}`);
  for (const v of svc.volumes ?? []) {
    const [src, dst, mode] = v.split(":");
    const host = src.startsWith(".") || isAbsolute(src) ? resolve(dirname(composeFile), src) : `${project}_${src}`;
    args.push("-v", `${host}:${dst}${mode ? `:${mode}` : ""}`);
  }
  // `ports:` are left out on purpose: they publish on the host's loopback, where this machine may
  // already run a NATS; the test reaches every container through the network instead.
  args.push(imageFor(svc.image), ...(svc.command ?? []));
  return args;
}

async function services(compose, image, base) {
  const { connectFakeLlm, fakeLlmModelsJson } = await import(join(root, "libs/testing/dist/index.js"));
  const network = `${project}_default`;
  docker("network", "create", network);
  for (const v of Object.keys(compose.volumes ?? {})) docker("volume", "create", `${project}_${v}`);
  const ipOf = (name) => JSON.parse(docker("inspect", `${project}-${name}`))[0].NetworkSettings.Networks[network].IPAddress;

  // The fake model (libs/testing, plain Node with no dependencies) in a container of its own on the
  // network, as "model": the runner reaches it like any endpoint; the test steers it from the host.
  docker("run", "-d", "--name", `${project}-model`, "--network", network, "--network-alias", "model", "-v", `${join(root, "libs/testing/dist")}:/fake:ro`, base, "node", "/fake/fake-llm-main.js", "-", "--host", "0.0.0.0", "--port", "8080");
  started.push("model");
  const llm = connectFakeLlm(`http://${ipOf("model")}:8080/v1`);
  await until("the fake model", 30, () => llm.requests().then(() => true, () => false));
  await llm.enqueue(
    { toolCalls: [{ name: "bash", arguments: { label: "Look around", command: "echo pid1=$(cat /proc/1/comm); (exec 3<>/dev/tcp/nats/4222) 2>/dev/null && echo nats=reachable || echo nats=unreachable" } }] },
    { text: "pong from the container" },
    { text: "scheduled pong" },
  );

  const data = join(run, "data");
  mkdirSync(join(data, "workspace/events"), { recursive: true });
  writeFileSync(join(data, "models.json"), JSON.stringify(fakeLlmModelsJson("http://model:8080/v1")));
  writeFileSync(join(data, "config.json"), JSON.stringify({ model: "fake/fake-model", nats: { url: "nats://127.0.0.1:4222" }, adapters: { cli: { type: "cli" } }, sandbox: { type: "bwrap" }, log: { level: "info" } }));
  for (const p of [run, data]) chmodSync(p, 0o755);
  sh("chown", ["-R", "1000:1000", data]);

  const vars = { MOM_DATA: data, MOM_UID: "1000", MOM_GID: "1000", MOM_CLI_CHANNEL: "local" };
  const svcs = interpolate(compose.services, vars);
  const imageFor = (img) => (img === compose.services.runner.image ? image : img.startsWith("nats:") ? base : fail(`no local image for ${img}`));
  const ctx = { network, imageFor };

  // nats first: the others wait for it (depends_on: service_healthy)
  docker("run", "-d", ...runArgs("nats", svcs.nats, ctx));
  started.push("nats");
  await until("NATS /healthz", 30, async () => (await fetch(`http://${ipOf("nats")}:8222/healthz`).catch(() => undefined))?.ok === true);
  ok(`nats (the compose service, on Debian's nats-server ${docker("exec", `${project}-nats`, "nats-server", "--version").replace("nats-server: ", "")}) healthy`);

  for (const name of ["runner", "scheduler"]) {
    docker("run", "-d", ...runArgs(name, svcs[name], ctx));
    started.push(name);
  }
  const logs = (name) => sh("docker", ["logs", `${project}-${name}`], { allowFail: true }).stdout + sh("docker", ["logs", `${project}-${name}`], { allowFail: true }).stderr;
  await until("the runner to be ready", 60, () => logs("runner").includes('"msg":"agent runner ready"'));
  await until("the scheduler to be ready", 60, () => logs("scheduler").includes('"msg":"scheduler ready"'));
  ok("runner and scheduler started from the compose file, connected to nats://nats:4222");

  // The terminal: `docker compose run --rm cli` = an interactive container with stdin open.
  const cliArgs = runArgs("cli", svcs.cli, ctx);
  const cli = spawn("docker", ["run", "-i", "--rm", ...cliArgs], { env, stdio: ["pipe", "pipe", "pipe"] });
  started.push("cli");
  let out = "";
  let err = "";
  cli.stdout.on("data", (d) => (out += d));
  cli.stderr.on("data", (d) => (err += d));
  const cliExited = new Promise((r) => cli.once("exit", r));
  await until("the terminal to consume its channel", 60, () => err.includes('"msg":"consuming"'));
  cli.stdin.write("ping\n");
  await until("the reply in the terminal", 60, () => out.includes("pong from the container"));
  ok('message typed into the cli container -> runner -> fake LLM -> "pong from the container" in the terminal');

  const toolResult = JSON.stringify((await llm.requests())[1]?.messages ?? []);
  if (!/pid1=bwrap/.test(toolResult)) fail(`the bash tool did not run in bubblewrap: ${toolResult.slice(-400)}`);
  if (!/nats=unreachable/.test(toolResult)) fail(`the sandbox reached NATS: ${toolResult.slice(-400)}`);
  ok("the agent's command ran in bubblewrap inside the runner container (pid 1 = bwrap) and could not reach NATS");

  writeFileSync(join(data, "workspace/events/ping.json"), JSON.stringify({ type: "immediate", channelId: "cli/local", text: "scheduled ping" }));
  chownSync(join(data, "workspace/events/ping.json"), 1000, 1000);
  await until("the scheduled event's reply in the terminal", 60, () => out.includes("scheduled pong"));
  ok('scheduler container fired workspace/events/ping.json -> runner -> "scheduled pong" in the terminal');

  cli.stdin.end();
  await Promise.race([cliExited, sleep(15_000)]);
  if (cli.exitCode === null) fail("the terminal did not exit on end of input");

  for (const name of ["scheduler", "runner"]) {
    docker("stop", `${project}-${name}`);
    const code = JSON.parse(docker("inspect", `${project}-${name}`))[0].State.ExitCode;
    if (code !== 0) fail(`${name} exited ${code} on SIGTERM:\n${logs(name).split("\n").slice(-10).join("\n")}`);
  }
  if (!logs("runner").includes('"msg":"bus drained"')) fail("the runner stopped without draining");
  ok("docker stop: scheduler and runner exit 0 on SIGTERM, the runner after draining its consumers");
}

// ---------------------------------------------------------------- main
const started = [];
async function cleanup() {
  if (dockerd && dockerd.exitCode === null) {
    for (const name of started) spawnSync("docker", ["rm", "-f", `${project}-${name}`], { env, stdio: "ignore" });
    spawnSync("docker", ["network", "rm", `${project}_default`], { env, stdio: "ignore" });
    spawnSync("sh", ["-c", `docker volume ls -q --filter name=${project}_ | xargs -r docker volume rm`], { env, stdio: "ignore" });
  }
  await stopEngine();
  // dockerd may leave its network-namespace mounts under the exec root behind.
  const mounts = readFileSync("/proc/mounts", "utf8").split("\n").map((l) => l.split(" ")[1]).filter((m) => m?.startsWith(run));
  for (const m of mounts.reverse()) spawnSync("umount", ["-l", m], { stdio: "ignore" });
  try {
    rmSync(run, { recursive: true, force: true });
  } catch (e) {
    log(`test:deploy: could not remove ${run}: ${e.message}`);
  }
}

let status = 0;
try {
  if (!existsSync(join(root, "libs/testing/dist/index.js"))) fail("build first: npm run build (the test uses libs/testing's fake LLM)");
  await startEngine();
  const compose = YAML.parse(readFileSync(composeFile, "utf8"), { merge: true });
  const bases = baseImages();
  const image = buildImage(compose, bases);
  await services(compose, image, bases.base);
  log(`test:deploy: PASS (${passed} checks)`);
} catch (e) {
  if (e instanceof NotRun && process.env.MOM_DEPLOY_TEST_REQUIRED !== "1") {
    log(`test:deploy: NOT RUN - no Docker engine could be started here: ${e.message}`);
  } else {
    status = 1;
    log(`test:deploy: FAIL - ${e.message}`);
    if (dockerd && dockerd.exitCode === null) {
      for (const name of started.filter((n) => n !== "cli")) {
        const r = spawnSync("docker", ["logs", "--tail", "15", `${project}-${name}`], { env, encoding: "utf8" });
        log(`--- ${name}\n${(r.stdout + r.stderr).trim()}`);
      }
    }
  }
} finally {
  await cleanup();
}
process.exit(status);
