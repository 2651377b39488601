import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from "@nestjs/common";
import { type Bus, type ChannelWindow, readChannelWindow, readRange, namespacedName, serviceReadiness } from "@mom/bus";
import { configuredModels, LimitsConfig, schemaChecker } from "@mom/config";
import {
  type ChannelRef,
  type ControlMessage,
  type OutboundEvent,
  parsePayload,
  parseQualifiedChannelId,
  type SpendAmount,
  type SpendLimitOverride,
  ToolApproveReply,
  type ToolApproveRequest,
  ToolReviewReply,
  toolsSubject,
  UsageRecord,
  validator,
  type WorkspaceToolReview,
} from "@mom/contracts";
import { approvalPromptParts, plainDialect } from "@mom/render";
import { applyLimitOverrides, budgetPath, hasLimits, type LimitOverrides, type Period, type Scope } from "@mom/usage";
import { createHash } from "node:crypto";
import { BusFeed } from "./bus-feed.js";
import { shownToolReview } from "./tool-review-view.js";
import { checkRepublish, type DeadLetterDetail, readDeadLetter } from "./dead-letters.js";
import { CONSOLE_OPTIONS, type ConsoleOptions } from "./console-options.js";
import { type ConsoleIdentity, Identities } from "./identity.js";
import { LiveState, type PendingApproval } from "./live-state.js";
import { RedriveError, type RedriveReport, RedriveRunner } from "./redrive-runner.js";
import { buildTimeline, type Timeline } from "./run-timeline.js";
import { SpendBook, type SpendView } from "./spend-book.js";

const checkUsage = validator(UsageRecord);
const checkLimits = schemaChecker(LimitsConfig);
const checkReview = validator(ToolReviewReply);
const checkApproved = validator(ToolApproveReply);
const TEXT = plainDialect();
/** How long the console waits for a runner to answer a tool review or approval. */
const TOOLS_TIMEOUT_MS = 15_000;

/** One pending approval as the page shows it: the chat adapters' prompt, and whether this user may decide. */
export interface ApprovalCard {
  id: string;
  channel: string;
  runId: string;
  askedAt: string;
  head: string;
  args: string;
  foot: string;
  canDecide: boolean;
  /** The platform user id the decision is made as. */
  as?: string;
  why?: string;
}

export class DecisionRefused extends Error {
  constructor(
    readonly status: 403 | 404 | 409,
    message: string,
  ) {
    super(message);
  }
}

/** A change the console will not make (or could not get made), with the HTTP status it answers with. */
export class ChangeRefused extends Error {
  constructor(
    readonly status: 400 | 403 | 404 | 409 | 502 | 503,
    message: string,
  ) {
    super(message);
  }
}

/** A dead letter put back on its subject from the console. */
export interface Republished {
  dlqSeq: number;
  subject: string;
  /** Where it landed in its stream */
  streamSeq: number;
  msgId: string;
  by: string;
  at: string;
  /** The stream already held this msg-id: the same fix was put back before. */
  duplicate: boolean;
}

/** What a form names a budget by: its scope and period. */
export interface LimitChange {
  kind: string;
  id?: string;
  period: string;
  /** set: the new cap (usd and/or tokens); lift: no limit; reset: config.json's again */
  action: string;
  usd?: string;
  tokens?: string;
}

/** The only role that changes anything: approvals, redrives, re-publishing, tools, limits. */
function mustApprove(user: ConsoleIdentity, what: string): void {
  if (user.role !== "approver") throw new ChangeRefused(403, `${user.name} is a viewer: console.users.${user.name}.role must be "approver" to ${what}.`);
}

/** Whether `user` may decide `p`, and as whom: the same approvers list the runner checks. */
export function decisionRight(user: ConsoleIdentity, p: PendingApproval): { as: string } | { why: string } {
  const adapter = parseQualifiedChannelId(p.channel).adapter;
  if (user.role !== "approver") return { why: `${user.name} is a viewer: console.users.${user.name}.role must be "approver" to decide.` };
  const as = user.as[adapter];
  if (!as) return { why: `${user.name} has no ${adapter} user id: set console.users.${user.name}.as.${adapter}.` };
  if (!p.event.approvers.includes(as)) return { why: `${adapter} user ${as} (${user.name}) is not among this call's approvers (${p.event.approvers.join(", ") || "none"}): adapters.${adapter}.admins decides.` };
  return { as };
}

@Injectable()
export class ConsoleService implements OnApplicationBootstrap, OnApplicationShutdown {
  readonly state = new LiveState();
  readonly spend = new SpendBook();
  readonly identities: Identities;
  readonly bus: Bus;
  private readonly feed: BusFeed;
  private readonly redriver: RedriveRunner;
  private unready?: () => void;
  /** The budgets changed from the console (the runners' bucket), once it exists. */
  private limitOverrides?: LimitOverrides;
  /** Dead letters put back from this console since it started, by MOM_DLQ sequence (the log has every one). */
  private readonly republished = new Map<number, Republished[]>();

