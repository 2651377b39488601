// `npm run test:deploy`: the image and the compose file on a real Docker engine, with nothing pulled.
//
//   1. starts a private dockerd (state cached under ~/.cache/mom/deploy-test, so base images and
//      build layers survive between runs; socket and runtime state in a temporary directory);
//   2. makes the base images without a registry: `debootstrap --variant=minbase trixie` with
//      Debian's nodejs and nats-server, imported with `docker import` (cached by recipe), plus npm
//      on top for the build stages;
//   3. builds the image from deploy/docker-compose.yml's `build:` section (deploy/Dockerfile, with
//      those bases as build arguments), checks it (non-root, no dev dependencies, no npm) and
//      prints its size;
//   4. starts nats, two runners, the scheduler and the slack ingress from the compose file with
//      Compose v2 (the user's, else Debian trixie's package unpacked into the cache; without one,
//      the same services with `docker run`, read from the file), plus the fake LLM and the fake
//      Slack of libs/testing as services "model" and "fakeslack";
//   5. checks every service's /healthz, /readyz and /metrics (port 9090, the k8s probes), runs
//      `mom doctor` in the runner service, talks through the `cli` service, has the agent run a
//      command in its bwrap sandbox, fires a scheduler event, mentions the bot in Slack, checks
//      each message ran once, then stops everything with SIGTERM and checks the runners drained.
//
// Exits 0 after printing "NOT RUN: <why>" when no engine can be started here (not root, no
// dockerd and no apt); `MOM_DEPLOY_TEST_REQUIRED=1` turns that into a failure. Containers, network,
// volume and the daemon are removed at the end of every run, passed or failed.
import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import YAML from "yaml";
import { cacheDir, debianMirror, ensureComposeConfig } from "../../scripts/ensure-tools.mjs";

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
  const r = spawnSync(cmd, args, { encoding: "utf8", env: opts.env ?? env, maxBuffer: 64 << 20, timeout: opts.timeout ?? 120_000, input: opts.input, cwd: opts.cwd ?? root, stdio: opts.stdio });
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
    try {
      sh("apt-get", ["update", "-qq"], { timeout: 600_000 });
      sh("apt-get", ["install", "-y", "-qq", ...new Set(missing)], { timeout: 600_000, env: { ...env, DEBIAN_FRONTEND: "noninteractive" } });
    } catch (e) {
      throw new NotRun(`could not install ${[...new Set(missing)].join(", ")}: ${e.message}`);
    }
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
  // A run killed midway (or one whose `down` missed a service) leaves containers in the private
  // engine's state; with `restart: unless-stopped` they come back with it, crash-loop without their
  // NATS and hold their locks: an image build then waited on them until its timeout (CI, session 10).
  const stale = docker("ps", "-aq").split("\n").filter(Boolean);
  if (stale.length) {
    docker("update", "--restart=no", ...stale);
    docker("rm", "-f", ...stale);
    log(`test:deploy: removed ${stale.length} container(s) an earlier run left in the engine's state`);
  }
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
  // Earlier recipes' bases and tarballs: the cache keeps the current ones only.
  const stale = docker("images", "--format", "{{.Repository}}:{{.Tag}}", "mom-test/*").split("\n").filter((t) => t && t !== base && t !== buildBase);
  if (stale.length) sh("docker", ["rmi", ...stale], { allowFail: true });
  for (const f of readdirSync(stateDir).filter((n) => /^base-trixie-.*\.tar$/.test(n) && n !== `base-trixie-${key}.tar`)) rmSync(join(stateDir, f));
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
// Two ways to run them, with one interface: Compose v2 itself (`docker compose`, the user's or
// Debian trixie's plugin), else the same services with `docker run`, read from the file.
// Either way the file's nats image (unpullable here) is replaced by the Debian base, which has
// Debian's nats-server, its `ports:` are dropped (they publish on the host's loopback, where this
// machine may already run a NATS), and a service `model` (the fake LLM) is added.

