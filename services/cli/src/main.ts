import { ModelSetupError } from "@mom/agent";
import { ConfigError } from "@mom/config";
import { events, ingress, runner, scheduler, up } from "./commands.js";
import { formatChecks, runDoctor } from "./doctor.js";
import { receiptsTrail } from "./receipts-command.js";
import { authCommand } from "./auth-command.js";
import { CommandError } from "./command-error.js";
import { usageReport } from "./usage-command.js";
import { toolsCommand } from "./tools-command.js";

const USAGE = `usage: mom <command> [args]

  up [dataDir]                  runner + scheduler + terminal chat in one terminal (starts a local NATS unless NATS_URL is set)
  runner <dataDir>              the agent runner service
  ingress <adapter> <dataDir>   the ingress service of one adapter from config.json
  scheduler <dataDir>           the scheduler service: fires workspace/events/*.json
  events [dataDir]              list scheduled events (next fire time) and invalid/missed ones
  doctor [dataDir]              check config, NATS + JetStream, model credentials and sandbox tools
  receipts <adapter/channel> [--run ID] [dataDir]   print a channel's tool-call receipts
  auth list|add|remove|order [--data DIR]          model credentials: auth profiles, their order, cooldowns (mom auth help)
  usage [--by channel|adapter|model] [--since DATE] [--data DIR]   token and cost totals from the usage ledger
  tools list|approve <name>...|approve --all [--data DIR]           custom tools: which are approved; approve new or changed ones

dataDir defaults to ./data`;

async function main(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  switch (command) {
    case "up":
      return up(args[0] ?? "data");
    case "runner":
      return runner(args[0] ?? "data");
    case "scheduler":
      return scheduler(args[0] ?? "data");
    case "events":
      process.stdout.write(`${events(args[0] ?? "data")}\n`);
      return 0;
    case "ingress":
      if (!args[0]) break;
      return ingress(args[0], args[1] ?? "data");
    case "doctor": {
      const checks = await runDoctor(args[0] ?? "data");
      process.stdout.write(`${formatChecks(checks)}\n`);
      return checks.some((c) => !c.ok && !c.optional) ? 1 : 0;
    }
    case "receipts": {
      const runAt = args.indexOf("--run");
      const runId = runAt >= 0 ? args[runAt + 1] : undefined;
      const rest = args.filter((_, i) => runAt < 0 || (i !== runAt && i !== runAt + 1));
      if (!rest[0]) break;
      process.stdout.write(`${await receiptsTrail(rest[0], rest[1] ?? "data", runId)}\n`);
      return 0;
    }
    case "auth":
      return authCommand(args, { input: process.stdin, write: (t) => void process.stdout.write(t) });
    case "usage":
      process.stdout.write(`${await usageReport(args)}\n`);
      return 0;
    case "tools":
      process.stdout.write(`${await toolsCommand(args)}\n`);
      return 0;
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
    const known = err instanceof ConfigError || err instanceof ModelSetupError || err instanceof CommandError || /nats-server not found|no such adapter|CONNECTION_REFUSED|ECONNREFUSED/i.test(String(err?.message));
    process.stderr.write(`mom: ${known ? err.message : (err?.stack ?? err)}\n`);
    process.exit(1);
  },
);
