import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from "@nestjs/common";
import { ChannelAgent, createProcessTool, createWebFetchTool, gated, MOM_TOOL_NAMES, PROCESS_TOOL_NAME, processPrompt, SEND_TOOL_NAME, SPAWN_TOOL_NAME, WEB_FETCH_PROMPT, WEB_FETCH_TOOL_NAME, withLabel } from "@mom/agent";
import { Bus, type Delivery, type Following, RejectedInput, serviceReadiness } from "@mom/bus";
import { type BeforeJetStreamDrain } from "@mom/bus/nest";
import { reportQueueDepth } from "@mom/observability";
import { ChannelMessage, type ChannelRef, channelKey, channelsBucket, ControlMessage, parseChannelKey, qualifiedChannelId, type Receipt, runnersBucket } from "@mom/contracts";
import { adapterApprovalLimit } from "@mom/config";
import {
  createHostToolApi,
  createInvokeTool,
  CustomToolRegistry,
  requireApproval,
  TOOL_APPROVALS_FILE,
  formatActivity,
  formatCustomToolsForPrompt,
  INVOKE_TOOL_NAME,
  filterToolSource,
  isAllowed,
  relevantActivity,
  type ToolGate,
} from "@mom/tools";
import { WorkspaceLayout } from "@mom/store";
import { toolHostOptions } from "@mom/auth";
import { createRunCodeTool, formatCodeModeForPrompt, RUN_CODE_TOOL_NAME, ScriptPool } from "@mom/code-mode";
import { join } from "node:path";
import pLimit from "p-limit";
import type { Logger } from "pino";
import { answerToolReviews } from "./tool-review-responder.js";
import { ChannelList } from "./channel-list.js";
import { channelMaterializer } from "./attachment-materializer.js";
import { attachmentSender } from "./attachment-sender.js";
import { ApprovalBroker } from "./approval-broker.js";
import { abortRefusal, approversFor, callableTools, channelPolicy, noCallableToolsMessage } from "./channel-policy.js";
import { ChannelWorker } from "./channel-worker.js";
import { ActiveRun } from "./active-run.js";
import { ChannelDirectory, type Versioned } from "./cluster/channel-directory.js";
import { ChannelLedger, ChannelLost } from "./cluster/channel-ledger.js";
import { Membership } from "./cluster/membership.js";
import { Ownership } from "./cluster/ownership.js";
import { type ChannelSlot, ChannelSlots } from "./cluster/channel-slots.js";
import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import { RunPublisher } from "./run-publisher.js";
import { ChannelToolGate } from "./tool-gate.js";
import { channelSend } from "./channel-send.js";
import { ModelGuard } from "./model-guard.js";
import { discoveryDurable, RUNNER_OPTIONS, type RunnerOptions } from "./runner-options.js";
import { channelSandbox, workspaceSandbox } from "./workspace-sandbox.js";
import type { Sandbox } from "@mom/sandbox";
import { ChannelJobs } from "./jobs/channel-jobs.js";
import { channelJobs } from "./jobs/runner-jobs.js";

/** One channel this runner owns: its reader, its worker and the ledger they report to. */
interface OwnedChannel {
  ref: ChannelRef;
  ledger: ChannelLedger;
  worker: ChannelWorker;
  gate: ChannelToolGate;
  /** The channel's run in progress (who asked for it decides who may abort it). */
  active: ActiveRun;
  /** Its background jobs (the `process` tool): they run on this runner, and end when it lets the channel go. */
  jobs: ChannelJobs;
  feed: Following;
}

/**
 * The agent runner. Channels are spread over the runner replicas (docs/scaling.md): a shared
 * durable consumer on mom.in (DiscoveryController) only makes sure every message's channel has a
 * live owner; the owner reads its channel's subject in order from where the channel's work is
 * done, one worker per channel. Control messages reach every replica; the owner acts on them.
 */
