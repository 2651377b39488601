import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";
// @ts-expect-error plain ESM script without types
import { findKustomize } from "../../scripts/ensure-tools.mjs";

// Every overlay in k8s/ rendered with kustomize exactly as a user would after the README's steps
// (copy the *.env.example files), validated offline against the Kubernetes JSON schemas
// (kubernetes-models) and for fields the API does not know (@kubernetes/client-node's models),
// then held to the rules the manifests promise.

type Obj = { apiVersion: string; kind: string; metadata: { name: string; annotations?: Record<string, string> }; spec?: any };
const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const kustomize: string | undefined = findKustomize();
let work: string;

/** A copy of k8s/ with each overlay's env files made from their examples, as the README says. */
beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), "mom-k8s-"));
  cpSync(join(root, "k8s"), join(work, "k8s"), { recursive: true });
  for (const overlay of readdirSync(join(work, "k8s/overlays"))) {
    const dir = join(work, "k8s/overlays", overlay);
    for (const f of readdirSync(dir).filter((n) => n.endsWith(".env.example"))) cpSync(join(dir, f), join(dir, f.replace(/\.example$/, "")));
  }
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

function build(dir: string): Obj[] {
  if (!kustomize) throw new Error("kustomize not found: run `node -e \"import('./scripts/ensure-tools.mjs').then(m => m.ensureKustomize())\"` (npm test does)");
  const r = spawnSync(kustomize, ["build", dir], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`kustomize build ${dir}: ${r.stderr}`);
  return parseAllDocuments(r.stdout).map((d) => d.toJS() as Obj);
}

/** The kubernetes-models class for an object, e.g. apps/v1 Deployment -> kubernetes-models/apps/v1/Deployment. */
async function validate(o: Obj): Promise<void> {
  const mod = (await import(`kubernetes-models/${o.apiVersion}/${o.kind}`)) as Record<string, new (o: Obj) => { validate(): void }>;
  const Model = mod[o.kind] ?? mod.default;
  if (!Model) throw new Error(`no schema for ${o.apiVersion} ${o.kind}`);
  new Model(o).validate();
}

/**
 * Fields the API server does not know, which `kubectl apply` refuses (strict field validation, the
 * default) and the JSON schemas above let through (they allow extra properties): checked against
 * the field lists of @kubernetes/client-node's generated models (one class per API type).
 */
async function unknownFields(value: unknown, type: string, path: string): Promise<string[]> {
  if (value === null || typeof value !== "object") return [];
  const array = /^Array<(.+)>$/.exec(type);
  if (array) return (await Promise.all((value as unknown[]).map((v, i) => unknownFields(v, array[1]!, `${path}[${i}]`)))).flat();
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (map) return (await Promise.all(Object.entries(value).map(([k, v]) => unknownFields(v, map[1]!, `${path}.${k}`)))).flat();
  const model = await modelOf(type);
  if (!model) return []; // a scalar, IntOrString, Quantity or free-form object
  const fields = new Map(model.map((a) => [a.baseName, a.type]));
  const out: string[] = [];
  for (const [k, v] of Object.entries(value)) {
    const t = fields.get(k);
    if (!t) out.push(`${path}.${k}`);
    else out.push(...(await unknownFields(v, t, `${path}.${k}`)));
  }
  return out;
}
async function modelOf(type: string): Promise<{ baseName: string; type: string }[] | undefined> {
  if (!/^V\d/.test(type)) return undefined;
  try {
    const mod = await import(`@kubernetes/client-node/dist/gen/models/${type}.js`);
    return mod[type].getAttributeTypeMap();
  } catch {
    return undefined;
  }
}
/** apps/v1 Deployment -> V1Deployment, autoscaling/v2 HorizontalPodAutoscaler -> V2HorizontalPodAutoscaler */
const typeOf = (o: Obj) => `${o.apiVersion.split("/").pop()!.replace(/^v/, "V")}${o.kind}`;
/** Unknown fields of every object; an object of a type without a model fails instead of passing unchecked. */
async function strictCheck(objs: Obj[]): Promise<string[]> {
  const out: string[] = [];
  for (const o of objs) {
    if (!(await modelOf(typeOf(o)))) throw new Error(`no field list for ${o.apiVersion} ${o.kind} (${typeOf(o)})`);
    out.push(...(await unknownFields(o, typeOf(o), `${o.kind}/${o.metadata.name}`)));
  }
  return out;
}

