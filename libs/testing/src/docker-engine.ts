import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

export interface TestDockerEngine {
  /** unix socket of a Docker engine of this test's own. */
  socketPath: string;
  /** Builds an image (bash + busybox, no network needed) and returns its name. */
  importTestImage(): Promise<string>;
  stop(): Promise<void>;
}

const has = (cmd: string, args: string[]) => spawnSync(cmd, args, { stdio: "ignore" }).status === 0;

function waitForSocket(path: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const attempt = () => {
      if (child.exitCode !== null) return reject(new Error(`dockerd exited with ${child.exitCode}`));
      const s = connect(path);
      s.once("connect", () => (s.destroy(), resolve()));
      s.once("error", () => (Date.now() > deadline ? reject(new Error(`dockerd did not listen within ${timeoutMs} ms`)) : setTimeout(attempt, 100)));
    };
    attempt();
  });
}

/**
 * Starts a Docker engine of the test's own (own data root, socket, no bridge or iptables, so it
 * never touches another engine on the machine), or says in one line why it cannot:
 * `{ engine }` or `{ skip: reason }`. Needs root and Debian's docker.io (dockerd, containerd).
 * Images come from a root filesystem made here (busybox-static's binary plus the host's bash and
 * its libraries): nothing is pulled.
 */
export async function startTestDockerEngine(): Promise<{ engine: TestDockerEngine } | { skip: string }> {
  if (process.getuid?.() !== 0) return { skip: "a Docker engine needs root here" };
  if (!has("dockerd", ["--version"]) || !has("docker", ["--version"])) return { skip: "dockerd or the docker command is not installed (apt-get install -y docker.io)" };
  const busybox = ["/bin/busybox", "/usr/bin/busybox"].find((p) => existsSync(p));
  if (!busybox) return { skip: "busybox is not installed (apt-get install -y busybox-static)" };
  const dir = mkdtempSync(join(tmpdir(), "mom-dockerd-"));
  const socketPath = join(dir, "docker.sock");
  const child = spawn(
    "dockerd",
    ["--data-root", join(dir, "root"), "--exec-root", join(dir, "exec"), "-H", `unix://${socketPath}`, "--pidfile", join(dir, "pid"), "--bridge=none", "--iptables=false", "--ip6tables=false"],
    { stdio: "ignore" },
  );
  const stop = async () => {
    spawnSync("sh", ["-c", `docker -H "unix://${socketPath}" ps -aq | xargs -r docker -H "unix://${socketPath}" rm -f`], { stdio: "ignore", timeout: 30_000 });
    if (child.exitCode === null) {
      child.kill("SIGTERM");
      await new Promise((r) => {
        const t = setTimeout(() => (child.kill("SIGKILL"), r(undefined)), 10_000);
        child.once("exit", () => (clearTimeout(t), r(undefined)));
      });
    }
    // The engine leaves network namespaces and overlay mounts under its dirs behind.
    const mounts = readFileSync("/proc/self/mounts", "utf8")
      .split("\n")
      .map((l) => l.split(" ")[1] ?? "")
      .filter((m) => m.startsWith(dir))
      .reverse();
    for (const m of mounts) spawnSync("umount", ["-l", m], { stdio: "ignore" });
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch (err) {
      console.warn(`could not remove ${dir}: ${(err as Error).message}`);
    }
  };
  try {
    await waitForSocket(socketPath, child, 30_000);
  } catch (err) {
    await stop();
    return { skip: `no Docker engine could be started here: ${(err as Error).message}` };
  }
  const importTestImage = async () => {
    const rootfs = join(dir, "rootfs");
    for (const d of ["bin", "tmp", "proc", "dev", "etc"]) mkdirSync(join(rootfs, d), { recursive: true });
    copyFileSync(busybox, join(rootfs, "bin/busybox"));
    const applets = spawnSync(busybox, ["--list"], { encoding: "utf8" }).stdout.split("\n").filter((a) => a && a !== "busybox");
    for (const a of applets) if (!existsSync(join(rootfs, "bin", a))) symlinkSync("busybox", join(rootfs, "bin", a));
    copyFileSync("/bin/bash", join(rootfs, "bin/bash"));
    const libs = spawnSync("ldd", ["/bin/bash"], { encoding: "utf8" }).stdout.match(/\/\S+/g) ?? [];
    for (const lib of libs) {
      mkdirSync(join(rootfs, dirname(lib)), { recursive: true });
      copyFileSync(lib, join(rootfs, lib));
    }
    const image = "mom-test-sandbox:1";
    const r = spawnSync("sh", ["-c", `tar -C "${rootfs}" -c . | docker -H "unix://${socketPath}" import - ${image}`], { encoding: "utf8" });
    if (r.status !== 0) throw new Error(`docker import failed: ${r.stderr}`);
    return image;
  };
  return { engine: { socketPath, importTestImage, stop } };
}
