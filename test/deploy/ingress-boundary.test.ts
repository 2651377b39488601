import { describe, expect, it } from "@jest/globals";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
// The shipped ingresses, and the ones written as outside authors would (examples/).
const ingresses = ["services", "examples"].flatMap((top) => readdirSync(join(root, top)).filter((d) => d.startsWith("ingress-")).map((d) => `${top}/${d}`));

/** `@mom/<name>` packages a source file imports (static and dynamic imports). */
function momImports(text: string): string[] {
  return [...text.matchAll(/(?:from\s+|import\s*\(\s*)["'](@mom\/[a-z0-9-]+)["']/g)].map((m) => m[1]!);
}

// An ingress is built on the ingress SDK only: nothing of mom's core is reached around it, so a
// platform can be written (and kept working) against that one documented surface.
describe("the ingresses stay on @mom/ingress-sdk", () => {
  it.each(ingresses)("%s imports no other mom package and declares no other", (dir) => {
    const src = join(root, dir, "src");
    const offenders = readdirSync(src)
      .filter((f) => f.endsWith(".ts"))
      .flatMap((f) => momImports(readFileSync(join(src, f), "utf8")).filter((m) => m !== "@mom/ingress-sdk").map((m) => `${f}: ${m}`));
    expect(offenders).toEqual([]);
    const pkg = JSON.parse(readFileSync(join(root, dir, "package.json"), "utf8")) as { dependencies?: Record<string, string> };
    expect(Object.keys(pkg.dependencies ?? {}).filter((d) => d.startsWith("@mom/") && d !== "@mom/ingress-sdk")).toEqual([]);
  });

  it("finds a forbidden import when there is one (the check is not vacuous)", () => {
    expect(momImports('import { Bus } from "@mom/bus";\nconst x = await import("@mom/agent");')).toEqual(["@mom/bus", "@mom/agent"]);
    expect(ingresses.length).toBeGreaterThanOrEqual(6);
    expect(ingresses).toContain("examples/ingress-irc");
  });

  it("examples/ingress-irc is outside the workspace: no workspace glob reaches it, and it has the SDK only as a packed tarball", () => {
    const rootPkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { workspaces: string[] };
    expect(rootPkg.workspaces.filter((w) => w.startsWith("examples") || w.startsWith("*"))).toEqual([]);
    const pkg = JSON.parse(readFileSync(join(root, "examples/ingress-irc/package.json"), "utf8")) as { dependencies: Record<string, string> };
    expect(pkg.dependencies["@mom/ingress-sdk"]).toMatch(/^file:mom-ingress-sdk-\d+\.\d+\.\d+\.tgz$/);
  });
});
