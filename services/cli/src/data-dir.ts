import { Command, Option } from "commander";
import { statSync } from "node:fs";
import { CommandError } from "./command-error.js";

/**
 * The one rule for naming the data dir, in every command: `-d, --data DIR`, else the MOM_DATA
 * environment variable, else ./data. The commands whose only other arguments come before it (`up`,
 * `runner`, `scheduler`, `events`, `doctor`, `ingress <adapter>`, `receipts <adapter/channel>`)
 * also take it as their last positional argument, as the deployment files do.
 */
export const dataOption = () => new Option("-d, --data <dir>", "data directory (default: $MOM_DATA, else ./data)");

/** Adds `-d, --data` to a command. */
export const withData = (cmd: Command): Command => cmd.addOption(dataOption());

export function dataDirOf(o: { data?: string }, positional?: string, env: NodeJS.ProcessEnv = process.env): string {
  if (positional !== undefined && o.data !== undefined && positional !== o.data) {
    throw new CommandError(`the data dir is given twice (${positional} and --data ${o.data}): give it once`);
  }
  return positional ?? o.data ?? (env.MOM_DATA || "data");
}

/**
 * Commands other than `mom up` work on a data dir that must already be there: a typo must not
 * create a new one (nor pass as an empty configuration).
 */
export function existingDataDir(dir: string): string {
  let isDir = false;
  try {
    isDir = statSync(dir).isDirectory();
  } catch {
    throw new CommandError(`no data dir ${dir} (\`mom up ${dir}\` creates one; dataDir defaults to ./data)`);
  }
  if (!isDir) throw new CommandError(`${dir} is not a directory (expected a data dir)`);
  return dir;
}

/**
 * Commander settings every (sub)command shares: errors end the parse with a CommanderError
 * rather than process.exit, a mistyped command gets "Did you mean …?", and arguments beyond the
 * declared ones are refused with a line saying where the data dir goes.
 */
export function strict(cmd: Command, writeErr: (text: string) => void): Command {
  return cmd
    .exitOverride()
    .showSuggestionAfterError(true)
    .configureOutput({ writeErr })
    .allowExcessArguments(true)
    .hook("preAction", (_parent, action) => {
      const declared = action.registeredArguments;
      if (declared.some((a) => a.variadic)) return;
      const extra = action.args.slice(declared.length);
      if (extra.length) {
        throw new CommandError(`${commandPath(action)}: unexpected argument ${JSON.stringify(extra[0])} (the data dir is given with -d/--data DIR or MOM_DATA; \`${commandPath(action)} --help\` shows the arguments)`);
      }
    });
}

function commandPath(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c; c = c.parent) names.unshift(c.name());
  return names.join(" ");
}