/** A kustomization next to the overlays that adds to one: the nats-auth component, or a template file. */
function around(overlay: string, extra: { components?: string[]; files?: string[] }): string {
  const dir = mkdtempSync(join(work, "k8s/overlays", "_around-"));
  for (const f of extra.files ?? []) cpSync(join(root, f), join(dir, basename(f)));
  const kustomization = { resources: [`../${overlay}`, ...(extra.files ?? []).map((f) => basename(f))], components: (extra.components ?? []).map((c) => `../../${c}`) };
  writeFileSync(join(dir, "kustomization.yaml"), JSON.stringify({ apiVersion: "kustomize.config.k8s.io/v1beta1", kind: "Kustomization", ...kustomization }));
  return dir;
}

const overlays = readdirSync(join(root, "k8s/overlays"));
const workloads = (objs: Obj[]) => objs.filter((o) => o.kind === "Deployment" || o.kind === "StatefulSet");
const named = (objs: Obj[], kind: string, name: string) => objs.find((o) => o.kind === kind && o.metadata.name === name);
const selects = (selector: Record<string, string> | undefined, labels: Record<string, string>) =>
  !!selector && Object.entries(selector).every(([k, v]) => labels[k] === v);

describe("the validation itself", () => {
  it("rejects a broken Deployment (no containers, replicas a string)", async () => {
    await expect(validate({ apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "x" }, spec: { replicas: "two", selector: {}, template: { spec: {} } } })).rejects.toThrow();
  });

  it("finds a misspelt field the schemas let through", async () => {
    const d: Obj = { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "x", labels: { a: "b" } }, spec: { selector: { matchLabels: { a: "b" } }, template: { metadata: { labels: { a: "b" } }, spec: { containers: [{ name: "c", image: "i", readinesProbe: {}, resources: { limits: { memory: "1Gi" } } }] } } } };
    await validate(d);
    expect(await unknownFields(d, typeOf(d), "Deployment")).toEqual(["Deployment.spec.template.spec.containers[0].readinesProbe"]);
  });
});