  constructor(@Inject(CONSOLE_OPTIONS) readonly opts: ConsoleOptions) {
    this.bus = opts.bus;
    this.identities = new Identities(opts.loaded.config.console);
    this.redriver = new RedriveRunner(opts.loaded, this.bus, opts.redriveTimeoutMs);
    this.feed = new BusFeed(this.bus, this.state, opts.logger, {
      retryMs: opts.retryMs,
      spend: this.spend,
      ...(hasLimits(opts.loaded.config.limits) && { limits: (o: LimitOverrides) => (this.limitOverrides = o) }),
    });
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.feed.start();
    this.unready = serviceReadiness("console", this.bus);
  }

  async onApplicationShutdown(): Promise<void> {
    this.unready?.();
    await this.feed.stop();
  }

  approvalCards(user: ConsoleIdentity): ApprovalCard[] {
    return this.state.snapshot().pending.map((p) => {
      const parts = approvalPromptParts(p.event, TEXT);
      const right = decisionRight(user, p);
      return { id: p.event.approvalId, channel: p.channel, runId: p.runId, askedAt: p.askedAt, ...parts, canDecide: "as" in right, ...right };
    });
  }

  /** Publishes the decision on the channel's control subject, made as the user's id on that adapter; the runner decides whether it counts. */
  async decide(user: ConsoleIdentity, approvalId: string, decision: string): Promise<{ channel: string; as: string }> {
    if (decision !== "allow-once" && decision !== "deny") throw new DecisionRefused(409, `decision must be allow-once or deny, got ${JSON.stringify(decision)}`);
    const p = this.state.approval(approvalId);
    if (!p) throw new DecisionRefused(409, `approval ${approvalId} is no longer waiting (decided, expired, or its run ended)`);
    const right = decisionRight(user, p);
    if ("why" in right) throw new DecisionRefused(403, right.why);
    const ref: ChannelRef = parseQualifiedChannelId(p.channel);
    const msg: ControlMessage = { type: "approval_decision", ts: new Date().toISOString(), approvalId, decision, decidedBy: { id: right.as, username: `${user.name} (console)` } };
    // One decision per approval and console user: a double click is deduplicated by the stream.
    await this.bus.publish(this.bus.subjects.channel("ctl", ref), msg, `console:${approvalId}:${user.name}`, { timeoutMs: 5000 });
    this.opts.logger.info({ approvalId, channel: p.channel, decision, consoleUser: user.name, as: right.as }, "console approval decision sent");
    return { channel: p.channel, as: right.as };
  }

  /** Spend today and this month against the limits in force (config.json's, or changed here), and the channels a limit pauses. */
  spendView(): SpendView {
    return this.spend.view(this.opts.loaded.config.limits, this.state.channelNames(), this.limitOverrides);
  }