const FAKE_MODEL_COMMAND = ["node", "/fake/fake-llm-main.js", "-", "--host", "0.0.0.0", "--port", "8080"];
// The fake Slack (libs/testing) with a control API for the test (test/deploy/fake-slack-main.mjs).
// It answers on 127.0.0.1 only, so the `slack` service shares its network namespace.
const FAKE_SLACK = {
  command: ["node", "/deploy-test/fake-slack-main.mjs", "/fake"],
  volumes: [`${join(root, "libs/testing/dist")}:/fake:ro`, `${join(root, "node_modules/ws")}:/node_modules/ws:ro`, `${join(root, "test/deploy")}:/deploy-test:ro`],
};
// nats:2.10-alpine's wget is not in the Debian base; node is.
const NATS_HEALTHCHECK = ["CMD", "node", "-e", "fetch('http://127.0.0.1:8222/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"];

class ComposeStack {
  constructor({ config, image, base, vars }) {
    this.how = "docker compose";
    this.baseEnv = { PATH: process.env.PATH, HOME: process.env.HOME, DOCKER_HOST: env.DOCKER_HOST, ...(config ? { DOCKER_CONFIG: config } : {}) };
    this.vars = vars; // read at every command: the test adds the fake Slack's tokens once it runs
    const override = join(run, "compose.test.yml");
    writeFileSync(
      override,
      [
        "services:",
        "  nats:",
        `    image: ${base}`,
        "    ports: !reset []",
        `    healthcheck: { test: ${JSON.stringify(NATS_HEALTHCHECK)}, interval: 1s, retries: 30 }`,
        "  model:",
        `    image: ${base}`,
        `    command: ${JSON.stringify(FAKE_MODEL_COMMAND)}`,
        `    volumes: [${JSON.stringify(`${join(root, "libs/testing/dist")}:/fake:ro`)}]`,
        "  fakeslack:",
        `    image: ${base}`,
        `    command: ${JSON.stringify(FAKE_SLACK.command)}`,
        `    volumes: ${JSON.stringify(FAKE_SLACK.volumes)}`,
        "  slack:",
        '    network_mode: "service:fakeslack"',
        "",
      ].join("\n"),
    );
    // Every profile the test starts a service of: `down` leaves the containers of a profile not
    // named here behind, and with `restart: unless-stopped` they come back with the next engine.
    this.args = ["compose", "-p", project, "-f", composeFile, "-f", override, "--profile", "slack", "--profile", "console"];
    this.image = image;
  }
  get env() {
    return { ...this.baseEnv, ...this.vars };
  }
  compose(...args) {
    const r = spawnSync("docker", [...this.args, ...args], { encoding: "utf8", env: this.env, timeout: 180_000 });
    if (r.status !== 0) fail(`docker compose ${args.join(" ")}: ${(r.stderr || r.stdout).trim().split("\n").slice(-6).join("\n")}`);
    return r.stdout;
  }
  container = (name, i = 1) => `${project}-${name}-${i}`;
  start(names, scale = {}) {
    // depends_on: nats service_healthy holds the others until the healthcheck passes.
    this.compose("up", "-d", "--no-build", ...Object.entries(scale).flatMap(([n, k]) => ["--scale", `${n}=${k}`]), ...names);
  }
  cli() {
    return spawn("docker", [...this.args, "run", "--rm", "-T", "cli"], { env: this.env, stdio: ["pipe", "pipe", "pipe"] });
  }
  stop(name) {
    this.compose("stop", name);
  }
  /** `docker compose run --rm <service> <args>`: exit status and output. */
  once(name, args) {
    return spawnSync("docker", [...this.args, "run", "--rm", "-T", name, ...args], { env: this.env, encoding: "utf8", timeout: 120_000 });
  }
  down() {
    spawnSync("docker", [...this.args, "down", "-v", "--remove-orphans", "-t", "5"], { env: this.env, stdio: "ignore", timeout: 120_000 });
  }
}

