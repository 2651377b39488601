import type { AssistantMessage } from "@mariozechner/pi-ai";
import type { CredentialPick, ModelAccess } from "@mom/agent";
import { classifyRefusal, CooldownBoard, credentialOrder, isPiAuthRef, oauthAccessToken, ProfilesSource, resolveSecret, type AuthFailureReason } from "@mom/auth";
import type { Bus } from "@mom/bus";
import type { LoadedConfig } from "@mom/config";
import type { ChannelRef, OutboundEventBody, Receipt } from "@mom/contracts";
import type { ChannelStore } from "@mom/store";
import { makeReceipt } from "@mom/tools";
import { hasLimits, LimitOverrides, spendLimitProblem, UsageLedger } from "@mom/usage";
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";

type Model = Parameters<ModelAccess["pick"]>[0];

export interface GuardedChannel {
  ref: ChannelRef;
  key: string;
  store: ChannelStore;
  /** The run in progress: rotations are published into it. */
  currentRun: () => { runId: string; publisher: { emit(e: OutboundEventBody): void } } | undefined;
  /** pi finds a credential of its own for the model (environment, auth.json, models.json apiKey). */
  hasDefault: (model: Model) => boolean;
}

const minutes = (ms: number) => (ms < 90_000 ? `${Math.ceil(ms / 1000)} s` : `${Math.ceil(ms / 60_000)} min`);

/**
 * The runner's side of every model call (docs/auth.md): spend limits from the usage ledger,
 * credentials in the configured order, cooldowns shared with the other replicas, and the record
 * of what each call used. One per runner; `forChannel` gives each channel its ModelAccess.
 */
export class ModelGuard {
  private constructor(
    private readonly loaded: LoadedConfig,
    private readonly bus: Bus,
    private readonly profiles: ProfilesSource,
    private readonly board: CooldownBoard,
    readonly ledger: UsageLedger,
    private readonly log: Logger,
    private readonly now: () => Date,
    /** Budgets changed from the web console (docs/console.md "Spend"); they count when config.json sets limits. */
    private readonly overrides: LimitOverrides | undefined,
  ) {}

  /** `now`: the wall clock the periods of the spend limits are read on (tests move it across midnight). */
  static async open(loaded: LoadedConfig, bus: Bus, log: Logger, opts: { now?: () => Date } = {}): Promise<ModelGuard> {
    const now = opts.now ?? (() => new Date());
    const replicas = loaded.config.nats.streams.replicas;
    const profiles = new ProfilesSource(loaded.paths.authProfilesFile, (err) => log.error({ err: err.message }, "auth profiles not reloaded; keeping the last good ones"));
    const board = await CooldownBoard.open(bus, replicas);
    const ledger = await UsageLedger.open(bus, {
      replicas,
      follow: hasLimits(loaded.config.limits),
      now,
      // A record lost to a NATS outage that a run's events survive would let the limits under-count.
      appendRetryMs: loaded.config.runner.publishRetrySeconds * 1000,
      // Every replica sees the record; the msg-id makes it one dead letter.
      onInvalid: (r, reason) =>
        void bus
          .deadLetter("agent-runner", { subject: r.subject, data: r.text, reason: `usage ledger record not counted: ${reason}`, msgId: `seq-${r.seq}` })
          .catch((err: unknown) => log.error({ err, seq: r.seq }, "invalid usage ledger record could not be dead-lettered")),
    });
    // Made here, by the runners, at start (as every bucket they may create, deploy/nats/auth.conf):
    // the console only opens it. Only where config.json sets limits: the console changes only the
    // budgets the file sets, and a runner without any keeps its start free of a bucket and a watch.
    const overrides = !hasLimits(loaded.config.limits) ? undefined : await LimitOverrides.open(bus, {
      create: true,
      replicas,
      onChange: (key, o, problem) => {
        if (problem) log.warn({ key, problem }, "spend limit override ignored");
        else if (o) log.info({ key, cap: o.cap, setBy: o.setBy, setAt: o.setAt }, o.cap ? "spend limit changed from the console" : "spend limit lifted from the console");
        else log.info({ key }, "spend limit back to config.json");
      },
    });
    return new ModelGuard(loaded, bus, profiles, board, ledger, log, now, overrides);
  }

  /** Records still being appended: a runner shutting down waits for them (each retries for at most publishRetrySeconds). */
  private readonly recording = new Set<Promise<void>>();

  async close(): Promise<void> {
    this.overrides?.close();
    this.board.close();
    // A run that ended in the shutdown grace has its last call's record in flight (fire and forget
    // when no limit needs it): closing the bus under it would leave that call out of the ledger.
    await Promise.allSettled(this.recording);
    await this.ledger.close();
  }

