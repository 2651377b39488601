import { describe, expect, it } from "@jest/globals";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const ingresses = readdirSync(join(root, "services")).filter((d) => d.startsWith("ingress-"));

/** `@mom/<name>` packages a source file imports (static and dynamic imports). */
function momImports(text: string): string[] {
  return [...text.matchAll(/(?:from\s+|import\s*\(\s*)["'](@mom\/[a-z0-9-]+)["']/g)].map((m) => m[1]!);
}

// An ingress is built on the ingress SDK only: nothing of mom's core is reached around it, so a
// platform can be written (and kept working) against that one documented surface.
describe("the ingresses stay on @mom/ingress-sdk", () => {
  it.each(ingresses)("%s imports no other mom package and declares no other", (dir) => {
    const src = join(root, "services", dir, "src");
    const offenders = readdirSync(src)
      .filter((f) => f.endsWith(".ts"))
      .flatMap((f) => momImports(readFileSync(join(src, f), "utf8")).filter((m) => m !== "@mom/ingress-sdk").map((m) => `${f}: ${m}`));
    expect(offenders).toEqual([]);
    const pkg = JSON.parse(readFileSync(join(root, "services", dir, "package.json"), "utf8")) as { dependencies?: Record<string, string> };
    expect(Object.keys(pkg.dependencies ?? {}).filter((d) => d.startsWith("@mom/") && d !== "@mom/ingress-sdk")).toEqual([]);
  });

  it("finds a forbidden import when there is one (the check is not vacuous)", () => {
    expect(momImports('import { Bus } from "@mom/bus";\nconst x = await import("@mom/agent");')).toEqual(["@mom/bus", "@mom/agent"]);
    expect(ingresses.length).toBeGreaterThanOrEqual(5);
  });
});