@Injectable()
export class RunnerService implements OnApplicationBootstrap, BeforeJetStreamDrain, OnApplicationShutdown {
  /** Every channel this runner holds, in one state each (cluster/channel-slots.ts). */
  private readonly slots = new ChannelSlots<OwnedChannel>();
  private readonly layout: WorkspaceLayout;
  private readonly channelList: ChannelList;
  private readonly log: Logger;
  private control?: Following;
  private timers: NodeJS.Timeout[] = [];
  private readonly runSlot: ReturnType<typeof pLimit>;
  private readonly broker = new ApprovalBroker();
  /** Custom host tools (global dir, then workspace/tools), hot-reloaded for every channel. */
  private readonly customTools: CustomToolRegistry;
  /** Worker threads that run code-mode scripts, shared by the channels. */
  private readonly scripts = new ScriptPool();
  readonly runnerId: string;
  private membership!: Membership;
  private directory!: ChannelDirectory;
  private ownership!: Ownership;
  private streamCreated = "";
  private closing = false;
  private viewChecks?: Promise<void>;
  /** Spend limits, auth profiles and cooldowns around every model call. */
  private guard?: ModelGuard;
  private readonly sandbox: Sandbox;
  private unready?: () => void;
  private stopQueueDepth?: () => void;
  /** Answers the web console's tool reviews and approvals (tool-review-responder.ts). */
  private toolReviews?: { stop(): void };

  constructor(
    @Inject(Bus) private readonly bus: Bus,
    @Inject(RUNNER_OPTIONS) private readonly opts: RunnerOptions,
  ) {
    this.layout = new WorkspaceLayout(opts.loaded.paths.workspaceDir);
    this.runnerId = opts.runnerId ?? defaultRunnerId();
    this.log = opts.logger.child({ runner: this.runnerId });
    this.channelList = new ChannelList(this.layout, this.log);
    this.runSlot = pLimit(opts.loaded.config.runner.maxConcurrentRuns);
    const { paths, config } = opts.loaded;
    this.sandbox = workspaceSandbox(opts.loaded, this.log);
    this.customTools = new CustomToolRegistry(
      [...(config.tools.globalDir ? [config.tools.globalDir] : []), join(paths.workspaceDir, "tools")],
      createHostToolApi(toolHostOptions(opts.loaded)),
      {
        logger: this.log.child({ component: "custom-tools" }),
        // Workspace tools load once an admin approved their content (`mom tools approve`).
        admit: requireApproval(join(paths.dataDir, TOOL_APPROVALS_FILE), join(paths.workspaceDir, "tools")),
        watchFiles: [join(paths.dataDir, TOOL_APPROVALS_FILE)],
      },
    );
  }

  private get cfg() {
    return this.opts.loaded.config.runner;
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.layout.ensureWorkspace();
    this.guard = await ModelGuard.open(this.opts.loaded, this.bus, this.log.child({ component: "model-guard" }));
    await this.customTools.reload();
    this.reportToolProblems();
    this.customTools.watch(() => this.reportToolProblems());
    this.toolReviews = answerToolReviews(this.bus, {
      runnerId: this.runnerId,
      approvalsFile: join(this.opts.loaded.paths.dataDir, TOOL_APPROVALS_FILE),
      toolsDir: join(this.layout.workspaceDir, "tools"),
      log: this.log.child({ component: "custom-tools" }),
    });
    const leaseMs = this.cfg.leaseSeconds * 1000;
    const ns = this.bus.subjects.namespace;
    const [runnersKv, channelsKv, stream] = await Promise.all([
      this.bus.keyValue(runnersBucket(ns), { ttlMs: leaseMs }),
      this.bus.keyValue(channelsBucket(ns)),
      this.bus.streamState("IN"),
    ]);
    this.streamCreated = stream.created;
    this.membership = new Membership({ kv: runnersKv, id: this.runnerId, leaseMs, load: () => this.slots.activeCount, log: this.log.child({ component: "membership" }) });
    this.directory = new ChannelDirectory(channelsKv, this.log.child({ component: "channels" }));
    this.ownership = new Ownership({
      membership: this.membership,
      directory: this.directory,
      log: this.log.child({ component: "ownership" }),
      streamCreated: () => this.streamCreated,
      hooks: {
        acquire: (key, v) => this.acquire(key, v),
        lose: (key) => void this.lose(key),
        handOff: (key, to) => void this.handOff(key, to, this.cfg.runTimeoutMinutes * 60_000),
        // Channels with background jobs go last: handing one over ends its jobs.
        owned: () => this.slots.entries().sort(([, a], [, b]) => Number(busy(a)) - Number(busy(b)) || a.worker.lastActivity - b.worker.lastActivity).map(([k]) => k),
        isOwned: (key) => this.slots.holds(key),
      },
    });
    await this.membership.start();
    await this.directory.start((key, v) => this.ownership.onRecord(key, v));
    await this.rewindRecordsAheadOf(stream.lastSeq);
    void this.watchConnection();
    const tickMs = Math.max(100, Math.min(1000, Math.floor(leaseMs / 5)));
    this.every(tickMs, () => this.housekeeping());
    const idleMs = this.cfg.idleEvictMinutes * 60_000;
    this.every(Math.min(idleMs, 60_000), () => this.evictIdle(idleMs));
    this.control = this.bus.follow({
      stream: "CTL",
      filterSubject: this.bus.subjects.wildcard("ctl"),
      from: "new",
      // One reader per runner: a `stop` must not wait long after the server holding it died.
      heartbeatMs: 2000,
      schema: ControlMessage,
      handler: (d) => this.onControl(d).catch((err) => this.log.error({ err, subject: d.subject }, "control message failed")),
    });
    this.stopQueueDepth = reportQueueDepth(this.runnerId, () => {
      let queued = 0;
      for (const [, c] of this.slots.entries()) queued += c.worker.queuedRuns;
      return queued;
    });
    this.unready = serviceReadiness("agent-runner", this.bus, () => (this.membership.healthy ? undefined : "no heartbeat written to NATS for three quarters of a lease"));
  }

