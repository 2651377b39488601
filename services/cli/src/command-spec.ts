import { Command } from "commander";
import { withData } from "./data-dir.js";

// The commands with sub-commands and options of their own, declared with the same parser as the
// rest (commander). Their implementations load only when they run: `--help` stays fast.

export interface AuthIo {
  print: (text: string) => void;
  /** The dialogue of `auth add` (a pasted secret). */
  terminal: import("./auth-command.js").Terminal;
  setExitCode: (code: number) => void;
}

/** `mom auth list | add | remove | order`. */
export function registerAuth(parent: Command, io: AuthIo): Command {
  const auth = parent.command("auth").description("model credentials: auth profiles, their order, cooldowns (list | add | remove | order)");
  const run = async (sub: "list" | "add" | "remove" | "order", args: string[], o: Record<string, unknown>) => {
    const { authRun } = await import("./auth-command.js");
    io.setExitCode(await authRun(sub, args, o, io.terminal));
  };
  withData(auth.command("list").description("profiles per provider in the order runners use them (secrets masked), cooldowns")).action((o) => run("list", [], o));
  withData(
    auth
      .command("add")
      .description("add anthropic --setup-token: a Claude subscription token from `claude setup-token` (becomes anthropic's first profile); add <provider> --api-key: an API key, pasted or --secret env:NAME|file:PATH")
      .argument("<provider>", "e.g. anthropic, openai")
      .option("--setup-token", "a Claude subscription token (anthropic)")
      .option("--api-key", "an API key")
      .option("--id <id>", "the profile id (default: <provider>-key, anthropic-subscription)")
      .option("--secret <ref>", "env:NAME or file:PATH instead of pasting the key"),
  ).action((provider: string, o) => run("add", [provider], o));
  withData(auth.command("remove").description("deletes a profile (and its place in auth.order and channel pins)").argument("<id>", "profile id")).action((id: string, o) => run("remove", [id], o));
  withData(
    auth
      .command("order")
      .description("prints, or sets, auth.order.<provider> in config.json")
      .argument("<provider>", "provider")
      .argument("[ids...]", "profile ids in the order to try them"),
  ).action((provider: string, ids: string[], o) => run("order", [provider, ...ids], o));
  return auth;
}

/** `mom usage`. */
export function registerUsage(parent: Command, print: (text: string) => void): Command {
  return withData(
    parent
      .command("usage")
      .description("token and cost totals from the usage ledger, largest cost first")
      .option("--by <grouping>", "channel, adapter or model", "channel")
      .option("--since <date>", "YYYY-MM-DD or an ISO time (default: the start of this month, UTC)"),
  ).action(async (o: { by?: string; since?: string; data?: string }) => {
    const { usageTotals } = await import("./usage-command.js");
    print(await usageTotals(o));
  });
}

/** `mom tools list | approve`. */
export function registerTools(parent: Command, print: (text: string) => void): Command {
  const tools = parent
    .command("tools")
    .description("custom tools: which are approved; approve new or changed ones (list | approve <name>... | approve --all)")
    .addHelpText("after", "\nA workspace tool loads only once approved, and again only after a change is approved; tools of\ntools.globalDir load without approval.");
  const run = async (sub: "list" | "approve", names: string[], o: { data?: string; all?: boolean }) => {
    const { toolsRun } = await import("./tools-command.js");
    print(await toolsRun(sub, names, o));
  };
  withData(tools.command("list", { isDefault: true }).description("the workspace's custom tools: approved, new or changed since approved (and the global dir's)")).action((o) => run("list", [], o));
  withData(
    tools
      .command("approve")
      .description("approves the tool directories workspace/tools/<name> as they are now")
      .argument("[names...]", "tool directories (mom tools list)")
      .option("--all", "every new or changed one"),
  ).action((names: string[], o) => run("approve", names, o));
  return tools;
}
