import { Command, CommanderError } from "commander";
import { channelArg } from "./channel-arg.js";
import { registerAuth, registerTools, registerUsage } from "./command-spec.js";
import { dataDirOf, existingDataDir, strict, withData } from "./data-dir.js";
import { momVersion } from "./version.js";

// Each command loads its own modules: the services pull in every platform SDK, which `--help`,
// `--version` or `mom tail` should not wait for.
const commands = () => import("./commands.js");
/** The data dir is checked before the service code loads: a mistyped one is said at once. */
const withCommands = async <T>(dataDir: string, f: (c: Awaited<ReturnType<typeof commands>>, dataDir: string) => T): Promise<Awaited<T>> => await f(await commands(), dataDir);

const print = (text: string) => void process.stdout.write(`${text}\n`);

/** Sets the exit code the action's promise resolves to; commander itself only awaits it. */
let exitCode = 0;

function program(): Command {
  const mom = strict(new Command("mom"), (t) => void process.stderr.write(t))
    .version(momVersion(), "-V, --version")
    .showHelpAfterError("(mom --help lists the commands)")
    .description("mom: a chat agent (Slack, Discord, Telegram, WhatsApp, Matrix, e-mail, a terminal, and any ingress built on @mom/ingress-sdk) on NATS JetStream");
  mom.addHelpText(
    "after",
    "\nThe data dir: -d/--data DIR on every command, else $MOM_DATA, else ./data (up, runner, scheduler, events,\ndoctor, ingress and receipts also take it as their last argument). `mom <command> --help` explains one command.",
  );
  const dir = (o: { data?: string }, positional?: string) => existingDataDir(dataDirOf(o, positional));

  withData(
    mom
      .command("up")
      .description("the whole bot on one machine: runner, scheduler, every configured adapter's ingress (each a process of its own) and the terminal chat (starts a local NATS unless NATS_URL is set)")
      .argument("[dataDir]", "data directory (created on first use)")
      .option("--no-chat", "no terminal chat (for systemd and containers; also when stdin is /dev/null)"),
  ).action(async (dataDir: string | undefined, o: { chat: boolean; data?: string }) => (await commands()).up(dataDirOf(o, dataDir), { chat: o.chat }));
  withData(mom.command("runner").description("the agent runner service, as deployed (JSON logs on stderr)").argument("[dataDir]", "data directory")).action(
    async (dataDir: string | undefined, o: { data?: string }) => withCommands(dir(o, dataDir), (c, d) => c.runner(d)),
  );
  withData(mom.command("scheduler").description("the scheduler service: fires workspace/events/*.json").argument("[dataDir]", "data directory")).action(
    async (dataDir: string | undefined, o: { data?: string }) => withCommands(dir(o, dataDir), (c, d) => c.scheduler(d)),
  );
  withData(mom.command("console").description("the web console: live overview, run timelines with receipts, approvals (docs/console.md)").argument("[dataDir]", "data directory")).action(
    async (dataDir: string | undefined, o: { data?: string }) => withCommands(dir(o, dataDir), (c, d) => c.consoleService(d)),
  );
  withData(mom.command("events").description("list scheduled events (next fire time) and the invalid and missed ones").argument("[dataDir]", "data directory")).action(
    async (dataDir: string | undefined, o: { data?: string }) => print(await withCommands(dir(o, dataDir), (c, d) => c.events(d))),
  );
  withData(mom.command("ingress").description("the ingress service of one adapter from config.json").argument("<adapter>", "adapter name in config.json").argument("[dataDir]", "data directory")).action(
    async (adapter: string, dataDir: string | undefined, o: { data?: string }) => withCommands(dir(o, dataDir), (c, d) => c.ingress(adapter, d)),
  );
  withData(
    mom.command("doctor").description("check config, NATS + JetStream, the model (one tiny real call), workspace, tools and sandbox").argument("[dataDir]", "data directory"),
  ).action(async (dataDir: string | undefined, o: { data?: string }) => {
    const { formatChecks, runDoctor } = await import("./doctor.js");
    const checks = await runDoctor(dataDirOf(o, dataDir));
    print(formatChecks(checks));
    exitCode = checks.some((c) => !c.ok && !c.optional) ? 1 : 0;
  });
  withData(
    mom
      .command("receipts")
      .description("print a channel's tool-call receipts")
      .argument("<adapter/channel>", "qualified channel id, e.g. cli/local")
      .argument("[dataDir]", "data directory")
      .option("--run <id>", "only this run"),
  ).action(async (qualified: string, dataDir: string | undefined, o: { run?: string; data?: string }) => {
    channelArg(qualified);
    const data = dir(o, dataDir);
    const { receiptsTrail } = await import("./receipts-command.js");
    print(await receiptsTrail(qualified, data, o.run));
  });
  withData(
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
      .option("--workspace <dir>", "with --redrive: the scratch dir, outside the data dir (default: a new temporary dir)"),
  ).action(async (qualified: string, o: Record<string, unknown> & { data?: string }) => {
    channelArg(qualified);
    const data = dir(o);
    const { replayCommand } = await import("./replay-command.js");
    exitCode = await replayCommand(qualified, { ...o, data }, print);
  });
  withData(
    mom
      .command("tail")
      .description("a live, readable view of the bus: in, out, ctl, receipts, dead letters (follows the data dir's `mom up`)")
      .argument("[adapter[/channel]]", "only this adapter or channel")
      .option("--json", "one JSON object per line"),
  ).action(async (target: string | undefined, o: { json?: boolean; data?: string }) => {
    const data = dir(o);
    const { tailCommand } = await import("./tail-command.js");
    return tailCommand(target, { ...o, data }, print);
  });
  withData(
    mom
      .command("init")
      .description("set mom up: the model (provider and key or Claude setup-token, or an OpenAI-compatible URL such as Ollama's, checked live) and the chat platforms; writes config.json, models.json, auth-profiles.json")
      .option("--provider <name>", "anthropic, openai, … (pi-ai's providers), or the name of a custom provider given with --base-url")
      .option("--base-url <url>", "an OpenAI-compatible endpoint, e.g. http://localhost:11434/v1 (Ollama)")
      .option("--model <id>", "the model id")
      .option("--api-key <key>", "the API key (stored in auth-profiles.json, or models.json for a custom endpoint)")
      .option("--setup-token <token>", "a Claude subscription token from `claude setup-token` (anthropic)")
      .option("--cost <input,output>", "a custom model's prices, USD per million tokens (without them usage shows $?)")
      .option("--adapters <list>", "chat platforms besides the terminal: slack, discord, telegram, whatsapp (comma-separated), or none")
      .option("--whatsapp-phone-number-id <id>", "with --adapters whatsapp")
      .option("--no-check", "do not make the one-word model call before writing")
      .option("-y, --yes", "ask nothing: defaults where there are some, else an error naming the flag")
      .option("--force", "replace an existing config.json"),
  ).action(async (o: Omit<import("./init-command.js").InitOptions, "data"> & { data?: string }) => {
    const { initCommand } = await import("./init-command.js");
    exitCode = await initCommand({ ...o, data: dataDirOf(o) }, { input: process.stdin, write: (t) => void process.stdout.write(t), tty: process.stdin.isTTY === true });
  });
  withData(
    mom
      .command("logs")
      .description("the log `mom up` writes (data/logs/mom.log), pretty-printed; filter by service, channel and level; -f follows")
      .option("-s, --service <name>", "only this service (agent-runner, scheduler, mom, ingress-cli, ingress-<adapter>; `ingress` for every ingress)")
      .option("-c, --channel <adapter[/channel]>", "only lines about this channel, or every channel of this adapter")
      .option("-l, --level <level>", "this level and above: trace, debug, info, warn, error, fatal")
      .option("-n, --lines <n>", "only the last n matching lines of what is there")
      .option("-f, --follow", "keep printing what is appended, until Ctrl-C")
      .option("--json", "the JSON lines as written, filtered"),
  ).action(async (o: { data?: string; service?: string; channel?: string; level?: string; lines?: string; follow?: boolean; json?: boolean }) => {
    const { logsCommand } = await import("./logs-command.js");
    exitCode = await logsCommand({ ...o, data: dir(o), color: process.stdout.isTTY === true }, (t) => void process.stdout.write(t));
  });
  registerAuth(mom, {
    print,
    terminal: { input: process.stdin, write: (t) => void process.stdout.write(t) },
    setExitCode: (code) => (exitCode = code),
  });
  registerUsage(mom, print);
  registerTools(mom, print);
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
    // A service `mom up` started (an ingress) tells it why, for its terminal; its stderr goes to the log.
    if (process.send && process.connected) {
      setTimeout(() => process.exit(1), 1000);
      process.send({ fatal: message }, () => process.exit(1));
    } else {
      process.exit(1);
    }
  },
);