  /** What operators and tests wait for: said once the discovery consumer is bound too (startRunner). */
  logReady(): void {
    this.log.info({ model: this.opts.loaded.config.model, workspace: this.layout.workspaceDir, nats: this.bus.serverVersion, leaseMs: this.cfg.leaseSeconds * 1000 }, "agent runner ready");
  }

  /**
   * The first half of shutting down, before the discovery consumer stops: takes no channel more
   * (the other replicas hear it at once, and a discovery still running hands its channel to one of
   * them) and stops the housekeeping that would move channels.
   */
  async beforeJetStreamDrain(): Promise<void> {
    this.closing = true;
    this.unready?.();
    this.stopQueueDepth?.();
    for (const t of this.timers) clearInterval(t);
    this.toolReviews?.stop();
    this.customTools.close();
    await this.membership?.leave();
  }

  async onApplicationShutdown(): Promise<void> {
    const graceMs = this.cfg.shutdownGraceSeconds * 1000;
    await Promise.all(this.slots.entries("owned").map(([key]) => this.handOff(key, this.ownership.planHandOff(key), graceMs)));
    // After the hand-offs: a run finishing in the grace time may still run a script.
    this.scripts.close();
    this.control?.stop();
    this.directory?.stop();
    await this.membership?.stop();
    await this.guard?.close();
  }

  /** A message on mom.in: make sure its channel has a live owner; the owner reads it from there. */
  async onDiscover(d: Delivery<ChannelMessage>): Promise<void> {
    const ref = this.refOf(d);
    const adapters = Object.keys(this.opts.loaded.config.adapters);
    if (!adapters.includes(ref.adapter)) {
      throw new RejectedInput(`adapter ${JSON.stringify(ref.adapter)} is not in config.json (adapters: ${adapters.join(", ") || "none"})`);
    }
    if (d.data.channelId !== ref.channelId) {
      throw new RejectedInput(`payload channelId ${JSON.stringify(d.data.channelId)} does not match subject channel ${JSON.stringify(ref.channelId)}`);
    }
    // A channel never seen starts after what the durable has acknowledged: nothing of it past
    // that point can have been handled, nothing before it is new.
    const key = channelKey(ref);
    await this.ownership.ensureOwner(key, async () => Math.min(await this.bus.ackFloor("IN", discoveryDurable(this.opts)), d.streamSeq - 1));
    // The channel's own feed must bring this message soon; if it does not, the feed is re-opened.
    this.slots.active(key)?.feed.expect(d.streamSeq);
  }

