import { Command, CommanderError } from "commander";
import { channelArg } from "./channel-arg.js";
import { existingDataDir } from "./data-dir.js";
import { momVersion } from "./version.js";

// Each command loads its own modules: the services pull in every platform SDK, which `--help`,
// `--version` or `mom tail` should not wait for.
const commands = () => import("./commands.js");

const print = (text: string) => void process.stdout.write(`${text}\n`);

/** Sets the exit code the action's promise resolves to; commander itself only awaits it. */
let exitCode = 0;

function program(): Command {
  const mom = new Command("mom")
    .version(momVersion(), "-V, --version")
    .showSuggestionAfterError(true)
    .showHelpAfterError("(mom --help lists the commands)")
    .exitOverride()
    .configureOutput({ writeErr: (t) => void process.stderr.write(t) })
    .description("mom: a chat agent (Slack, Discord, Telegram, WhatsApp, terminal) on NATS JetStream");
  mom.addHelpText("after", "\ndataDir defaults to ./data. `mom <command> --help` explains one command.");

  mom
    .command("up")
    .description("the whole bot on one machine: runner, scheduler, every configured adapter's ingress (each a process of its own) and the terminal chat (starts a local NATS unless NATS_URL is set)")
    .argument("[dataDir]", "data directory (created on first use)", "data")
    .option("--no-chat", "no terminal chat (for systemd and containers; also when stdin is /dev/null)")
    .action(async (dataDir: string, o: { chat: boolean }) => (await commands()).up(dataDir, { chat: o.chat }));
  mom
    .command("runner")
    .description("the agent runner service, as deployed (JSON logs on stderr)")
    .argument("[dataDir]", "data directory", "data")
    .action(async (dataDir: string) => (await commands()).runner(existingDataDir(dataDir)));
  mom
    .command("scheduler")
    .description("the scheduler service: fires workspace/events/*.json")
    .argument("[dataDir]", "data directory", "data")
    .action(async (dataDir: string) => (await commands()).scheduler(existingDataDir(dataDir)));
  mom
    .command("events")
    .description("list scheduled events (next fire time) and the invalid and missed ones")
    .argument("[dataDir]", "data directory", "data")
    .action(async (dataDir: string) => print(await (await commands()).events(existingDataDir(dataDir))));
  mom
    .command("ingress")
    .description("the ingress service of one adapter from config.json")
    .argument("<adapter>", "adapter name in config.json")
    .argument("[dataDir]", "data directory", "data")
    .action(async (adapter: string, dataDir: string) => (await commands()).ingress(adapter, existingDataDir(dataDir)));
  mom
    .command("doctor")
    .description("check config, NATS + JetStream, the model (one tiny real call), workspace, tools and sandbox")
    .argument("[dataDir]", "data directory", "data")
    .action(async (dataDir: string) => {
      const { formatChecks, runDoctor } = await import("./doctor.js");
      const checks = await runDoctor(dataDir);
      print(formatChecks(checks));
      exitCode = checks.some((c) => !c.ok && !c.optional) ? 1 : 0;
    });
  mom
    .command("receipts")
    .description("print a channel's tool-call receipts")
    .argument("<adapter/channel>", "qualified channel id, e.g. cli/local")
    .argument("[dataDir]", "data directory", "data")
    .option("--run <id>", "only this run")
    .action(async (qualified: string, dataDir: string, o: { run?: string }) => {
      channelArg(qualified);
      const { receiptsTrail } = await import("./receipts-command.js");
      print(await receiptsTrail(qualified, existingDataDir(dataDir), o.run));
    });
  mom
    .command("replay")
    .description("a channel's messages, runs, control messages and receipts from the bus, in order")
    .argument("<adapter/channel>", "qualified channel id, e.g. cli/local")
    .option("--since <when>", "a duration back from now (90s, 30m, 2h, 7d) or an ISO time")
    .option("--until <when>", "a duration back from now or an ISO time")
    .option("--from-seq <n>", "start at this MOM_IN sequence")
    .option("--json", "one JSON object per line")
    .option("--redrive", "feed the window's inbound messages to a fresh agent in a scratch workspace; print recorded and new answers side by side")
    .option("--model <provider/id>", "with --redrive: the model for the fresh agent (default: config.json's)")
    .option("--workspace <dir>", "with --redrive: the scratch dir, outside the data dir (default: a new temporary dir)")
    .option("-d, --data <dir>", "data directory", "data")
    .action(async (qualified: string, o) => {
      channelArg(qualified);
      const { replayCommand } = await import("./replay-command.js");
      exitCode = await replayCommand(qualified, { ...o, data: existingDataDir(o.data) }, print);
    });
  mom
    .command("tail")
    .description("a live, readable view of the bus: in, out, ctl, receipts, dead letters")
    .argument("[adapter[/channel]]", "only this adapter or channel")
    .option("--json", "one JSON object per line")
    .option("-d, --data <dir>", "data directory", "data")
    .action(async (target: string | undefined, o: { json?: boolean; data: string }) => {
      const { tailCommand } = await import("./tail-command.js");
      return tailCommand(target, { ...o, data: existingDataDir(o.data) }, print);
    });
  // These two parse their own arguments (sub-commands and options of their own).
  mom
    .command("auth")
    .description("model credentials: auth profiles, their order, cooldowns (list | add | remove | order)")
    .helpOption(false)
    .allowUnknownOption()
    .allowExcessArguments()
    .argument("[args...]")
    .action(async (args: string[]) => {
      const { AUTH_USAGE, authCommand } = await import("./auth-command.js");
      if (args.includes("--help") || args.includes("-h")) return print(AUTH_USAGE);
      exitCode = await authCommand(args, { input: process.stdin, write: (t) => void process.stdout.write(t) });
    });
  mom
    .command("usage")
    .description("token and cost totals from the usage ledger")
    .helpOption(false)
    .allowUnknownOption()
    .allowExcessArguments()
    .argument("[args...]")
    .action(async (args: string[]) => {
      const { USAGE_USAGE, usageReport } = await import("./usage-command.js");
      print(args.includes("--help") || args.includes("-h") ? USAGE_USAGE : await usageReport(args));
    });
  mom
    .command("tools")
    .description("custom tools: which are approved; approve new or changed ones (list | approve <name>... | approve --all)")
    .helpOption(false)
    .allowUnknownOption()
    .allowExcessArguments()
    .argument("[args...]")
    .action(async (args: string[]) => {
      const { TOOLS_USAGE, toolsCommand } = await import("./tools-command.js");
      print(args.includes("--help") || args.includes("-h") ? TOOLS_USAGE : await toolsCommand(args));
    });
  return mom;
}

async function main(argv: string[]): Promise<number> {
  const mom = program();
  if (argv.length === 0) {
    process.stderr.write(mom.helpInformation());
    return 2;
  }
  try {
    await mom.parseAsync(argv, { from: "user" });
  } catch (err) {
    // --help and --version end here too (code 0); usage mistakes were already printed by commander.
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    throw err;
  }
  return exitCode;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    // Every failure is one line for the operator; MOM_DEBUG=1 shows where it came from.
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`mom: ${message}\n`);
    if (process.env.MOM_DEBUG) process.stderr.write(`${(err as Error)?.stack ?? ""}\n`);
    process.exit(1);
  },
);
