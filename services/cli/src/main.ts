import { ModelSetupError } from "@mom/agent";
import { ConfigError } from "@mom/config";
import { ingress, runner, up } from "./commands.js";
import { formatChecks, runDoctor } from "./doctor.js";

const USAGE = `usage: mom <command> [args]

  up [dataDir]                  runner + terminal chat in one terminal (starts a local NATS unless NATS_URL is set)
  runner <dataDir>              the agent runner service
  ingress <adapter> <dataDir>   the ingress service of one adapter from config.json
  doctor [dataDir]              check config, NATS + JetStream, model credentials and sandbox tools

dataDir defaults to ./data`;

async function main(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  switch (command) {
    case "up":
      return up(args[0] ?? "data");
    case "runner":
      return runner(args[0] ?? "data");
    case "ingress":
      if (!args[0]) break;
      return ingress(args[0], args[1] ?? "data");
    case "doctor": {
      const checks = await runDoctor(args[0] ?? "data");
      process.stdout.write(`${formatChecks(checks)}\n`);
      return checks.some((c) => !c.ok && !c.optional) ? 1 : 0;
    }
    case "help":
    case "--help":
    case "-h":
      process.stdout.write(`${USAGE}\n`);
      return 0;
  }
  process.stderr.write(`${USAGE}\n`);
  return 2;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    // Operator mistakes get one clear line; anything else is a bug and keeps its stack.
    const known = err instanceof ConfigError || err instanceof ModelSetupError || /nats-server not found|no such adapter|CONNECTION_REFUSED|ECONNREFUSED/i.test(String(err?.message));
    process.stderr.write(`mom: ${known ? err.message : (err?.stack ?? err)}\n`);
    process.exit(1);
  },
);