  /** The record names this runner: read the channel from where its work is done. */
  private acquire(key: string, v: Versioned, excused = false): void {
    if (this.closing || this.slots.holds(key)) return;
    let ref: ChannelRef;
    try {
      ref = parseChannelKey(key);
    } catch (err) {
      this.log.error({ err, key }, "ignoring a channel record with an invalid key");
      return;
    }
    const channel = qualifiedChannelId(ref);
    const ledger = new ChannelLedger(this.directory, key, v, this.log.child({ channel }), () => void this.lose(key), excused);
    this.slots.own(key, (slot) => {
      // The fence: no write to the channel's files unless this tenure still runs it, the record
      // still names this runner at the revision it holds, and its heartbeats land (others take its
      // channels a lease after they stop).
      this.layout.channel(ref).writeGuard = () => {
        if (slot.state !== "owned" && slot.state !== "draining") throw new ChannelLost(key, `is ${slot.state ?? "let go of"} here`);
        if (!this.membership.healthy) {
          this.setEverythingDown();
          throw new ChannelLost(key, "is set down: this runner's heartbeats do not reach NATS");
        }
        ledger.assertOwner();
      };
      const { worker, gate, active, jobs } = this.createWorker(ref, slot, ledger, () => void this.restart(key));
      const feed = this.bus.follow({
        stream: "IN",
        filterSubject: this.bus.subjects.channel("in", ref),
        from: ledger.resumeSeq,
        schema: ChannelMessage,
        handler: (d) => {
          if (d.data.channelId === ref.channelId) worker.deliver(d.streamSeq, d.data, d.traceparent);
        },
      });
      // Jobs the channel's previous holder left in jobs.jsonl are gone with it: the channel is told.
      jobs.recover().catch((err) => this.log.warn({ err, channel }, "could not report the background jobs the channel's previous runner lost"));
      return { ref, ledger, worker, gate, active, jobs, feed };
    });
    this.log.info({ channel, fromSeq: ledger.resumeSeq, interrupted: v.record.run?.runId }, "channel acquired");
  }

  /** Somebody else owns the channel now: stop reading, abort, write nothing more. */
  private async lose(key: string): Promise<void> {
    // Our own hand-over landing: handOff lets the channel go once its worker is done.
    if (this.slots.active(key)?.ledger.releasing) return;
    // Until its worker has stopped the channel is not to be taken again here: housekeeping would
    // otherwise start a second worker (and pi session) on the same files meanwhile.
    const c = this.slots.stop(key);
    if (!c) return;
    c.feed.stop();
    this.log.warn({ channel: qualifiedChannelId(c.ref) }, "channel lost to another runner");
    try {
      await Promise.all([c.worker.fence(), c.jobs.killAll({ kind: "fenced" })]);
      await c.worker.dispose();
    } finally {
      this.slots.forget(key, "stopping");
    }
  }

  /** Gives the channel to `to` (null: nobody) once its current run is over (or graceMs passed). */
  private async handOff(key: string, to: string | null, graceMs: number): Promise<void> {
    const c = this.slots.drain(key);
    if (!c) return this.ownership.handedOff(key);
    try {
      // The feed keeps going until the run is over (it stops below), so a typed `stop` reaches it.
      await c.worker.release(graceMs);
      // Its jobs end here, each told in the channel (before the work left is judged: that message is work).
      await c.jobs.killAll(this.closing ? { kind: "shutdown" } : { kind: "moved", to: to ?? "none" });
      const left = to === null && (await this.hasWorkLeft(c));
      await c.ledger.release(to, left);
      this.log.info({ channel: qualifiedChannelId(c.ref), to, doneSeq: c.ledger.record.doneSeq }, "channel handed over");
    } catch (err) {
      this.log.warn({ err, channel: qualifiedChannelId(c.ref) }, "handing a channel over failed; the lease will move it");
    } finally {
      c.feed.stop();
      // Lost or set down meanwhile: that path lets go of it once its worker has stopped.
      this.slots.forget(key, "draining");
      this.ownership.handedOff(key);
      await c.worker.dispose();
    }
  }

  /** A message could not be finished here: start the channel over from its saved progress. */
  private async restart(key: string): Promise<void> {
    if (this.closing) return;
    const c = this.slots.stop(key);
    if (!c) return;
    c.feed.stop();
    try {
      await Promise.all([c.worker.fence(), c.jobs.killAll({ kind: "restart" })]);
      await c.worker.dispose();
    } finally {
      this.slots.forget(key, "stopping");
    }
    const v = await this.directory.read(key).catch(() => undefined);
    if (v?.record.owner === this.runnerId) this.acquire(key, v, true);
  }