describe.each(overlays)("k8s/overlays/%s", (overlay) => {
  let objs: Obj[];
  beforeAll(() => {
    objs = build(join(work, "k8s/overlays", overlay));
  });

  it("renders with kustomize into objects the Kubernetes schemas accept, with no field the API does not know", async () => {
    expect(objs.length).toBeGreaterThan(10);
    for (const o of objs) await validate(o);
    expect(await strictCheck(objs)).toEqual([]);
  });

  it("renders with the nats-auth component too", async () => {
    const withAuth = build(around(overlay, { components: ["components/nats-auth"] }));
    for (const o of withAuth) await validate(o);
    expect(await strictCheck(withAuth)).toEqual([]);
    const runner = named(withAuth, "Deployment", "mom-runner")!.spec.template.spec.containers[0];
    expect(runner.envFrom.map((e: any) => e.secretRef.name)).toEqual([expect.stringMatching(/^mom-model-credentials-/), "mom-nats-runner"]);
  });

  it("runs every pod non-root, without a service-account token, with dropped capabilities and sized", () => {
    for (const w of workloads(objs)) {
      const pod = w.spec.template.spec;
      const where = `${w.kind} ${w.metadata.name}`;
      expect([where, pod.automountServiceAccountToken]).toEqual([where, false]);
      expect([where, pod.securityContext.runAsNonRoot]).toEqual([where, true]);
      for (const c of [...(pod.initContainers ?? []), ...pod.containers]) {
        expect([where, c.name, c.securityContext]).toEqual([where, c.name, expect.objectContaining({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ["ALL"] } })]);
        expect([where, c.name, c.resources.requests.cpu, c.resources.requests.memory, c.resources.limits.memory].every(Boolean)).toBe(true);
      }
    }
  });

  it("probes every mom service on MOM_HTTP_PORT (/healthz, /readyz) and lets Prometheus scrape /metrics", () => {
    const mom = workloads(objs).filter((w) => w.metadata.name.startsWith("mom-"));
    expect(mom.map((w) => w.metadata.name).sort()).toEqual(overlay === "prod" ? ["mom-console", "mom-ingress-slack", "mom-runner", "mom-scheduler"] : ["mom-console", "mom-runner", "mom-scheduler"]);
    for (const w of mom) {
      const c = w.spec.template.spec.containers[0];
      expect(c.env).toContainEqual({ name: "MOM_HTTP_PORT", value: "9090" });
      expect(c.ports).toContainEqual({ name: "http", containerPort: 9090 });
      expect(c.livenessProbe.httpGet).toEqual({ path: "/healthz", port: "http" });
      expect(c.readinessProbe.httpGet).toEqual({ path: "/readyz", port: "http" });
      expect(w.spec.template.metadata.annotations).toEqual({ "prometheus.io/scrape": "true", "prometheus.io/port": "9090", "prometheus.io/path": "/metrics" });
    }
  });

  it("gives every workload a PodDisruptionBudget and a NetworkPolicy that covers both directions", () => {
    for (const w of workloads(objs)) {
      const labels = w.spec.template.metadata.labels;
      const pdb = objs.filter((o) => o.kind === "PodDisruptionBudget" && selects(o.spec.selector.matchLabels, labels));
      const np = objs.filter((o) => o.kind === "NetworkPolicy" && selects(o.spec.podSelector.matchLabels, labels));
      expect([w.metadata.name, pdb.length, np.length]).toEqual([w.metadata.name, 1, 1]);
      expect(np[0]!.spec.policyTypes).toEqual(["Ingress", "Egress"]);
    }
  });

  it("lets the runner reach NATS, DNS and public HTTPS only", () => {
    const np = named(objs, "NetworkPolicy", "mom-runner")!;
    const egress = np.spec.egress as any[];
    expect(egress).toHaveLength(3);
    expect(egress[0]).toEqual({ to: [{ podSelector: { matchLabels: { "app.kubernetes.io/name": "nats" } } }], ports: [{ port: 4222, protocol: "TCP" }] });
    expect(egress[1].ports.map((p: any) => p.port)).toEqual([53, 53]);
    expect(egress[2].ports).toEqual([{ port: 443, protocol: "TCP" }]);
    expect(egress[2].to[0].ipBlock.except).toEqual(expect.arrayContaining(["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"]));
  });

  it("isolates channels by default: a user-namespaced runner pod with what bubblewrap needs, and sandbox auto (never host)", async () => {
    const runner = named(objs, "Deployment", "mom-runner")!.spec.template.spec;
    expect(runner.hostUsers).toBe(false);
    for (const c of [...runner.initContainers, ...runner.containers]) {
      // The doctor init container checks the same sandbox the runner uses.
      expect([c.name, c.securityContext]).toEqual([c.name, expect.objectContaining({ procMount: "Unmasked", seccompProfile: { type: "Unconfined" }, allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } })]);
    }
    // Nothing else loosens its seccomp profile or unmasks /proc.
    for (const w of workloads(objs).filter((o) => o.metadata.name !== "mom-runner")) {
      const pod = w.spec.template.spec;
      for (const c of [...(pod.initContainers ?? []), ...pod.containers]) expect([w.metadata.name, c.securityContext?.procMount, c.securityContext?.seccompProfile]).toEqual([w.metadata.name, undefined, undefined]);
      expect([w.metadata.name, pod.securityContext.seccompProfile]).toEqual([w.metadata.name, { type: "RuntimeDefault" }]);
    }
    const configMap = objs.find((o) => o.kind === "ConfigMap" && o.metadata.name.startsWith("mom-config"))! as Obj & { data: Record<string, string> };
    expect(JSON.parse(configMap.data["config.json"]!).sandbox.type).toBe("auto");
    // With the Localhost profile component, for clusters that install deploy/seccomp/mom-runner.json.
    const withProfile = build(around(overlay, { components: ["components/runner-seccomp-profile"] }));
    for (const o of withProfile) await validate(o);
    expect(await strictCheck(withProfile)).toEqual([]);
    const pod = named(withProfile, "Deployment", "mom-runner")!.spec.template.spec;
    for (const c of [...pod.initContainers, ...pod.containers]) expect(c.securityContext.seccompProfile).toEqual({ type: "Localhost", localhostProfile: "profiles/mom-runner.json" });
  });

  it("runs the web console as a pod of its own that reaches NATS and DNS only, mounts nothing but config.json, behind a Service", () => {
    const pod = named(objs, "Deployment", "mom-console")!.spec.template.spec;
    const c = pod.containers[0];
    expect(c.args).toEqual(["console", "/data"]);
    expect(c.env).toContainEqual({ name: "MOM_CONSOLE_PORT", value: "8480" });
    expect(c.envFrom).toContainEqual({ secretRef: { name: "mom-nats-console", optional: true } });
    expect(pod.volumes.map((v: any) => Object.keys(v).filter((k) => k !== "name"))).toEqual([["configMap"]]);
    const egress = named(objs, "NetworkPolicy", "mom-console")!.spec.egress as any[];
    expect(egress).toHaveLength(2);
    expect(egress[0]).toEqual({ to: [{ podSelector: { matchLabels: { "app.kubernetes.io/name": "nats" } } }], ports: [{ port: 4222, protocol: "TCP" }] });
    expect(egress[1].ports.map((p: any) => p.port)).toEqual([53, 53]);
    const svc = named(objs, "Service", "mom-console")!;
    expect(svc.spec.ports).toEqual([{ name: "web", port: 8480, targetPort: "web", protocol: "TCP" }]);
    expect(selects(svc.spec.selector, named(objs, "Deployment", "mom-console")!.spec.template.metadata.labels)).toBe(true);
    expect(c.env).toContainEqual({ name: "MOM_CONSOLE_HOST", value: "0.0.0.0" });
  });

  it("mounts one shared workspace claim in the runner and the scheduler", () => {
    const pvc = named(objs, "PersistentVolumeClaim", "mom-workspace")!;
    for (const name of ["mom-runner", "mom-scheduler"]) {
      const vols = named(objs, "Deployment", name)!.spec.template.spec.volumes;
      expect(vols).toContainEqual({ name: "workspace", persistentVolumeClaim: { claimName: "mom-workspace" } });
    }
    if (overlay === "prod") expect(pvc.spec).toMatchObject({ accessModes: ["ReadWriteMany"], storageClassName: expect.any(String) });
  });
});