  /**
   * Raises, lowers or lifts one budget config.json sets, or gives it back to config.json: an entry
   * in the runners' overrides bucket, which every runner's spend check reads instead of that budget.
   * The new limits must pass config.json's own schema (LimitsConfig), as if written in the file.
   */
  async changeLimit(user: ConsoleIdentity, c: LimitChange): Promise<{ path: string; said: string }> {
    mustApprove(user, "change a spend limit");
    const scope: Scope | undefined =
      c.kind === "global" ? { kind: "global" } : c.kind === "adapter" && c.id ? { kind: "adapter", adapter: c.id } : c.kind === "channel" && c.id ? { kind: "channel", channel: c.id } : undefined;
    if (!scope) throw new ChangeRefused(400, `no such budget scope ${JSON.stringify(c.kind)}${c.id ? ` ${JSON.stringify(c.id)}` : ""}`);
    if (c.period !== "day" && c.period !== "month") throw new ChangeRefused(400, `period must be day or month, got ${JSON.stringify(c.period)}`);
    const period: Period = c.period;
    const path = budgetPath(scope, period);
    const config = this.opts.loaded.config.limits;
    const overrides = this.limitOverrides;
    if (!overrides) throw new ChangeRefused(503, "no runner has made the spend limits bucket yet (the runners make it at start): start a runner, then try again");
    const configured = (scope.kind === "global" ? config.global : scope.kind === "adapter" ? config.adapters?.[scope.adapter] : config.channels?.[scope.channel])?.[period];
    if (!configured && !overrides.find(scope, period)) throw new ChangeRefused(409, `config.json sets no ${path}: the console changes the limits config.json sets (add it there)`);
    const by = `${user.name} (console)`;
    if (c.action === "reset") {
      await overrides.clear(scope, period);
      this.opts.logger.info({ budget: path, consoleUser: user.name }, "console gave a spend limit back to config.json");
      return { path, said: `${path} is config.json's again` };
    }
    let cap: SpendAmount | null;
    if (c.action === "lift") cap = null;
    else if (c.action === "set") {
      // As typed: a number where it reads as one, else the text itself, for the schema to name.
      const num = (v: string | undefined) => (v === undefined || v.trim() === "" ? undefined : Number.isFinite(Number(v)) ? Number(v) : v.trim());
      const usd = num(c.usd);
      const tokens = num(c.tokens);
      if (usd === undefined && tokens === undefined) throw new ChangeRefused(400, `${path}: give US dollars, tokens or both (or lift the limit)`);
      cap = { ...(usd !== undefined && { usd }), ...(tokens !== undefined && { tokens }) } as SpendAmount;
    } else throw new ChangeRefused(400, `action must be set, lift or reset, got ${JSON.stringify(c.action)}`);
    const o: SpendLimitOverride = { scope, period, cap, setBy: by, setAt: new Date().toISOString() };
    const limits: LimitsConfig = applyLimitOverrides(config, [...overrides.list(), o]);
    const issues = checkLimits(limits);
    if (issues.length) throw new ChangeRefused(400, `${path}: ${issues.map((i) => `limits${i.path}: ${i.message}`).join("; ")}`);
    await overrides.set(o);
    this.opts.logger.info({ budget: path, cap, consoleUser: user.name }, cap ? "console changed a spend limit" : "console lifted a spend limit");
    return { path, said: cap ? `${path} is now ${[cap.usd !== undefined && `$${cap.usd}`, cap.tokens !== undefined && `${cap.tokens.toLocaleString("en-US")} tokens`].filter(Boolean).join(" and ")}, set by ${by}` : `${path} lifted by ${by}` };
  }

  /** One dead letter, read whole (the edit page). */
  async deadLetter(seq: number): Promise<DeadLetterDetail | undefined> {
    return readDeadLetter(this.bus, seq);
  }

  /** The re-publishes of dead letter `seq` this console has seen: made here, or read back by `readRepublished`. */
  republishedOf(seq: number): Republished[] {
    return this.republished.get(seq) ?? [];
  }

  /**
   * The re-publishes of a dead letter as its stream keeps them, whoever made them and whenever
   * (another console, before a restart): the messages on its subject since the letter was stored
   * whose msg-id is `dlq-<seq>-…`, and who did it from each one's headers. One subject, from one
   * moment: what a letter's page can afford.
   */
  async readRepublished(d: DeadLetterDetail): Promise<Republished[]> {
    if ("why" in d.target) return this.republishedOf(d.row.seq);
    const key = d.target.kind === "in" ? "IN" : "CTL";
    const back = await readRange(this.bus, this.bus.subjects.stream(key), d.target.subject, { time: new Date(d.row.storedAt) });
    const found: Republished[] = [];
    for (const m of back.filter((x) => x.msgId?.startsWith(`dlq-${d.row.seq}-`))) {
      const by = (await this.bus.storedMessage(key, m.seq))?.headers["Mom-Republished-By"] ?? "someone";
      found.push({ dlqSeq: d.row.seq, subject: m.subject, streamSeq: m.seq, msgId: m.msgId!, by, at: m.time.toISOString(), duplicate: false });
    }
    this.republished.set(d.row.seq, found);
    return found;
  }

  /**
   * Puts a fixed payload back on the subject the dead letter arrived on, once it passes that
   * subject's contract (the consumers' own check). Its msg-id is `dlq-<seq>-<sha256 of the payload,
   * 16 hex>`: never the original's (JetStream would drop it as a duplicate within its window), the
   * same for the same fix (a double submit lands once), new for another fix. Headers
   * Mom-Republished-By / -From stay with the message; the console logs who did it.
   */
  async republish(user: ConsoleIdentity, seq: number, text: string): Promise<Republished> {
    mustApprove(user, "re-publish a dead letter");
    const d = await readDeadLetter(this.bus, seq);
    if (!d) throw new ChangeRefused(404, `MOM_DLQ has no message #${seq} (aged out, or never there)`);
    if ("why" in d.target) throw new ChangeRefused(409, d.target.why);
    const checked = checkRepublish(d.target.kind, text);
    if (!checked.ok) throw new ChangeRefused(400, `not published: ${d.target.subject} takes a payload that passes its contract, and this one does not: ${checked.reason}`);
    const json = JSON.stringify(checked.value);
    const msgId = `dlq-${seq}-${createHash("sha256").update(json).digest("hex").slice(0, 16)}`;
    const by = `${user.name} (console)`;
    const from = `${this.bus.subjects.stream("DLQ")} #${seq}`;
    const { seq: streamSeq, duplicate } = await this.bus.publish(d.target.subject, checked.value, msgId, { timeoutMs: 5000, headers: { "Mom-Republished-By": by, "Mom-Republished-From": from } });
    const r: Republished = { dlqSeq: seq, subject: d.target.subject, streamSeq, msgId, by, at: new Date().toISOString(), duplicate };
    if (!duplicate) this.republished.set(seq, [...this.republishedOf(seq), r]);
    this.opts.logger.info({ dlqSeq: seq, subject: r.subject, streamSeq, msgId, duplicate, consoleUser: user.name }, "console re-published a dead letter");
    return r;
  }

