import Type, { type Static } from "typebox";
import { ADAPTER_NAME_PATTERN, SpendAmount } from "@mom/contracts";
import { MODEL_REF_PATTERN } from "./model-ref.js";

// `expected` is our own annotation: the phrase error messages use instead of a raw regex.
// Every object is closed (additionalProperties: false) so a misspelt key is an error, not a no-op.
const closed = { additionalProperties: false } as const;
const positiveInt = (description: string) => Type.Integer({ minimum: 1, description });

export const ThinkingLevel = Type.Union([
  Type.Literal("off"),
  Type.Literal("minimal"),
  Type.Literal("low"),
  Type.Literal("medium"),
  Type.Literal("high"),
  Type.Literal("xhigh"),
]);
export type ThinkingLevel = Static<typeof ThinkingLevel>;

export const LogLevel = Type.Union([
  Type.Literal("fatal"),
  Type.Literal("error"),
  Type.Literal("warn"),
  Type.Literal("info"),
  Type.Literal("debug"),
  Type.Literal("trace"),
  Type.Literal("silent"),
]);
export type LogLevel = Static<typeof LogLevel>;

/** Retention of one stream; what is unset comes from `nats.streams`. */
export const StreamRetentionConfig = Type.Object(
  {
    maxAgeHours: Type.Optional(positiveInt("How long this stream keeps messages")),
    maxBytes: Type.Optional(positiveInt("Bytes this stream keeps at most (the oldest messages go first)")),
  },
  closed,
);
export type StreamRetentionConfig = Static<typeof StreamRetentionConfig>;

export const StreamsConfig = Type.Object(
  {
    maxAgeHours: positiveInt("How long JetStream keeps messages"),
    maxBytes: Type.Optional(positiveInt("Bytes each stream keeps at most (the oldest messages go first); unset: no limit")),
    duplicateWindowSeconds: positiveInt("Window in which a repeated Nats-Msg-Id is dropped"),
    replicas: Type.Integer({ minimum: 1, maximum: 5, description: "JetStream replicas per stream (3 on a 3-node cluster)" }),
    byStream: Type.Optional(
      Type.Object(
        {
          in: Type.Optional(StreamRetentionConfig),
          out: Type.Optional(StreamRetentionConfig),
          ctl: Type.Optional(StreamRetentionConfig),
          receipts: Type.Optional(StreamRetentionConfig),
          dlq: Type.Optional(StreamRetentionConfig),
        },
        { ...closed, description: "Retention per stream (in, out, ctl, receipts, dlq), overriding maxAgeHours / maxBytes" },
      ),
    ),
  },
  closed,
);

export const NatsConfig = Type.Object(
  {
    url: Type.String({ minLength: 1, expected: "a NATS server URL like nats://127.0.0.1:4222", description: "env NATS_URL overrides" }),
    namespace: Type.String({
      pattern: "^[a-z][a-z0-9-]*$",
      expected: "a lower-case name like mom (letters, digits, '-'; starts with a letter)",
      description: "Prefix of every subject and stream; lets several deployments share one NATS",
    }),
    streams: StreamsConfig,
  },
  closed,
);

const userIds = Type.Array(Type.String({ minLength: 1 }), { expected: "an array of user ids" });
// What a mention does while the channel's run is still going: answer after it (queue), inject it
// into the running run (steer), or tell the sender mom is busy (reject). `stop` always aborts.
export const BusyMode = Type.Union([Type.Literal("queue"), Type.Literal("steer"), Type.Literal("reject")]);
export type BusyMode = Static<typeof BusyMode>;

// Access control and behaviour shared by every adapter type.
const adapterAccess = {
  busy: Type.Optional(BusyMode),
  admins: Type.Optional(userIds),
  dm: Type.Optional(
    Type.Union([Type.Literal("everyone"), Type.Literal("none"), userIds], {
      expected: '"everyone", "none" or an array of user ids',
    }),
  ),
};