class DockerRunStack {
  constructor({ compose, image, base, vars }) {
    this.how = "docker run (no Compose v2 here)";
    this.compose = compose;
    this.vars = vars; // interpolated when a service starts: the fake Slack's tokens come later
    this.extra = {
      nats: { image: base },
      model: { image: base, command: FAKE_MODEL_COMMAND, volumes: [`${join(root, "libs/testing/dist")}:/fake:ro`] },
      fakeslack: { image: base, ...FAKE_SLACK },
      slack: { network_mode: "service:fakeslack" },
    };
    this.volumes = Object.keys(compose.volumes ?? {});
    this.image = image;
    this.network = `${project}_default`;
    this.names = [];
  }
  container = (name, i = 1) => `${project}-${name}-${i}`;
  async start(names, scale = {}) {
    if (!this.names.length) {
      docker("network", "create", this.network);
      for (const v of this.volumes) docker("volume", "create", `${project}_${v}`);
    }
    for (const name of names) {
      for (let i = 1; i <= (scale[name] ?? 1); i++) {
        docker("run", "-d", ...this.runArgs(name, i));
        this.names.push(this.container(name, i));
      }
      // depends_on: service_healthy, done from outside
      if (name === "nats") await until("NATS /healthz", 30, async () => (await fetch(`http://${ipOf(this, "nats")}:8222/healthz`).catch(() => undefined))?.ok === true);
    }
  }
  cli() {
    return spawn("docker", ["run", "-i", "--rm", ...this.runArgs("cli")], { env, stdio: ["pipe", "pipe", "pipe"] });
  }
  once(name, args) {
    return spawnSync("docker", ["run", "--rm", ...this.runArgs(name, "once", args)], { env, encoding: "utf8", timeout: 120_000 });
  }
  stop(name) {
    for (const c of this.names.filter((n) => n.startsWith(`${project}-${name}-`))) docker("stop", c);
  }
  /** `docker run` arguments for one service (the keys this compose file uses). */
  runArgs(name, i = 1, command) {
    const svc = { ...interpolate(this.compose.services[name] ?? {}, this.vars), ...this.extra[name] };
    const shared = /^service:(.+)$/.exec(svc.network_mode ?? "")?.[1];
    const net = shared ? ["--network", `container:${this.container(shared)}`] : ["--network", this.network, "--network-alias", name];
    const args = ["--name", this.container(name, i), ...net, "--stop-timeout", String(seconds(svc.stop_grace_period))];
    if (svc.user) args.push("--user", svc.user);
    if (svc.read_only) args.push("--read-only");
    for (const t of svc.tmpfs ?? []) args.push("--tmpfs", t);
    // Compose reads a seccomp profile's path relative to the compose file; so does this.
    for (const opt of svc.security_opt ?? []) args.push("--security-opt", opt.replace(/^seccomp=(\..*)$/, (_, p) => `seccomp=${resolve(dirname(composeFile), p)}`));
    for (const [k, v] of Object.entries(svc.environment ?? {})) args.push("-e", `${k}=${v ?? ""}`);
    for (const v of svc.volumes ?? []) {
      const [src, dst, mode] = v.split(":");
      const host = src.startsWith(".") || isAbsolute(src) ? resolve(dirname(composeFile), src) : `${project}_${src}`;
      args.push("-v", `${host}:${dst}${mode ? `:${mode}` : ""}`);
    }
    args.push(svc.image, ...(command ?? svc.command ?? []));
    return args;
  }
  down() {
    for (const c of [...this.names, this.container("cli")]) spawnSync("docker", ["rm", "-f", c], { env, stdio: "ignore" });
    spawnSync("docker", ["network", "rm", this.network], { env, stdio: "ignore" });
    for (const v of this.volumes) spawnSync("docker", ["volume", "rm", `${project}_${v}`], { env, stdio: "ignore" });
  }
}

/** ${VAR}, ${VAR:-default} against the variables the test sets (never the caller's environment). */
function interpolate(value, vars) {
  if (typeof value === "string") return value.replace(/\$\{(\w+)(?::-([^}]*))?\}/g, (_, name, def) => (vars[name] ? vars[name] : (def ?? "")));
  if (Array.isArray(value)) return value.map((v) => interpolate(v, vars));
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolate(v, vars)]));
  return value;
}

const seconds = (d) => Number(/^(\d+)s$/.exec(d ?? "")?.[1] ?? 10);
const ipOf = (stack, name) => Object.values(JSON.parse(docker("inspect", stack.container(name)))[0].NetworkSettings.Networks)[0].IPAddress;