  forChannel(ch: GuardedChannel): ModelAccess {
    const { config, paths } = this.loaded;
    const log = this.log.child({ channel: ch.key });
    const pick = async (model: Model): Promise<CredentialPick> => {
      const order = credentialOrder({ provider: model.provider, channel: ch.key, config, profiles: this.profiles.profiles(), hasDefault: ch.hasDefault(model) });
      if (order.length === 0) return { unavailable: `No credentials for ${model.provider}: add one with \`mom auth add ${model.provider} --api-key\` or set the provider's API key variable for the runner.` };
      let soonest: number | undefined;
      const skipped: string[] = [];
      for (const c of order) {
        if (c.profile?.expiresAt && Date.parse(c.profile.expiresAt) <= Date.now()) {
          skipped.push(`${c.id} expired ${c.profile.expiresAt}`);
          continue;
        }
        const until = await this.board.coolingUntil(model.provider, c.id);
        if (until !== undefined) {
          soonest = Math.min(soonest ?? until, until);
          continue;
        }
        if (!c.profile) return { id: c.id };
        try {
          const { secret } = c.profile;
          // pi-auth: OAuth credentials, refreshed by pi when expired (docs/auth.md).
          return { id: c.id, apiKey: c.profile.type === "oauth" && isPiAuthRef(secret) ? await oauthAccessToken(secret, model.provider, paths.dataDir) : resolveSecret(secret, paths.dataDir) };
        } catch (err) {
          skipped.push(`${c.id}: ${(err as Error).message}`);
        }
      }
      const why = skipped.length ? ` (${skipped.join("; ")})` : "";
      if (soonest === undefined) return { unavailable: `No usable ${model.provider} credential${why}. See \`mom auth list\`.` };
      const at = new Date(soonest);
      return {
        unavailable: `Every ${model.provider} credential is cooling down after rate-limit, auth or billing refusals${why}. Try again after ${at.toISOString().slice(11, 16)} UTC (in ${minutes(soonest - Date.now())}).`,
        retryAt: soonest,
      };
    };
    return {
      hasCredentials: (provider) => this.profiles.profiles().some((p) => p.provider === provider),
      admit: async (estimate) => {
        if (!hasLimits(config.limits)) return undefined;
        const e = estimate();
        const limits = this.overrides?.effective(config.limits) ?? config.limits;
        return spendLimitProblem(limits, this.ledger.totals, ch.key, ch.ref.adapter, { usd: e.usd, tokens: e.inputTokens + e.outputTokens }, this.now(), this.overrides);
      },
      pick,
      refused: async (id, refusal, model) => {
        const reason = classifyRefusal(refusal);
        if (!reason) return false;
        const until = await this.board.coolDown(model.provider, id, reason, refusal.retryAfterMs);
        log.warn({ credential: id, provider: model.provider, reason, status: refusal.status, until: new Date(until).toISOString() }, "credential refused; cooling down");
        const next = await pick(model);
        if ("id" in next) await this.rotated(ch, { provider: model.provider, from: id, to: next.id, reason, until: new Date(until).toISOString() });
        return true;
      },
      settled: async (id, message, model, estimated) => {
        const recorded = this.record(ch, id, message, model, estimated === true).catch((err: unknown) => log.error({ err }, "usage not recorded in the ledger"));
        this.recording.add(recorded);
        void recorded.finally(() => this.recording.delete(recorded));
        // Only a spend limit needs the next call to see this one's usage: otherwise the run goes on.
        if (hasLimits(config.limits)) await recorded;
        // Informational (mom auth list): not worth making the run wait.
        if (message.stopReason !== "error") void this.board.markUsed(model.provider, id).catch(() => {});
      },
    };
  }

  private async record(ch: GuardedChannel, credential: string, m: AssistantMessage, model: Model, estimated: boolean): Promise<void> {
    const u = m.usage;
    if (!u || (u.totalTokens === 0 && u.cost.total === 0)) return;
    const runId = ch.currentRun()?.runId;
    await this.ledger.record({
      id: randomUUID(),
      ts: this.now().toISOString(),
      channel: ch.key,
      adapter: ch.ref.adapter,
      ...(runId !== undefined && { runId }),
      provider: model.provider,
      model: model.id,
      credential,
      input: u.input,
      output: u.output,
      cacheRead: u.cacheRead,
      cacheWrite: u.cacheWrite,
      totalTokens: u.totalTokens,
      costUsd: Math.max(0, u.cost.total),
      ...(estimated && { estimated }),
    });
  }

  private async rotated(ch: GuardedChannel, r: { provider: string; from: string; to: string; reason: AuthFailureReason; until: string }): Promise<void> {
    const run = ch.currentRun();
    run?.publisher.emit({ type: "auth.profile.rotated", ...r });
    const receipt: Receipt = makeReceipt(
      "auth.profile.rotated",
      { runId: run?.runId ?? "", toolCallId: "", toolId: "auth.profile.rotate", risk: "read", args: r },
      { detail: `${r.provider} ${r.from} -> ${r.to}: ${r.reason}, until ${r.until}` },
    );
    await ch.store.appendReceipt(receipt).catch((err: unknown) => this.log.error({ err }, "rotation receipt not written"));
    await this.bus.publish(this.bus.subjects.channel("receipts", ch.ref), receipt, receipt.receiptId).catch((err: unknown) => this.log.error({ err }, "rotation receipt not published"));
  }
}