export const CliAdapterConfig = Type.Object({ type: Type.Literal("cli"), ...adapterAccess }, closed);
export type CliAdapterConfig = Static<typeof CliAdapterConfig>;

// Tokens may be written literally or as "env:NAME" (read from that environment variable when the
// config loads), so config.json can be checked in or mounted without secrets in it.
const token = (description: string) => Type.String({ minLength: 1, description: `${description}; literal or "env:NAME"` });
// For tests and proxies: where the platform's HTTP API lives.
const apiUrl = Type.Optional(Type.String({ minLength: 1, description: "Base URL of the platform API (default: the platform's own)" }));

export const SlackAdapterConfig = Type.Object(
  { type: Type.Literal("slack"), botToken: token("Bot token (xoxb-…)"), appToken: token("App-level token for Socket Mode (xapp-…)"), apiUrl, ...adapterAccess },
  closed,
);
export type SlackAdapterConfig = Static<typeof SlackAdapterConfig>;

export const DiscordAdapterConfig = Type.Object({ type: Type.Literal("discord"), botToken: token("Bot token"), apiUrl, ...adapterAccess }, closed);
export type DiscordAdapterConfig = Static<typeof DiscordAdapterConfig>;

export const TelegramAdapterConfig = Type.Object(
  {
    type: Type.Literal("telegram"),
    botToken: token("Bot token from @BotFather (123456:ABC-…)"),
    webhookUrl: Type.Optional(Type.String({ pattern: "^https?://", expected: "the public https:// URL Telegram posts updates to", description: "Webhook mode instead of long polling" })),
    webhookSecret: Type.Optional(token("Secret Telegram sends with every webhook post (X-Telegram-Bot-Api-Secret-Token); 1-256 of A-Z a-z 0-9 _ -")),
    webhookPort: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535, description: "Port of the webhook HTTP server (default 8080)" })),
    apiUrl,
    ...adapterAccess,
  },
  closed,
);
export type TelegramAdapterConfig = Static<typeof TelegramAdapterConfig>;

export const WhatsAppAdapterConfig = Type.Object(
  {
    type: Type.Literal("whatsapp"),
    accessToken: token("System-user access token of the Meta app (permanent), for the Graph API"),
    appSecret: token("App secret of the Meta app: webhook posts are signed with it (X-Hub-Signature-256)"),
    verifyToken: token("Any secret string; Meta sends it back when the webhook URL is verified"),
    phoneNumberId: Type.String({ minLength: 1, pattern: "^[0-9]+$", expected: "the phone number id (digits) from WhatsApp > API Setup" }),
    graphVersion: Type.Optional(Type.String({ pattern: "^v[0-9]+\\.[0-9]+$", expected: 'a Graph API version such as "v21.0"' })),
    webhookPort: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535, description: "Port of the webhook HTTP server (default 8080)" })),
    apiUrl,
    ...adapterAccess,
  },
  closed,
);
export type WhatsAppAdapterConfig = Static<typeof WhatsAppAdapterConfig>;

/**
 * A platform whose ingress mom does not ship: deployed on its own (docs/ingress-sdk.md), it
 * publishes and draws this adapter's subjects. mom needs only the settings every adapter has;
 * `settings` is the ingress's own, validated by the ingress (mom passes it through untouched).
 */
export const ExternalAdapterConfig = Type.Object(
  {
    type: Type.Literal("external"),
    platform: Type.String({ pattern: "^[a-z][a-z0-9-]*$", expected: 'the platform\'s name in lower case, e.g. "matrix"', description: "Which platform the ingress serves (for logs and docs)" }),
    approvalTextLimit: Type.Optional(
      Type.Integer({ minimum: 200, maximum: 100_000, description: "How many characters of a tool call's arguments the ingress's approval prompt shows whole (default: the smallest of the built-in adapters)" }),
    ),
    settings: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: "The ingress's own settings; it validates them" })),
    ...adapterAccess,
  },
  closed,
);
export type ExternalAdapterConfig = Static<typeof ExternalAdapterConfig>;