  private async hasWorkLeft(c: OwnedChannel): Promise<boolean> {
    const last = await this.bus.lastMessage("IN", this.bus.subjects.channel("in", c.ref)).catch(() => undefined);
    return last === undefined ? true : last.seq > c.ledger.record.doneSeq;
  }

  /**
   * Past the set-down time without a heartbeat the others may soon give our channels away: stop
   * writing now, and take back what is still ours when the bus is back.
   */
  private setEverythingDown(): void {
    const running = this.slots.entries();
    if (running.length > 0) this.log.error({ channels: running.length }, "lost the bus: setting every channel down until it is back");
    for (const [key] of running) {
      const c = this.slots.setDown(key)!;
      c.feed.stop();
      // Another runner may hold the channel soon: nothing of it runs here any more, its jobs neither.
      void c.jobs.killAll({ kind: "fenced" });
      void c.worker.fence().then(() => c.worker.dispose());
    }
  }

  /** Keeps both views provably current in the background (a watch set up again can take an election). */
  private checkViews(): void {
    this.viewChecks ??= Promise.all([this.membership.check(), this.directory.check()])
      .catch((err) => this.log.warn({ err }, "checking the runner's views failed"))
      .finally(() => (this.viewChecks = undefined)) as Promise<void>;
  }

  private async housekeeping(): Promise<void> {
    this.checkViews();
    if (!this.membership.healthy) return this.setEverythingDown();
    for (const [key] of this.slots.entries("down")) {
      const v = await this.directory.read(key).catch(() => undefined);
      if (v === undefined && !this.membership.healthy) return;
      if (this.slots.forget(key, "down") && v?.record.owner === this.runnerId) this.acquire(key, v, true);
    }
    await this.ownership.tick();
    // Records that name this runner but were never acted on (a change missed by a watch).
    if (!this.directory.vouched) return;
    for (const [key, v] of this.directory.entries()) {
      if (v.record.owner === this.runnerId && !this.slots.holds(key)) this.acquire(key, v);
    }
  }

  /**
   * A channel record that counts past the end of MOM_IN (same stream, fewer messages: its store
   * lost some, e.g. two nats-servers on one store) would have its owner wait for sequences that
   * come only much later — the channel would go silent. Says so and reads the channel again from
   * the stream's next message (records of channels a live runner holds are left to it).
   */
  private async rewindRecordsAheadOf(lastSeq: number): Promise<void> {
    for (const [key, v] of [...this.directory.entries()]) {
      const r = v.record;
      if (r.streamCreated !== this.streamCreated || r.doneSeq <= lastSeq) continue;
      // A live owner keeps its channel's record in step itself; rewriting it under it would race.
      if (r.owner && r.owner !== this.runnerId && this.membership.isAlive(r.owner)) continue;
      const channel = qualifiedChannelId(parseChannelKey(key));
      this.log.warn(
        { channel, doneSeq: r.doneSeq, lastSeq },
        `channel ${channel} was handled up to MOM_IN #${r.doneSeq} but the stream ends at #${lastSeq}: its store lost messages (two NATS servers on one store?); reading the channel from #${lastSeq + 1} again`,
      );
      const { run, ...rest } = r;
      try {
        await this.directory.write(key, { ...rest, doneSeq: lastSeq, ...(run && run.seq <= lastSeq && { run }) }, v.revision);
      } catch (err) {
        this.log.warn({ err, channel: key }, "could not rewind the channel record (another runner may have)");
      }
    }
  }

  /** While disconnected this runner heard nobody: that silence is not evidence of death. */
  private async watchConnection(): Promise<void> {
    for await (const s of this.bus.status()) {
      if (s.type === "disconnect") this.membership.deaf("disconnected");
      if (s.type === "reconnect") {
        this.bus.streamState("IN").then((st) => (this.streamCreated = st.created), () => {});
        // Perhaps another server: the watches may have died with the old one. They are checked (and
        // set up again until that works) before this runner judges anybody again.
        void this.membership.reconnected().catch((err) => this.log.warn({ err }, "could not confirm the heartbeat watch after a reconnect"));
        void this.directory.caughtUp().catch((err) => this.log.warn({ err }, "could not confirm the channel records watch after a reconnect"));
      }
    }
  }