  /** The workspace tools and what changed since each was approved, as a runner reads them from its disk. */
  async toolReview(): Promise<{ runner: string; tools: WorkspaceToolReview[] }> {
    const r = parsePayload(checkReview, await this.askRunner("review", {}));
    if (!r.ok) throw new ChangeRefused(502, `a runner answered the tool review with something else: ${r.reason}`);
    if (!r.value.ok) throw new ChangeRefused(502, `the runner could not review the tools: ${r.value.error}`);
    return { runner: r.value.runner, tools: shownToolReview(r.value.tools) };
  }

  /** Approves a workspace tool as the person reviewed it (`sha256`); a runner writes the approval. */
  async approveTool(user: ConsoleIdentity, name: string, sha256: string): Promise<{ runner: string; sha256: string; files: number }> {
    mustApprove(user, "approve a workspace tool");
    const req: ToolApproveRequest = { name, sha256, by: `${user.name} (console)` };
    const r = parsePayload(checkApproved, await this.askRunner("approve", req));
    if (!r.ok) throw new ChangeRefused(502, `a runner answered the approval with something else: ${r.reason}`);
    if (!r.value.ok) throw new ChangeRefused(409, `not approved: ${r.value.error}`);
    this.opts.logger.info({ tool: name, sha256, consoleUser: user.name, runner: r.value.runner }, "console approved a workspace tool");
    return r.value;
  }

  private async askRunner(op: "review" | "approve", payload: unknown): Promise<string> {
    try {
      return await this.bus.request(toolsSubject(this.bus.subjects.namespace, op), payload, TOOLS_TIMEOUT_MS);
    } catch (err) {
      throw new ChangeRefused(503, `no runner answered (${(err as Error).message}): the runners own workspace/tools and data/tool-approvals.json, and one of them answers; is one running?`);
    }
  }

  /** The models the redrive form offers (any provider/id resolvable from the data dir is taken). */
  redriveModels(): string[] {
    return configuredModels(this.opts.loaded);
  }

  /** Approvers only: runs the channel's window against a fresh agent in a scratch dir (see RedriveRunner). */
  async redrive(user: ConsoleIdentity, ref: ChannelRef, window: string, model: string): Promise<RedriveReport> {
    if (user.role !== "approver") throw new RedriveError(403, `${user.name} is a viewer: console.users.${user.name}.role must be "approver" to redrive.`);
    this.opts.logger.info({ channel: `${ref.adapter}/${ref.channelId}`, window, model: model || undefined, consoleUser: user.name }, "console redrive started");
    return this.redriver.run(ref, window, model.trim() || undefined, user.name);
  }

  async channelWindow(ref: ChannelRef): Promise<ChannelWindow> {
    return readChannelWindow(this.bus, ref, {});
  }

  async timeline(ref: ChannelRef, qualified: string, runId: string): Promise<Timeline> {
    const window = await this.channelWindow(ref);
    const started = window.entries.find((e) => e.kind === "out" && "data" in e && (e.data as OutboundEvent).runId === runId);
    const usage = started ? await this.usageOf(qualified, ref, new Date(Date.parse(started.time) - 1000)) : [];
    return buildTimeline(qualified, runId, window.entries, usage);
  }

  private async usageOf(qualified: string, ref: ChannelRef, since: Date): Promise<UsageRecord[]> {
    const stream = namespacedName(this.bus, "USAGE");
    if (!(await this.bus.hasStream(stream))) return [];
    const subject = `${this.bus.subjects.namespace}.usage.${this.bus.subjects.channel("in", ref).split(".").slice(2).join(".")}`;
    const raw = await readRange(this.bus, stream, subject, { time: since });
    return raw.flatMap((m) => {
      const r = parsePayload(checkUsage, m.text);
      return r.ok && r.value.channel === qualified ? [r.value] : [];
    });
  }
}