/** Discriminated by `type`. */
export const AdapterConfig = Type.Union([CliAdapterConfig, SlackAdapterConfig, DiscordAdapterConfig, TelegramAdapterConfig, WhatsAppAdapterConfig, ExternalAdapterConfig]);
export type AdapterConfig = Static<typeof AdapterConfig>;

const sandboxCommon = {
  env: Type.Optional(
    Type.Record(Type.String({ pattern: "^[A-Za-z_][A-Za-z0-9_]*$" }), Type.String({ description: 'literal or "env:NAME"' }), {
      ...closed,
      keyName: "variable name",
      keyExpected: "a shell variable name like GIT_AUTHOR_NAME",
      description: "Variables every command gets on top of PATH, HOME and LANG (nothing else of the runner's environment)",
    }),
  ),
  shared: Type.Optional(
    Type.Array(Type.String({ minLength: 1 }), {
      expected: 'an array of workspace-relative paths like "MEMORY.md", "skills"',
      description: 'What every channel sees besides its own directory (default "MEMORY.md", "skills"): read-only, writable only by sharedWriters',
    }),
  ),
  sharedWriters: Type.Optional(
    Type.Array(Type.String({ pattern: "^[a-z0-9-]+/.+$", expected: 'a qualified channel id "<adapter>/<channelId>", e.g. "slack/C0123"' }), {
      expected: 'an array of qualified channel ids like "slack/C0123"',
      description: "Channels trusted to write the shared paths (global memory, skills); every other channel sees them read-only",
    }),
  ),
  maxOutputBytes: Type.Optional(positiveInt("Most output one command may print (more stops it), and the largest file read returns")),
  maxProcesses: Type.Optional(positiveInt("Most processes one command may have at once, where a pids cgroup can be made")),
  tmpMb: Type.Optional(positiveInt("bwrap: size of each command's private /tmp (a tmpfs), in MiB (default 256)")),
  maxFileMb: Type.Optional(positiveInt("bwrap/host: the largest file a command may write, in MiB (RLIMIT_FSIZE; default 1024)")),
  diskMb: Type.Optional(positiveInt("bwrap/host: the most a channel's directory may hold, in MiB; a command that grows it past this is stopped (default 2048)")),
  uid: Type.Optional(Type.Integer({ minimum: 1, maximum: 4294967294, description: "bwrap with a root runner: the uid commands and file tools run as (default 10001)" })),
  gid: Type.Optional(Type.Integer({ minimum: 1, maximum: 4294967294, description: "bwrap with a root runner: the gid commands run as (default: the uid)" })),
};
const memoryMb = Type.Optional(positiveInt("bwrap/host: memory of each command, in MiB (a cgroup, else RLIMIT_DATA per process; default 1024)"));

/**
 * Where tools run (docs/sandbox.md), discriminated by `type`: `auto` (bwrap where bubblewrap
 * works, else host), `bwrap`, `docker`, `host` (development only).
 */
export const SandboxConfig = Type.Union([
  Type.Object({ type: Type.Literal("auto"), network: Type.Optional(Type.Boolean({ description: "bwrap: commands get the host's network" })), memoryMb, ...sandboxCommon }, closed),
  Type.Object({ type: Type.Literal("bwrap"), network: Type.Optional(Type.Boolean({ description: "Commands get the host's network" })), memoryMb, ...sandboxCommon }, closed),
  Type.Object({ type: Type.Literal("host"), memoryMb, ...sandboxCommon }, closed),
  Type.Object(
    {
      type: Type.Literal("docker"),
      image: Type.String({ minLength: 1, description: "Image of the channels' containers; must have bash" }),
      socketPath: Type.Optional(Type.String({ minLength: 1, description: "Docker engine socket (default /var/run/docker.sock)" })),
      network: Type.Optional(Type.Boolean({ description: "Containers get the host's network (default none)" })),
      memoryMb: Type.Optional(positiveInt("Memory of each channel's container, in MiB")),
      cpus: Type.Optional(Type.Number({ exclusiveMinimum: 0, description: "CPUs of each channel's container" })),
      scope: Type.Optional(
        Type.Union([Type.Literal("channel"), Type.Literal("workspace")], {
          description: 'One container per channel (default; channels cannot see each other), or one for the whole workspace (channels share it and can read and write each other\'s directories)',
        }),
      ),
      ...sandboxCommon,
    },
    closed,
  ),
]);
export type SandboxConfig = Static<typeof SandboxConfig>;

