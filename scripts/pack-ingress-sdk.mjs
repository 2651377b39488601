// `npm run pack:ingress-sdk`: @mom/ingress-sdk as one npm tarball that installs in a plain npm
// project, outside this workspace (dist-packages/mom-ingress-sdk-<version>.tgz; prints its path).
//
// The SDK re-exports mom's workspace libraries (bus, contracts, config, …), which are not
// published. So the tarball carries them inside: esbuild bundles the compiled SDK and every
// `@mom/*` module it reaches into one dist/index.js, rollup with rollup-plugin-dts does the same
// for the type declarations, and every other package the bundle imports (NATS, Nest, pino, TypeBox, …)
// stays an ordinary dependency of the packed package.json. Why this and not bundleDependencies:
// docs/ingress-sdk.md, "Packaging".
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { rollup } from "rollup";
import ts from "typescript";
import { dts } from "rollup-plugin-dts";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const sdkDir = join(root, "libs/ingress-sdk");
const outDir = join(root, "dist-packages");
// A stage of this run's own, and the tarball renamed into place whole: two runs at once (test files
// building the IRC example side by side) neither clobber each other nor read a half-written tarball.
const stageRoot = join(outDir, `stage-${process.pid}`);
const stage = join(stageRoot, "ingress-sdk");
const readJson = (file) => JSON.parse(readFileSync(file, "utf8"));
const sdk = readJson(join(sdkDir, "package.json"));
const rootPkg = readJson(join(root, "package.json"));

function run(cmd, args, cwd = root) {
  const r = spawnSync(cmd, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
  if (r.status !== 0) throw new Error(`\`${cmd} ${args.join(" ")}\` failed (exit ${r.status ?? r.signal})`);
  return r.stdout;
}

/** The package a bare import names: `@scope/name/sub` -> `@scope/name`, `name/sub` -> `name`. */
const packageOf = (spec) => spec.split("/").slice(0, spec.startsWith("@") ? 2 : 1).join("/");

/** Every `@mom/*` package the SDK reaches, with its directory, and the ranges the closure declares for everything else. */
function closure() {
  const dirs = new Map();
  const ranges = new Map();
  const visit = (name, dir) => {
    if (dirs.has(name)) return;
    dirs.set(name, dir);
    for (const [dep, range] of Object.entries(readJson(join(dir, "package.json")).dependencies ?? {})) {
      if (dep.startsWith("@mom/")) visit(dep, join(root, "libs", dep.slice("@mom/".length)));
      else ranges.set(dep, [...(ranges.get(dep) ?? []), range]);
    }
  };
  visit(sdk.name, sdkDir);
  return { dirs, ranges };
}

/** One range per dependency: the declared one, or — where two libraries declare different ones — `^` the version this workspace is tested with. */
function rangeFor(name, declared) {
  const distinct = [...new Set(declared)];
  if (distinct.length === 1) return distinct[0];
  return `^${readJson(join(root, "node_modules", name, "package.json")).version}`;
}

const { dirs, ranges } = closure();

// 1. The compiled sources (tsc: Nest's decorators need its emitted metadata, which esbuild has not).
run(process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-b", relative(root, sdkDir)]);

// 2. One ES module: @mom/* inside, everything else imported from node_modules.
rmSync(stage, { recursive: true, force: true });
mkdirSync(join(stage, "dist"), { recursive: true });
const external = [...ranges.keys()];
// Two entry points, the API and the conformance kit (`@mom/ingress-sdk/testing`), sharing their code in chunks.
const entries = { index: "dist/index", "testing/index": "dist/testing/index" };
const result = await build({
  entryPoints: Object.fromEntries(Object.entries(entries).map(([out, file]) => [out, join(sdkDir, `${file}.js`)])),
  outdir: join(stage, "dist"),
  splitting: true,
  chunkNames: "chunks/[name]-[hash]",
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node24",
  external,
  metafile: true,
  legalComments: "none",
  logLevel: "warning",
});
const imported = new Set(
  Object.values(result.metafile.outputs)
    .flatMap((o) => o.imports)
    .filter((i) => i.external && !i.path.startsWith("node:"))
    .map((i) => packageOf(i.path)),
);
const bundled = Object.keys(result.metafile.inputs).filter((f) => f.includes("node_modules/") && !f.includes("node_modules/@mom/"));
if (bundled.length > 0) throw new Error(`third-party code was bundled instead of being a dependency: ${bundled.join(", ")}`);

// 3. One declaration file, with the @mom/* types written out in it.
const types = await rollup({
  input: Object.fromEntries(Object.entries(entries).map(([out, file]) => [out, join(sdkDir, `${file}.d.ts`)])),
  // Followed into node_modules only for @mom/* (workspace links to libs/*/dist): the rest is imported.
  external: (id) => id.startsWith("node:") || external.includes(packageOf(id)),
  // Resolved as Node does (package "exports"): `@mom/bus/nest` is a subpath.
  plugins: [dts({ respectExternal: true, compilerOptions: { module: ts.ModuleKind.Node16, moduleResolution: ts.ModuleResolutionKind.Node16 } })],
  onwarn: (w) => {
    if (w.code === "UNUSED_EXTERNAL_IMPORT") return; // a type the SDK does not export: shaken out
    throw new Error(`declarations: ${w.message}`);
  },
});
await types.write({ dir: join(stage, "dist"), format: "es", chunkFileNames: "chunks/[name]-[hash].d.ts" });
await types.close();

// 4. The package.json of the tarball: the dependencies are exactly what the bundle imports.
const dependencies = Object.fromEntries([...imported].sort().map((name) => [name, rangeFor(name, ranges.get(name))]));
const pkg = {
  name: sdk.name,
  version: sdk.version,
  description: sdk.description,
  type: "module",
  main: "./dist/index.js",
  types: "./dist/index.d.ts",
  exports: { ".": { types: "./dist/index.d.ts", default: "./dist/index.js" }, "./testing": { types: "./dist/testing/index.d.ts", default: "./dist/testing/index.js" } },
  engines: rootPkg.engines,
  dependencies,
};
writeFileSync(join(stage, "package.json"), `${JSON.stringify(pkg, null, 2)}\n`);
for (const doc of ["README.md", "CHANGELOG.md"]) if (existsSync(join(sdkDir, doc))) cpSync(join(sdkDir, doc), join(stage, doc));

// 5. The tarball.
const [packed] = JSON.parse(run("npm", ["pack", "--json", "--pack-destination", stageRoot, "--loglevel=error"], stage));
const tarball = join(outDir, packed.filename);
renameSync(join(stageRoot, packed.filename), tarball);
rmSync(stageRoot, { recursive: true, force: true });
process.stderr.write(`ingress-sdk: ${packed.name}@${packed.version}: ${packed.entryCount} files, ${Math.round(packed.size / 1024)} KiB packed, ${Math.round(packed.unpackedSize / 1024)} KiB unpacked; ${Object.keys(dependencies).length} dependencies\n`);
process.stdout.write(`${tarball}\n`);