async function services(compose, image, base) {
  const { connectFakeLlm, fakeLlmModelsJson } = await import(join(root, "libs/testing/dist/index.js"));
  const data = join(run, "data");
  mkdirSync(join(data, "workspace/events"), { recursive: true });
  writeFileSync(join(data, "models.json"), JSON.stringify(fakeLlmModelsJson("http://model:8080/v1")));
  for (const p of [run, data]) chmodSync(p, 0o755);
  if (compose.services.runner.image !== image) fail(`built ${image}, but the compose file runs ${compose.services.runner.image}`);

  // Only what the compose file interpolates; the caller's environment (model keys, say) stays out.
  const vars = { MOM_DATA: data, MOM_UID: "1000", MOM_GID: "1000", MOM_CLI_CHANNEL: "local" };
  const config = process.env.MOM_DEPLOY_TEST_COMPOSE === "0" ? null : ensureComposeConfig();
  stack = config === null ? new DockerRunStack({ compose, image, base, vars }) : new ComposeStack({ config, image, base, vars });
  const container = (name, i) => stack.container(name, i);

  // The fake model (libs/testing, plain Node without dependencies) as service "model": the runner
  // reaches it like any endpoint; the test steers it from the host.
  await stack.start(["model", "nats"]);
  const llm = connectFakeLlm(`http://${ipOf(stack, "model")}:8080/v1`);
  await until("the fake model", 30, () => llm.requests().then(() => true, () => false));
  await until("NATS /healthz", 30, async () => (await fetch(`http://${ipOf(stack, "nats")}:8222/healthz`).catch(() => undefined))?.ok === true);
  ok(`${stack.how}: nats (the compose service, on Debian's nats-server ${docker("exec", container("nats"), "nats-server", "--version").replace("nats-server: ", "")}) healthy`);

  // The fake Slack first: config.json names its API URL, the `slack` service gets its tokens.
  await stack.start(["fakeslack"]);
  const slackApi = (path, init) => fetch(`http://${ipOf(stack, "fakeslack")}:8090${path}`, init).then((r) => r.json());
  let slack;
  await until("the fake Slack", 30, async () => (slack = await slackApi("/info").catch(() => undefined)) !== undefined);
  Object.assign(vars, { SLACK_BOT_TOKEN: slack.botToken, SLACK_APP_TOKEN: slack.appToken });
  const adapters = { cli: { type: "cli" }, slack: { type: "slack", botToken: "env:SLACK_BOT_TOKEN", appToken: "env:SLACK_APP_TOKEN", apiUrl: slack.apiUrl } };
  const consoleUsers = { ops: { role: "viewer", token: "ops-token-0123456789abcdef" } };
  writeFileSync(join(data, "config.json"), JSON.stringify({ model: "fake/fake-model", nats: { url: "nats://127.0.0.1:4222" }, adapters, sandbox: { type: "bwrap" }, log: { level: "info" }, console: { users: consoleUsers } }));
  sh("chown", ["-R", "1000:1000", data]);

  // Two runners: the channel has one owner, so the message is answered once (docs/scaling.md).
  const RUNNERS = 2;
  const runners = Array.from({ length: RUNNERS }, (_, i) => container("runner", i + 1));
  await stack.start(["runner", "scheduler", "slack", "console"], { runner: RUNNERS });
  const logs = (c) => {
    const r = sh("docker", ["logs", c], { allowFail: true });
    return r.stdout + r.stderr;
  };
  for (const c of runners) await until(`${c} to be ready`, 60, () => logs(c).includes('"msg":"agent runner ready"'));
  await until("the scheduler to be ready", 60, () => logs(container("scheduler")).includes('"msg":"scheduler ready"'));
  ok(`${RUNNERS} runners (scaled), the scheduler and the slack ingress started from the compose file, connected to nats://nats:4222`);

  // What the Kubernetes probes and Prometheus use: MOM_HTTP_PORT (9090) in every service.
  // (The slack ingress lives in the fake Slack's network namespace, so it answers on that address.)
  const ipFor = (c) => (c === container("slack") ? ipOf(stack, "fakeslack") : Object.values(JSON.parse(docker("inspect", c))[0].NetworkSettings.Networks)[0].IPAddress);
  const http = (c, path) => fetch(`http://${ipFor(c)}:9090${path}`).catch(() => undefined);
  for (const c of [...runners, container("scheduler"), container("slack"), container("console")]) {
    await until(`${c} /readyz`, 60, async () => (await http(c, "/readyz"))?.status === 200);
    if ((await http(c, "/healthz"))?.status !== 200) fail(`${c} /healthz did not answer 200`);
    const metrics = await (await http(c, "/metrics"))?.text();
    if (!metrics?.includes("mom_process_")) fail(`${c} /metrics has no mom_ metrics`);
  }
  ok("every runner, the scheduler, the slack ingress (Socket Mode open) and the console answer /healthz, /readyz (200) and /metrics on MOM_HTTP_PORT 9090");
  // The console's pages on 8480 (MOM_CONSOLE_HOST 0.0.0.0 in the container): signed in with a token, the overview lists both runners.
  const web = `http://${ipFor(container("console"))}:8480`;
  const login = await fetch(`${web}/login`, { method: "POST", redirect: "manual", headers: { "content-type": "application/x-www-form-urlencoded", origin: web }, body: `token=${consoleUsers.ops.token}` });
  const cookie = login.headers.get("set-cookie")?.split(";")[0];
  if (login.status !== 303 || !cookie) fail(`console sign-in answered ${login.status}`);
  await until("the console to list both runners", 30, async () => ((await (await fetch(`${web}/`, { headers: { cookie } })).text()).match(/data-runner=/g) ?? []).length === RUNNERS);
  ok("the console service serves its pages on 8480: sign-in with a token, the overview lists both runners");

  // `mom doctor` as the runner service (Kubernetes runs it as the runner's init container).
  const doctor = stack.once("runner", ["doctor", "/data"]);
  if (doctor.status !== 0) fail(`mom doctor in the runner service failed:\n${(doctor.stdout + doctor.stderr).trim().split("\n").slice(-12).join("\n")}`);
  ok("`run --rm runner doctor /data`: config, model, NATS, workspace and sandbox check out in the container");
  // The doctor made one tiny model call of its own (answered by the fallback); the messages' script
  // is queued after it.
  const doctorCalls = (await llm.requests()).length;
  await llm.enqueue(
    {
      toolCalls: [
        {
          name: "bash",
          arguments: {
            label: "Look around",
            command:
              "echo pid1=$(cat /proc/1/comm); (exec 3<>/dev/tcp/nats/4222) 2>/dev/null && echo nats=reachable || echo nats=unreachable; " +
              "echo uid=$(id -u); grep ^Seccomp: /proc/self/status; df -k /tmp | tail -1; fallocate -l 10M big.bin 2>&1; ulimit -f; " +
              "{ head -c 300000000 /dev/zero > /tmp/fill; } 2>&1 | tail -1; cat /etc/shadow 2>&1 | head -c 40; echo; echo done-looking",
          },
        },
      ],
    },
    { text: "pong from the container" },
    { text: "scheduled pong" },
    { text: "pong in slack" },
  );

  // The terminal: `docker compose run --rm cli`, stdin from this test.
  const cli = stack.cli();
  let out = "";
  let err = "";
  cli.stdout.on("data", (d) => (out += d));
  cli.stderr.on("data", (d) => (err += d));
  const cliExited = new Promise((r) => cli.once("exit", r));
  await until("the terminal to consume its channel", 60, () => err.includes('"msg":"consuming"'));
  cli.stdin.write("ping\n");
  await until("the reply in the terminal", 60, () => out.includes("pong from the container"));
  ok('message typed into the cli container -> runner -> fake LLM -> "pong from the container" in the terminal');

  // The request after the bash call carries its result.
  const toolResult = JSON.stringify((await llm.requests()).find((r) => r.messages.some((m) => m.role === "tool"))?.messages ?? []);
  if (!/pid1=bwrap/.test(toolResult)) fail(`the bash tool did not run in bubblewrap: ${toolResult.slice(-400)}`);
  if (!/nats=unreachable/.test(toolResult)) fail(`the sandbox reached NATS: ${toolResult.slice(-400)}`);
  ok("the agent's command ran in bubblewrap inside the runner container (pid 1 = bwrap) and could not reach NATS");
  // The runner runs with deploy/seccomp/mom-runner.json (not unconfined): bwrap works under it as
  // uid 1000, and the command gets the per-command limits (docs/sandbox.md).
  if (!/uid=1000/.test(toolResult)) fail(`the command did not run as uid 1000: ${toolResult.slice(-600)}`);
  if (!/Seccomp:\\t2/.test(toolResult)) fail(`no seccomp filter on the command: ${toolResult.slice(-600)}`);
  if (!/tmpfs\s+262144\s/.test(toolResult)) fail(`/tmp is not the 256 MiB tmpfs: ${toolResult.slice(-600)}`);
  if (!/fallocate failed: Operation not supported/.test(toolResult)) fail(`fallocate was not refused: ${toolResult.slice(-600)}`);
  if (!/No space left on device/.test(toolResult)) fail(`/tmp could be filled past its size: ${toolResult.slice(-600)}`);
  if (!/[^0-9]1048576[^0-9]/.test(toolResult)) fail(`RLIMIT_FSIZE is not 1 GiB: ${toolResult.slice(-600)}`);
  if (!/done-looking/.test(toolResult)) fail(`the command did not finish: ${toolResult.slice(-600)}`);
  ok("with the compose file's seccomp profile: the command ran as uid 1000 under a seccomp filter, with a 256 MiB /tmp, fallocate refused and RLIMIT_FSIZE set");

  writeFileSync(join(data, "workspace/events/ping.json"), JSON.stringify({ type: "immediate", channelId: "cli/local", text: "scheduled ping" }));
  chownSync(join(data, "workspace/events/ping.json"), 1000, 1000);
  await until("the scheduled event's reply in the terminal", 60, () => out.includes("scheduled pong"));
  ok('scheduler container fired workspace/events/ping.json -> runner -> "scheduled pong" in the terminal');

  await slackApi("/mention", { method: "POST", body: JSON.stringify({ text: "hello from slack" }) });
  await until("the answer in Slack", 60, async () => (await slackApi("/messages")).some((m) => m.bot_id && /pong in slack/.test(m.text ?? "")));
  ok('a mention in (fake) Slack -> slack ingress container -> runner -> "pong in slack" posted in the channel');

  cli.stdin.end();
  await Promise.race([cliExited, sleep(15_000)]);
  if (cli.exitCode === null) fail("the terminal did not exit on end of input");

  // Each run is counted once, by the runner that ran it (mom_runs_total on its /metrics).
  const runsOf = async (c) =>
    ((await (await http(c, "/metrics"))?.text()) ?? "").split("\n").filter((l) => l.startsWith("mom_runs_total{")).reduce((sum, l) => sum + Number(l.split(" ").pop()), 0);
  const perRunner = await Promise.all(runners.map(async (c) => `${c}: ${await runsOf(c)}`));
  const runsCounted = (await Promise.all(runners.map(runsOf))).reduce((a, b) => a + b, 0);
  if (runsCounted !== 3) fail(`the runners' /metrics count ${runsCounted} runs, expected 3: ${perRunner.join(", ")}`);
  const requests = (await llm.requests()).length - doctorCalls;
  if (requests !== 4) fail(`the model was asked ${requests} times for 3 messages needing 4 answers: a message was run twice or not at all`);
  ok(`${RUNNERS} runners, 3 messages, 4 model calls, mom_runs_total 3 across the runners: each message run once`);

  for (const name of ["slack", "scheduler", "runner"]) stack.stop(name);
  for (const c of [container("slack"), container("scheduler"), ...runners]) {
    const code = JSON.parse(docker("inspect", c))[0].State.ExitCode;
    if (code !== 0) fail(`${c} exited ${code} on SIGTERM:\n${logs(c).split("\n").slice(-10).join("\n")}`);
    if (c !== container("scheduler") && !logs(c).includes('"msg":"bus drained"')) fail(`${c} stopped without draining`);
  }
  ok("docker stop: the slack ingress, the scheduler and every runner exit 0 on SIGTERM, the runners after draining their consumers");
}