  private async onControl(d: Delivery<ControlMessage>): Promise<void> {
    const ref = this.refOf(d);
    const c = this.slots.active(channelKey(ref));
    const data = d.data;
    // The owner acts; for a channel nobody owns, one replica (the first by id) answers a decision.
    if (!c && !(data.type === "approval_decision" && this.speaksForUnowned(channelKey(ref)))) return;
    if (data.type === "abort") {
      const running = c!.active.current;
      const refusal = abortRefusal(this.opts.loaded.config, ref, data.requestedBy, running?.message.sender.id);
      if (refusal) {
        this.log.warn({ channel: qualifiedChannelId(ref), runId: data.runId ?? running?.runId, by: data.requestedBy?.id }, `abort refused: ${refusal}`);
        return;
      }
      return c!.worker.stop(data.requestedBy?.username ? `@${data.requestedBy.username}` : data.requestedBy!.id, data.runId);
    }
    const key = qualifiedChannelId(ref);
    const result = c ? this.broker.decide(key, data) : ({ status: "unknown" } as const);
    const by = data.decidedBy.username ? `@${data.decidedBy.username}` : data.decidedBy.id;
    if (result.status === "refused") {
      this.log.warn({ channel: key, approvalId: data.approvalId, by }, "approval decision refused: not an approver");
      await c!.gate.refused(result.pending, by);
    } else if (result.status === "unknown") {
      // The run that asked is gone (finished, timed out, or its runner restarted): say so, never hang.
      this.log.warn({ channel: key, approvalId: data.approvalId, by }, "decision for an unknown or expired approval");
      const pub = new RunPublisher(this.bus, ref, `approval:${data.approvalId}`, this.log, this.cfg.publishRetrySeconds * 1000);
      pub.emit({ type: "approval_resolved", approvalId: data.approvalId, outcome: "expired" });
      await pub.flushed();
    }
  }

  private speaksForUnowned(key: string): boolean {
    const owner = this.directory.get(key)?.record.owner;
    if (owner && this.membership.isAlive(owner)) return false;
    const ids = this.membership.assignable().map((r) => r.id).sort();
    return ids[0] === this.runnerId;
  }

  private refOf(d: Delivery<unknown>): ChannelRef {
    if (!d.channel) throw new RejectedInput(`not a channel subject: ${d.subject}`);
    return d.channel;
  }