/** Background jobs (the `process` tool, docs/tools.md#background-jobs-process): bounds per channel. */
export const JobsConfig = Type.Object(
  {
    maxPerChannel: positiveInt("Background jobs one channel may have running at once"),
    maxRuntimeMinutes: positiveInt("A background job still running after this long is stopped"),
    outputKeptBytes: positiveInt("The last bytes of a job's output the runner keeps for `process poll` and the report"),
  },
  closed,
);

export const RunnerConfig = Type.Object(
  {
    idleEvictMinutes: positiveInt("Idle time after which a channel's agent session is unloaded"),
    maxConcurrentRuns: positiveInt("Runs one runner replica executes at once"),
    runTimeoutMinutes: positiveInt("A run still going after this long is aborted"),
    leaseSeconds: positiveInt("A runner not heard from for this long is dead and its channels move to the others (docs/scaling.md)"),
    shutdownGraceSeconds: Type.Integer({ minimum: 0, description: "On SIGTERM, how long running runs may finish before they are handed over mid-run" }),
    maxCrashes: positiveInt("Attempts at one message that may end with the runner dying before the message is dead-lettered"),
    publishRetrySeconds: positiveInt("How long an outbound event (or a model call's usage record) is retried through a NATS outage before the run counts as failed"),
    listChannels: Type.Boolean({ description: "Every system prompt lists every channel mom knows (their ids reach every channel); default false" }),
    jobs: JobsConfig,
  },
  closed,
);

export const LogConfig = Type.Object({ level: LogLevel }, closed);

/** docs/observability.md */
export const ObservabilityConfig = Type.Object(
  {
    httpPort: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 65535, description: "Port of /healthz, /readyz and /metrics (env MOM_HTTP_PORT overrides); unset: no HTTP server" }),
    ),
  },
  closed,
);

export const AttachmentsConfig = Type.Object(
  {
    maxBytes: positiveInt("Largest file an ingress may hand to mom, and the attach tool may send"),
    downloadSeconds: positiveInt("How long an ingress waits for one file someone sent to download; one that takes longer reaches mom as not available (default 120)"),
  },
  closed,
);

/** The web_fetch tool: what the runner may fetch for the agent (docs/tools.md#web-fetch-web_fetch). */
export const WebConfig = Type.Object(
  {
    allow: Type.Array(Type.String({ minLength: 1 }), { description: 'Host globs web_fetch may reach, e.g. ["docs.python.org", "*.wikipedia.org"]; default ["*"] (any public host)' }),
    deny: Type.Array(Type.String({ minLength: 1 }), { description: "Host globs never fetched; deny wins" }),
    privateRanges: Type.Array(Type.String({ minLength: 1 }), {
      description: 'Private, loopback or link-local ranges web_fetch may reach anyway, as CIDRs, e.g. ["10.1.2.0/24"]; default none',
    }),
    maxBytes: positiveInt("Largest response body read; the rest is cut"),
    maxChars: positiveInt("Characters of page text given to the model"),
    timeoutSeconds: positiveInt("Whole fetch, redirects included"),
    maxRedirects: Type.Integer({ minimum: 0, maximum: 20, description: "Redirects followed, each checked like the first URL" }),
  },
  closed,
);