describe("k8s/overlays/prod scaling", () => {
  it("lets the HPA own the runner's replica count (2-8) and rolls without losing capacity", () => {
    const objs = build(join(work, "k8s/overlays/prod"));
    const hpa = named(objs, "HorizontalPodAutoscaler", "mom-runner")!;
    const runner = named(objs, "Deployment", "mom-runner")!;
    expect(hpa.spec).toMatchObject({ scaleTargetRef: { kind: "Deployment", name: "mom-runner" }, minReplicas: 2, maxReplicas: 8 });
    expect(runner.spec.replicas).toBeUndefined();
    expect(runner.spec.strategy.rollingUpdate).toEqual({ maxSurge: 1, maxUnavailable: 0 });
    expect(named(objs, "StatefulSet", "nats")!.spec.replicas).toBe(3);
  });
});

describe("k8s/base templates", () => {
  it("overlays/prod/ingress-slack.yaml is ingress-example.yaml for the adapter slack", () => {
    const body = (file: string) => readFileSync(join(root, file), "utf8").replace(/^[^]*?(?=^apiVersion:)/m, "");
    expect(body("k8s/overlays/prod/ingress-slack.yaml")).toBe(body("k8s/base/ingress-example.yaml").replaceAll("ADAPTER", "slack"));
  });


  it("ingress-whatsapp-example.yaml renders and validates when an overlay adds it", async () => {
    const objs = build(around("dev", { files: ["k8s/base/ingress-whatsapp-example.yaml"] }));
    for (const o of objs) await validate(o);
    expect(await strictCheck(objs)).toEqual([]);
    const whatsapp = objs.filter((o) => o.metadata.name === "mom-ingress-whatsapp").map((o) => o.kind);
    expect(whatsapp.sort()).toEqual(["Deployment", "Ingress", "NetworkPolicy", "PodDisruptionBudget", "Service"]);
  });
});
