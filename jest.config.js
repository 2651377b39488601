// Native-ESM Jest with SWC (decorators + metadata for Nest). Workspace packages resolve to their
// sources, so tests never need a build.
const packages = {
  contracts: "libs/contracts",
  config: "libs/config",
  bus: "libs/bus",
  store: "libs/store",
  agent: "libs/agent",
  testing: "libs/testing",
  format: "libs/format",
  tools: "libs/tools",
  auth: "libs/auth",
  usage: "libs/usage",
  sandbox: "libs/sandbox",
  render: "libs/render",
  observability: "libs/observability",
  "agent-runner": "services/agent-runner",
  "ingress-cli": "services/ingress-cli",
  "ingress-slack": "services/ingress-slack",
  "ingress-discord": "services/ingress-discord",
  "ingress-telegram": "services/ingress-telegram",
  "ingress-whatsapp": "services/ingress-whatsapp",
  scheduler: "services/scheduler",
  cli: "services/cli",
};

export default {
  testEnvironment: "node",
  extensionsToTreatAsEsm: [".ts"],
  testMatch: ["<rootDir>/{libs,services}/*/src/**/*.test.ts", "<rootDir>/test/**/*.test.ts"],
  moduleNameMapper: {
    ...Object.fromEntries(Object.entries(packages).map(([name, dir]) => [`^@mom/${name}$`, `<rootDir>/${dir}/src/index.ts`])),
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