/** Sub-agents started with the spawn tool: budgets the model may ask for (docs/tools.md#sub-agents-spawn). */
export const SpawnConfig = Type.Object(
  {
    tokens: positiveInt("A sub-agent's token budget when the model names none (input and output tokens of all its model calls)"),
    maxTokens: positiveInt("The largest token budget the model may give a sub-agent; a larger one is lowered to this"),
    seconds: positiveInt("A sub-agent's time budget when the model names none"),
    maxSeconds: positiveInt("The longest time budget the model may give a sub-agent; a longer one is lowered to this"),
    maxPerRun: positiveInt("Sub-agents one run may start"),
  },
  closed,
);
export type SpawnConfig = Static<typeof SpawnConfig>;

/** `<adapter>/<channelId>`, or `<adapter>/*` for every channel of an adapter. */
const sendChannel = Type.String({ pattern: "^[a-z0-9-]+/.+$", expected: '"<adapter>/<channelId>" or "<adapter>/*"' });

/** One permission of the send tool: runs of `from` may post into the channels of `to`. */
export const SendRoute = Type.Object(
  {
    from: sendChannel,
    to: Type.Array(sendChannel, { minItems: 1, description: "Channels runs of `from` may post into" }),
  },
  closed,
);
export type SendRoute = Static<typeof SendRoute>;

/** The send tool: which channel may post into which (docs/tools.md#messages-to-other-channels-send); none by default. */
export const SendConfig = Type.Object(
  {
    routes: Type.Array(SendRoute, { description: "Where each channel may post; no route, no send tool" }),
    timeoutSeconds: positiveInt("How long send waits for the target's ingress to say the platform took the message"),
  },
  closed,
);
export type SendConfig = Static<typeof SendConfig>;

/** The scheduler service: workspace/events/*.json (docs/scheduler.md). */
export const SchedulerConfig = Type.Object(
  {
    graceMinutes: Type.Integer({ minimum: 0, description: "A one-shot at most this late (scheduler down) still fires, marked late; older ones go to events/missed/" }),
    maxQueuedPerChannel: positiveInt("Event files one channel may have at once; more are moved to events/invalid/"),
    maxPerMinutePerChannel: positiveInt("Scheduler messages one channel gets in any 60 seconds; more wait (periodic ticks are skipped)"),
    watch: Type.Union([Type.Literal("events"), Type.Literal("poll")], {
      expected: '"events" (file notifications plus polling) or "poll" (polling only)',
    }),
    pollIntervalMs: Type.Integer({ minimum: 100, description: "How often events/ is read again (both modes; NFS and other shared volumes rely on it)" }),
  },
  closed,
);
export type SchedulerConfig = Static<typeof SchedulerConfig>;

const globs = Type.Array(Type.String({ minLength: 1 }), { expected: 'an array of tool id globs like "bash", "github.*", "!github.*.delete"' });
export const PolicyLayerConfig = Type.Object({ allow: Type.Optional(globs), deny: Type.Optional(globs) }, closed);
export type PolicyLayerConfig = Static<typeof PolicyLayerConfig>;

/**
 * Which tools may run and which wait for a person. Layers apply in order global → adapters →
 * channels → providers → sandbox: a later layer can only narrow, deny wins.
 */
export const PolicyConfig = Type.Object(
  {
    tools: PolicyLayerConfig,
    adapters: Type.Record(Type.String(), PolicyLayerConfig),
    channels: Type.Record(Type.String(), PolicyLayerConfig),
    providers: Type.Record(Type.String(), PolicyLayerConfig),
    sandbox: PolicyLayerConfig,
    ask: globs,
    autoAllow: globs,
    approvalTimeoutSeconds: positiveInt("No decision within this time means deny"),
    requesterMayApprove: Type.Boolean({ description: "The person whose message started the run may approve its calls too (always true for cli adapters)" }),
  },
  closed,
);
export type PolicyConfig = Static<typeof PolicyConfig>;