  private createWorker(ref: ChannelRef, slot: ChannelSlot, ledger: ChannelLedger, onFailure: () => void): { worker: ChannelWorker; gate: ChannelToolGate; active: ActiveRun; jobs: ChannelJobs } {
    const key = qualifiedChannelId(ref);
    const store = this.layout.channel(ref);
    const { loaded, models } = this.opts;
    const { resolved, thinkingLevel } = models.forChannel(key);
    const policy = channelPolicy(loaded.config, ref, resolved.model.provider);
    const log = this.log.child({ channel: key });
    store.onFileProblem = (problem) => log.warn({ problem }, "refused an entry of the channel's directory (the runner never follows a symlink or opens a FIFO there)");
    const active = new ActiveRun();
    const gate = new ChannelToolGate({
      bus: this.bus,
      ref,
      channel: key,
      store,
      broker: this.broker,
      policy: () => policy,
      approvers: (requesterId) => approversFor(loaded.config, ref, requesterId),
      approvalTimeoutMs: loaded.config.policy.approvalTimeoutSeconds * 1000,
      approvalTextLimit: adapterApprovalLimit(loaded.config.adapters[ref.adapter]),
      active,
      log,
    });
    const allowedCustom = () => this.customTools.tools().filter((t) => isAllowed(t.id, policy).allowed);
    // Code mode is offered where there are custom tools to call and policy lets run_code through.
    const codeMode = () => allowedCustom().length > 0 && isAllowed(RUN_CODE_TOOL_NAME, policy).allowed;
    const webFetchAllowed = isAllowed(WEB_FETCH_TOOL_NAME, policy).allowed;
    const spawnAllowed = isAllowed(SPAWN_TOOL_NAME, policy).allowed;
    const jobsAllowed = isAllowed(PROCESS_TOOL_NAME, policy).allowed;
    // Offered only where config.json send.routes lets this channel post somewhere (deny by default).
    const send = channelSend({ bus: this.bus, ref, active, config: loaded.config, policy, knownChannels: () => this.layout.readChannels(), workspaceDir: this.layout.workspaceDir, publishRetryMs: this.cfg.publishRetrySeconds * 1000, log });
    const activeTools = () => [
      ...callableTools(MOM_TOOL_NAMES, policy),
      ...(webFetchAllowed ? [WEB_FETCH_TOOL_NAME] : []),
      ...(jobsAllowed ? [PROCESS_TOOL_NAME] : []),
      ...(send.offered ? [SEND_TOOL_NAME] : []),
      ...(allowedCustom().length ? [INVOKE_TOOL_NAME] : []),
      ...(codeMode() ? [RUN_CODE_TOOL_NAME] : []),
      ...(spawnAllowed ? [SPAWN_TOOL_NAME] : []),
    ];
    const web = loaded.config.web;
    // Built around a gate: the channel's, or a sub-agent's (its calls then carry the spawn call's id).
    const webFetchTool = (g: ToolGate) => withLabel(gated(createWebFetchTool({ ...web, timeoutMs: web.timeoutSeconds * 1000 }) as Parameters<typeof gated>[0], g));
    const invokeTool = (g: ToolGate) => withLabel(createInvokeTool(this.customTools, g, { channel: key, cwd: store.dir }) as Parameters<typeof withLabel>[0]);
    // Jobs outlive a run, so they belong to the channel, never to a sub-agent.
    const jobs = channelJobs({ bus: this.bus, ref, store, slot, sandbox: this.sandbox, runnerId: this.runnerId, config: loaded.config.runner, log });
    const processTool = withLabel(createProcessTool(jobs.forRun(active), gate) as Parameters<typeof withLabel>[0]);
    // A script sees only the tools this channel may see: a hidden one is "unknown" inside it too.
    const scriptTools = filterToolSource(this.customTools, (t) => isAllowed(t.id, policy).allowed);
    const runCodeTool = (g: ToolGate) =>
      withLabel(createRunCodeTool(scriptTools, g, this.scripts, { channel: key, cwd: store.dir }, { timeoutMs: loaded.config.runner.runTimeoutMinutes * 60_000 }) as Parameters<typeof withLabel>[0]);
    const worker = new ChannelWorker({
      bus: this.bus,
      active,
      ref,
      slot,
      store,
      log,
      ledger,
      maxCrashes: this.cfg.maxCrashes,
      publishRetryMs: this.cfg.publishRetrySeconds * 1000,
      onFailure,
      deadLetter: async (message, seq, reason) => {
        const subject = this.bus.subjects.channel("in", ref);
        await this.bus.deadLetter("agent-runner", { subject, data: JSON.stringify(message), reason: `${reason} (stream seq ${seq})`, msgId: message.id });
      },
      runTimeoutMs: loaded.config.runner.runTimeoutMinutes * 60_000,
      runSlot: (fn) => this.runSlot(fn),
      slotFree: () => this.runSlot.activeCount < this.runSlot.concurrency && this.runSlot.pendingCount === 0,
      materialize: channelMaterializer({ files: this.bus, store, workspaceDir: this.layout.workspaceDir, maxBytes: loaded.config.attachments.maxBytes, log }),
      busyMode: loaded.config.adapters[ref.adapter]?.busy ?? "queue",
      policyProblem: () => (activeTools().length === 0 ? noCallableToolsMessage(key) : undefined),
      onToolError: (toolCallId, toolName) => (activeTools().includes(toolName) ? Promise.resolve() : gate.hidden(toolCallId, toolName)),
      jobs: jobs.manager,
      createAgent: async () => {
        // Before the sandbox mounts them read-only for the channel's tools: log.jsonl,
        // context.jsonl and receipts.jsonl are regular files of one link beneath the channel's directory.
        await store.prepareFiles();
        const sandbox = channelSandbox(this.sandbox, store);
        return ChannelAgent.create({
          qualifiedChannelId: key,
          workspaceDir: this.layout.workspaceDir,
          store,
          sandbox,
          resolved,
          thinkingLevel,
          agentDir: join(loaded.paths.dataDir, ".pi"),
          // Off by default: every channel's prompt would carry every channel's id (a private DM's too).
          ...(loaded.config.runner.listChannels && { listChannels: () => this.channelList.get() }),
          attach: {
            maxBytes: loaded.config.attachments.maxBytes,
            send: attachmentSender({ bus: this.bus, ref, active, log }),
          },
          gate,
          activeTools,
          extraTools: [webFetchTool(gate), processTool, invokeTool(gate), runCodeTool(gate), send.tool(sandbox, gate)],
          extraPrompt: () =>
            [
              webFetchAllowed ? WEB_FETCH_PROMPT : "",
              jobsAllowed ? processPrompt(jobs.limits) : "",
              send.prompt(),
              formatCustomToolsForPrompt(allowedCustom()),
              codeMode() ? formatCodeModeForPrompt(allowedCustom(), RUN_CODE_TOOL_NAME) : "",
            ].filter(Boolean).join("\n\n"),
          receiptsNote: () => receiptsNote(active.current?.receipts),
          ...(spawnAllowed && {
            spawn: {
              limits: loaded.config.spawn,
              extraTools: (g) => [webFetchTool(g ?? gate), invokeTool(g ?? gate), runCodeTool(g ?? gate)],
              // A sub-agent reads the sections of the tools it has, and the receipts of its own calls.
              extraPrompt: (names) =>
                [
                  names.includes(WEB_FETCH_TOOL_NAME) ? WEB_FETCH_PROMPT : "",
                  names.includes(INVOKE_TOOL_NAME) ? formatCustomToolsForPrompt(allowedCustom()) : "",
                  names.includes(RUN_CODE_TOOL_NAME) ? formatCodeModeForPrompt(allowedCustom(), RUN_CODE_TOOL_NAME) : "",
                ].filter(Boolean).join("\n\n"),
              receiptsNote: (spawnCallId) => receiptsNote(active.current?.receipts.filter((r) => r.parentToolCallId === spawnCallId || r.parentToolCallId?.startsWith(`${spawnCallId}.`))),
              onHiddenTool: (toolCallId, toolId, spawnCallId) => gate.hidden(toolCallId, toolId, { parentToolCallId: spawnCallId, detail: "not among the sub-agent's tools" }),
            },
          }),
          modelAccess: this.guard?.forChannel({ ref, key, store, currentRun: () => active.current, hasDefault: (m) => resolved.modelRegistry.hasConfiguredAuth(m) }),
          onFileProblems: (problems) => this.log.warn({ channel: key, problems }, "some workspace files could not be used whole (skills, memory)"),
        });
      },
    });
    return { worker, gate, active, jobs: jobs.manager };
  }