// ---------------------------------------------------------------- main
let stack;
async function cleanup() {
  if (dockerd && dockerd.exitCode === null) {
    stack?.down();
    // Whatever `down` missed (a service it did not know of): nothing is left to come back with the engine.
    const left = spawnSync("docker", ["ps", "-aq"], { env, encoding: "utf8", timeout: 60_000 }).stdout?.split("\n").filter(Boolean) ?? [];
    if (left.length) spawnSync("docker", ["rm", "-f", ...left], { env, stdio: "ignore", timeout: 120_000 });
    // Untagged images: the build stages' layers (the cache of the next build) and those of earlier
    // builds. Keep a day's worth, so the cache serves the next run without growing for ever.
    spawnSync("docker", ["image", "prune", "-f", "--filter", "until=24h"], { env, stdio: "ignore" });
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
    if (dockerd && dockerd.exitCode === null && stack) {
      for (const name of ["nats", "runner", "scheduler", "slack", "fakeslack", "model"]) {
        const r = spawnSync("docker", ["logs", "--tail", "15", stack.container(name)], { env, encoding: "utf8" });
        if (r.status === 0) log(`--- ${name}\n${(r.stdout + r.stderr).trim()}`);
      }
    }
  }
} finally {
  await cleanup();
}
process.exit(status);