/** Custom host tools: workspace/tools/<name>/index.ts always; plus an operator-managed dir. */
export const ToolsConfig = Type.Object(
  {
    globalDir: Type.Optional(Type.String({ minLength: 1, description: "A directory of custom tools shared by every workspace (loaded before workspace/tools)" })),
    settings: Type.Record(Type.String({ pattern: "^[a-z0-9_-]+$" }), Type.Object({}, { additionalProperties: true }), {
      description: "Each integration's settings by name (integrations/README.md); secrets in them are references: env:NAME, file:PATH, profile:<id>",
    }),
  },
  closed,
);

/** Per qualified channel (`<adapter>/<channelId>`): overrides of the global model settings. */
export const ChannelSettings = Type.Object(
  {
    model: Type.Optional(Type.String({ pattern: MODEL_REF_PATTERN, expected: '"<provider>/<modelId>", e.g. "anthropic/claude-sonnet-4-5"' })),
    thinkingLevel: Type.Optional(ThinkingLevel),
    authProfile: Type.Optional(Type.String({ minLength: 1, description: "Auth profile id (data/auth-profiles.json) this channel uses first" })),
  },
  closed,
);
export type ChannelSettings = Static<typeof ChannelSettings>;

const channels = Type.Record(Type.String({ pattern: "^[a-z0-9-]+/.+$" }), ChannelSettings, {
  ...closed,
  keyName: "qualified channel id",
  keyExpected: '"<adapter>/<channelId>"',
});

const adapters = Type.Record(Type.String({ pattern: ADAPTER_NAME_PATTERN.source }), AdapterConfig, {
  ...closed,
  keyName: "adapter name",
  keyExpected: "lower-case letters, digits and '-' ([a-z0-9-]+)",
});

/** Which auth profiles (data/auth-profiles.json) a provider uses, first to last (docs/auth.md). */
export const AuthConfig = Type.Object(
  {
    order: Type.Record(Type.String({ minLength: 1 }), Type.Array(Type.String({ minLength: 1 }), { expected: "an array of auth profile ids" }), {
      ...closed,
      keyName: "provider",
      keyExpected: 'a pi-ai provider name like "anthropic"',
    }),
  },
  closed,
);
export type AuthConfig = Static<typeof AuthConfig>;

/** Calendar periods in UTC: the day and the month a model call falls in. SpendAmount is a contract
 * (libs/contracts): the web console changes a budget on the bus too. */
export const SpendBudget = Type.Object({ day: Type.Optional(SpendAmount), month: Type.Optional(SpendAmount) }, closed);
export type SpendBudget = Static<typeof SpendBudget>;

/** Spend limits, checked before every model call and recorded after it (docs/auth.md). */
export const LimitsConfig = Type.Object(
  {
    global: Type.Optional(SpendBudget),
    adapters: Type.Optional(
      Type.Record(Type.String({ pattern: ADAPTER_NAME_PATTERN.source }), SpendBudget, { ...closed, keyName: "adapter name", keyExpected: "lower-case letters, digits and '-' ([a-z0-9-]+)" }),
    ),
    channels: Type.Optional(Type.Record(Type.String({ pattern: "^[a-z0-9-]+/.+$" }), SpendBudget, { ...closed, keyName: "qualified channel id", keyExpected: '"<adapter>/<channelId>"' })),
  },
  closed,
);
export type LimitsConfig = Static<typeof LimitsConfig>;

/** One person who may sign in to the web console (docs/console.md). */
export const ConsoleUser = Type.Object(
  {
    role: Type.Union([Type.Literal("viewer"), Type.Literal("approver")], { expected: '"viewer" (sees everything, changes nothing) or "approver" (may also make changes: approvals, redrives, dead letters, spend limits, tools)' }),
    token: Type.Optional(token("Login token for the console's sign-in page (at least 16 characters; small setups without an identity proxy)")),
    as: Type.Optional(
      Type.Record(Type.String({ pattern: ADAPTER_NAME_PATTERN.source }), Type.String({ minLength: 1 }), {
        ...closed,
        keyName: "adapter name",
        keyExpected: "an adapter name from adapters",
        description: "This person's user id on each adapter: approval decisions are made as that id, and the runner accepts them only from the adapter's approvers",
      }),
    ),
  },
  closed,
);
export type ConsoleUser = Static<typeof ConsoleUser>;

