// Native-ESM Jest with SWC (decorators + metadata for Nest). Workspace packages resolve to their
// sources, so tests never need a build.
import { existsSync, readdirSync, readFileSync } from "node:fs";

// Every workspace package (libs/*, services/*) by its package.json name: a new one needs no entry here.
const packages = Object.fromEntries(
  ["libs", "services"].flatMap((top) =>
    readdirSync(new URL(top, import.meta.url))
      .map((d) => `${top}/${d}`)
      .filter((dir) => existsSync(new URL(`${dir}/package.json`, import.meta.url)) && existsSync(new URL(`${dir}/src/index.ts`, import.meta.url)))
      .map((dir) => [JSON.parse(readFileSync(new URL(`${dir}/package.json`, import.meta.url), "utf8")).name, dir]),
  ),
);

// Subpath exports (`@mom/ingress-sdk/testing`) map to the source beside their built file.
const subpaths = Object.fromEntries(
  Object.entries(packages).flatMap(([name, dir]) => {
    const exports = JSON.parse(readFileSync(new URL(`${dir}/package.json`, import.meta.url), "utf8")).exports ?? {};
    return Object.entries(exports)
      .filter(([key, target]) => key !== "." && typeof target?.default === "string")
      .map(([key, target]) => [`^${name}/${key.slice(2)}$`, `<rootDir>/${dir}/${target.default.replace(/^\.\/dist\//, "src/").replace(/\.js$/, ".ts")}`]);
  }),
);

export default {
  testEnvironment: "node",
  extensionsToTreatAsEsm: [".ts"],
  // A package of its own outside the workspace: its node_modules (when built in place) is not ours.
  modulePathIgnorePatterns: ["<rootDir>/examples/ingress-irc/node_modules/"],
  testMatch: ["<rootDir>/{libs,services}/*/src/**/*.test.ts", "<rootDir>/integrations/*/**/*.test.ts", "<rootDir>/test/**/*.test.ts"],
  moduleNameMapper: {
    ...Object.fromEntries(Object.entries(packages).map(([name, dir]) => [`^${name}$`, `<rootDir>/${dir}/src/index.ts`])),
    ...subpaths,
    "^(\\.{1,2}/.*)\\.js$": "$1",
  },
  transform: {
    "^.+\\.ts$": [
      "@swc/jest",
      {
        jsc: {
          parser: { syntax: "typescript", decorators: true },
          transform: { legacyDecorator: true, decoratorMetadata: true },
          target: "es2022",
        },
        module: { type: "es6" },
      },
    ],
  },
  testTimeout: 30000,
};