  private reportToolProblems(): void {
    const tools = this.customTools.tools().map((t) => t.id);
    const problems = this.customTools.problems();
    this.log.info({ tools }, `custom tools: ${tools.length} loaded`);
    for (const p of problems) this.log.warn({ path: p.path, error: p.error }, "custom tool not loaded");
  }

  /** Idle channels are given up (their record keeps the progress), so owned = active. */
  private async evictIdle(idleMs: number): Promise<void> {
    const now = Date.now();
    for (const [key, c] of this.slots.entries("owned")) {
      if (!busy(c) && now - c.worker.lastActivity > idleMs) {
        await this.handOff(key, null, 0);
        this.log.debug({ channel: key }, "released idle channel");
      }
    }
  }

  private every(ms: number, fn: () => Promise<void>): void {
    let running = false;
    const t = setInterval(() => {
      if (running) return;
      running = true;
      fn()
        .catch((err) => this.log.warn({ err }, "runner housekeeping failed"))
        .finally(() => (running = false));
    }, ms);
    t.unref();
    this.timers.push(t);
  }
}

/** A run in hand or queued, or a background job running: the channel is not idle. */
function busy(c: OwnedChannel): boolean {
  return c.worker.busy || c.jobs.runningCount > 0;
}

/** Pod name (HOSTNAME in Kubernetes) + pid + a random suffix: unique per process, readable in logs. */
function defaultRunnerId(): string {
  const host = (process.env.HOSTNAME || hostname()).replace(/[^A-Za-z0-9_-]/g, "-").slice(0, 40);
  return `${host}-${process.pid}-${randomBytes(3).toString("hex")}`;
}

function receiptsNote(receipts: Receipt[] | undefined): string | undefined {
  if (!receipts?.length) return undefined;
  return `[Tool receipts of this run so far — the only actions you may say you did]\n${formatActivity(relevantActivity(receipts))}`;
}