/** The web console (`mom console`, docs/console.md). */
export const ConsoleConfig = Type.Object(
  {
    port: Type.Integer({ minimum: 0, maximum: 65535, description: "HTTP port of the console (env MOM_CONSOLE_PORT overrides)" }),
    host: Type.String({ minLength: 1, description: "Address the console listens on; default 127.0.0.1 (put a reverse proxy in front to reach it from elsewhere)" }),
    publicUrl: Type.Optional(Type.String({ pattern: "^https?://", expected: "an http(s):// URL", description: "Where people reach the console (cookies are Secure when it is https)" })),
    identityHeader: Type.Optional(
      Type.String({
        pattern: "^[A-Za-z0-9-]+$",
        expected: "an HTTP header name like X-Auth-Request-User",
        description: "Header an OIDC/OAuth2 reverse proxy sets to the signed-in user; honoured only when set, and only from console's trustedProxies",
      }),
    ),
    trustedProxies: Type.Optional(
      Type.Array(Type.String({ minLength: 1 }), {
        description:
          'Where the identity proxy connects from, as CIDRs (e.g. ["10.42.0.0/16"]): identityHeader is honoured only on connections from these; default loopback only ("127.0.0.0/8", "::1/128")',
      }),
    ),
    users: Type.Record(Type.String({ pattern: "^[A-Za-z0-9._@+-]+$" }), ConsoleUser, {
      ...closed,
      keyName: "console user",
      keyExpected: "a user name as the identity header or sign-in gives it (letters, digits, . _ @ + -)",
    }),
  },
  closed,
);
export type ConsoleConfig = Static<typeof ConsoleConfig>;

/** The configuration services see: every default filled in. */
export const MomConfig = Type.Object(
  {
    model: Type.String({ pattern: MODEL_REF_PATTERN, expected: '"<provider>/<modelId>", e.g. "anthropic/claude-sonnet-4-5"' }),
    thinkingLevel: ThinkingLevel,
    nats: NatsConfig,
    adapters,
    sandbox: SandboxConfig,
    runner: RunnerConfig,
    attachments: AttachmentsConfig,
    scheduler: SchedulerConfig,
    channels,
    policy: PolicyConfig,
    tools: ToolsConfig,
    web: WebConfig,
    spawn: SpawnConfig,
    send: SendConfig,
    auth: AuthConfig,
    limits: LimitsConfig,
    log: LogConfig,
    observability: ObservabilityConfig,
    console: ConsoleConfig,
  },
  closed,
);
export type MomConfig = Static<typeof MomConfig>;

/** What `data/config.json` may contain: the same shape with every default-bearing key optional. */
export const MomConfigFile = Type.Partial(
  Type.Object({
    ...MomConfig.properties,
    nats: Type.Partial(Type.Object({ ...NatsConfig.properties, streams: Type.Partial(StreamsConfig, closed) }), closed),
    runner: Type.Partial(Type.Object({ ...RunnerConfig.properties, jobs: Type.Partial(JobsConfig, closed) }), closed),
    attachments: Type.Partial(AttachmentsConfig, closed),
    scheduler: Type.Partial(SchedulerConfig, closed),
    policy: Type.Partial(PolicyConfig, closed),
    tools: Type.Partial(ToolsConfig, closed),
    web: Type.Partial(WebConfig, closed),
    spawn: Type.Partial(SpawnConfig, closed),
    send: Type.Partial(SendConfig, closed),
    auth: Type.Partial(AuthConfig, closed),
    log: Type.Partial(LogConfig, closed),
    observability: Type.Partial(ObservabilityConfig, closed),
    console: Type.Partial(ConsoleConfig, closed),
  }),
  closed,
);
export type MomConfigFile = Static<typeof MomConfigFile>;
