import { configuredModels, isNewSessionCommand, isStopCommand, type LoadedConfig, parseModelRef } from "@mom/ingress-sdk";

/** What the terminal chat's commands say; typed lines that are none of these go to mom. */
export const HELP_TEXT = [
  "commands:",
  "  /help                  this list",
  "  /new                   start a fresh session: mom forgets this chat's conversation so far",
  "                         (log.jsonl keeps it; the old context is archived as context-<time>.jsonl)",
  "  /model                 the model this chat uses and the ones configured",
  "  /model <name>          how to switch this chat to another model",
  "  /attach <path> [text]  send a file with a message",
  "  stop                   abort the running answer and cancel the messages queued behind it",
  "  stop jobs              kill this chat's background jobs (a plain stop leaves them running)",
  "  y / n                  answer a pending approval prompt",
  "  Ctrl-D                 quit (Ctrl-C stops mom)",
].join("\n");

export type ChatCommand =
  | { kind: "help" }
  | { kind: "new" }
  | { kind: "model"; name?: string }
  | { kind: "stop" }
  | { kind: "unknown"; name: string };

/**
 * A typed line that is a command of the terminal chat, or undefined for a message to mom.
 * `/attach` is parsed where files are (cli-files.ts). A path such as `/etc/hosts is it there?`
 * is no command: commands are one lowercase word after the slash.
 */
export function parseChatCommand(line: string): ChatCommand | undefined {
  const text = line.trim();
  if (isStopCommand(text)) return { kind: "stop" };
  if (isNewSessionCommand(text)) return { kind: "new" };
  const m = /^\/([a-z]+)(?:\s+(.*))?$/.exec(text);
  if (!m || m[1] === "attach") return undefined;
  if (m[1] === "help") return { kind: "help" };
  if (m[1] === "model") return { kind: "model", ...(m[2]?.trim() && { name: m[2].trim() }) };
  return { kind: "unknown", name: m[1]! };
}

/** The models a chat may name: what config.json says for it, and what is configured. */
export interface ChatModels {
  /** `<provider>/<modelId>` this chat runs on, per config.json. */
  model: string;
  /** Where that comes from: `channels["cli/local"].model` or `model`. */
  source: string;
  /** The config.json key that sets this chat's model. */
  channelKey: string;
  /** config.json's path, for the switch instructions. */
  configFile: string;
  /** Models named in config.json and defined in models.json, `<provider>/<modelId>`. */
  configured: string[];
}

/** The chat's model settings from the loaded config (and models.json's custom models). */
export function chatModels(loaded: LoadedConfig, qualifiedId: string): ChatModels {
  const { config, paths } = loaded;
  const own = config.channels[qualifiedId]?.model;
  const channelKey = `channels["${qualifiedId}"].model`;
  return { model: own ?? config.model, source: own ? channelKey : "model", channelKey, configFile: paths.configFile, configured: configuredModels(loaded).sort() };
}

/** What `/model` prints. `lastUsed` is the model the last run in this chat reported. */
export function modelText(m: ChatModels | undefined, lastUsed: string | undefined): string {
  if (!m) return lastUsed ? `model: ${lastUsed} (the last run's)` : "model: not known here (no run yet, and no config.json given to this chat)";
  const last = lastUsed && lastUsed !== m.model ? [`  the last run used ${lastUsed}`] : [];
  return [`model: ${m.model} (config.json ${m.source})`, ...last, `configured: ${m.configured.join(", ")}`, "/model <name> says how to switch"].join("\n");
}

/**
 * What `/model <name>` prints. The runner reads config.json (and resolves every model in it) when
 * it starts, so a chat's model is switched in config.json, not at run time: this says exactly what
 * to set, after checking the name.
 */
export function switchModelText(m: ChatModels | undefined, name: string): string {
  if (!m) return "✗ this chat has no config.json to switch models in";
  const matches = name.includes("/") ? m.configured.filter((r) => r === name) : m.configured.filter((r) => r.endsWith(`/${name}`));
  let ref = matches.length === 1 ? matches[0]! : undefined;
  if (!ref && name.includes("/")) {
    try {
      parseModelRef(name);
      ref = name; // a built-in provider's model (anthropic/…, openai/…): the runner checks it when it starts
    } catch {
      // not <provider>/<modelId>
    }
  }
  if (!ref) {
    const why = matches.length > 1 ? `"${name}" is ambiguous (${matches.join(", ")})` : `unknown model "${name}"`;
    return `✗ ${why}; configured: ${m.configured.join(", ")}`;
  }
  if (ref === m.model) return `model: already ${ref}`;
  return [
    `✗ mom cannot switch this chat's model while it runs: the runner reads config.json when it starts.`,
    `  to use ${ref} here, set ${m.channelKey} to "${ref}" in ${m.configFile} and restart mom`,
  ].join("\n");
}
