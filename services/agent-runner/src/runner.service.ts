import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from "@nestjs/common";
import { ChannelAgent, MOM_TOOL_NAMES, withLabel } from "@mom/agent";
import { Bus, type Consumption, type Delivery } from "@mom/bus";
import { ChannelMessage, type ChannelRef, ControlMessage, qualifiedChannelId, type Receipt } from "@mom/contracts";
import {
  createHostToolApi,
  createInvokeTool,
  CustomToolRegistry,
  formatActivity,
  formatCustomToolsForPrompt,
  INVOKE_TOOL_NAME,
  isAllowed,
  relevantActivity,
} from "@mom/tools";
import { WorkspaceLayout } from "@mom/store";
import { join } from "node:path";
import pLimit from "p-limit";
import type { Logger } from "pino";
import { channelMaterializer } from "./attachment-materializer.js";
import { attachmentSender } from "./attachment-sender.js";
import { ApprovalBroker } from "./approval-broker.js";
import { approversFor, callableTools, channelPolicy, noCallableToolsMessage } from "./channel-policy.js";
import { ChannelWorker } from "./channel-worker.js";
import { RunPublisher } from "./run-publisher.js";
import { ChannelToolGate } from "./tool-gate.js";
import { RUNNER_OPTIONS, type RunnerOptions } from "./runner-options.js";
import { channelSandbox, workspaceSandbox } from "./workspace-sandbox.js";
import type { Sandbox } from "@mom/sandbox";

/** Consumes mom.in and mom.ctl and routes each message to its channel's worker. */
@Injectable()
export class RunnerService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly workers = new Map<string, ChannelWorker>();
  private readonly layout: WorkspaceLayout;
  private readonly log: Logger;
  private consumptions: Consumption[] = [];
  private evictTimer?: NodeJS.Timeout;
  private readonly runSlot: ReturnType<typeof pLimit>;
  private readonly broker = new ApprovalBroker();
  private readonly gates = new Map<string, ChannelToolGate>();
  /** Custom host tools (global dir, then workspace/tools), hot-reloaded for every channel. */
  private readonly customTools: CustomToolRegistry;
  private readonly sandbox: Sandbox;

  constructor(
    @Inject(Bus) private readonly bus: Bus,
    @Inject(RUNNER_OPTIONS) private readonly opts: RunnerOptions,
  ) {
    this.layout = new WorkspaceLayout(opts.loaded.paths.workspaceDir);
    this.log = opts.logger;
    this.runSlot = pLimit(opts.loaded.config.runner.maxConcurrentRuns);
    const { paths, config } = opts.loaded;
    this.sandbox = workspaceSandbox(opts.loaded, this.log);
    this.customTools = new CustomToolRegistry(
      [...(config.tools.globalDir ? [config.tools.globalDir] : []), join(paths.workspaceDir, "tools")],
      createHostToolApi({ dataDir: paths.dataDir, workspaceDir: paths.workspaceDir }),
      { logger: this.log.child({ component: "custom-tools" }) },
    );
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.layout.ensureWorkspace();
    await this.customTools.reload();
    this.reportToolProblems();
    this.customTools.watch(() => this.reportToolProblems());
    const durable = this.opts.durable ?? "agent-runner";
    this.consumptions.push(
      await this.bus.consume({
        stream: "IN",
        durable,
        filterSubject: this.bus.subjects.wildcard("in"),
        schema: ChannelMessage,
        stage: "agent-runner",
        // Handlers resolve when their run ends; many channels run at once, order per channel is kept by the worker.
        maxInFlight: 512,
        handler: (d) => this.onMessage(d),
      }),
      await this.bus.consume({
        stream: "CTL",
        durable: `${durable}-ctl`,
        deliver: "new",
        filterSubject: this.bus.subjects.wildcard("ctl"),
        schema: ControlMessage,
        stage: "agent-runner",
        maxInFlight: 64,
        handler: (d) => this.onControl(d),
      }),
    );
    const idleMs = this.opts.loaded.config.runner.idleEvictMinutes * 60_000;
    this.evictTimer = setInterval(() => void this.evictIdle(idleMs), Math.min(idleMs, 60_000));
    this.evictTimer.unref();
    this.log.info({ model: this.opts.loaded.config.model, workspace: this.layout.workspaceDir }, "agent runner ready");
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.evictTimer);
    this.customTools.close();
    await Promise.all([...this.workers.values()].map((w) => w.shutdown()));
    await Promise.all(this.consumptions.map((c) => c.stop()));
    for (const w of this.workers.values()) await w.dispose();
  }

  private async onMessage(d: Delivery<ChannelMessage>): Promise<void> {
    const ref = this.refOf(d);
    if (d.data.channelId !== ref.channelId) {
      throw new Error(`payload channelId ${JSON.stringify(d.data.channelId)} does not match subject channel ${JSON.stringify(ref.channelId)}`);
    }
    await this.worker(ref).accept(d.data);
  }

  private async onControl(d: Delivery<ControlMessage>): Promise<void> {
    const worker = this.workers.get(qualifiedChannelId(this.refOf(d)));
    const data = d.data;
    if (data.type === "abort") return worker?.stop(data.requestedBy?.username ? `@${data.requestedBy.username}` : "abort", data.runId);
    const ref = this.refOf(d);
    const key = qualifiedChannelId(ref);
    const result = this.broker.decide(key, data);
    const by = data.decidedBy.username ? `@${data.decidedBy.username}` : data.decidedBy.id;
    if (result.status === "refused") {
      this.log.warn({ channel: key, approvalId: data.approvalId, by }, "approval decision refused: not an approver");
      await this.gates.get(key)?.refused(result.pending, by);
    } else if (result.status === "unknown") {
      // The run that asked is gone (finished, timed out, or its runner restarted): say so, never hang.
      this.log.warn({ channel: key, approvalId: data.approvalId, by }, "decision for an unknown or expired approval");
      const pub = new RunPublisher(this.bus, ref, `approval:${data.approvalId}`, this.log);
      pub.emit({ type: "approval_resolved", approvalId: data.approvalId, outcome: "expired" });
      await pub.flushed();
    }
  }

  private refOf(d: Delivery<unknown>): ChannelRef {
    if (!d.channel) throw new Error(`not a channel subject: ${d.subject}`);
    return d.channel;
  }

  private worker(ref: ChannelRef): ChannelWorker {
    const key = qualifiedChannelId(ref);
    let w = this.workers.get(key);
    if (!w) {
      const store = this.layout.channel(ref);
      const { loaded, models } = this.opts;
      const { resolved, thinkingLevel } = models.forChannel(key);
      const policy = channelPolicy(loaded.config, ref, resolved.model.provider);
      const gate = new ChannelToolGate({
        bus: this.bus,
        ref,
        channel: key,
        store,
        broker: this.broker,
        policy: () => policy,
        approvers: (requesterId) => approversFor(loaded.config, ref, requesterId),
        approvalTimeoutMs: loaded.config.policy.approvalTimeoutSeconds * 1000,
        currentRun: () => w?.currentRun,
        log: this.log.child({ channel: key }),
      });
      this.gates.set(key, gate);
      const allowedCustom = () => this.customTools.tools().filter((t) => isAllowed(t.id, policy).allowed);
      const activeTools = () => [...callableTools(MOM_TOOL_NAMES, policy), ...(allowedCustom().length ? [INVOKE_TOOL_NAME] : [])];
      const invokeTool = withLabel(createInvokeTool(this.customTools, gate, { channel: key, cwd: store.dir }) as Parameters<typeof withLabel>[0]);
      w = new ChannelWorker({
        bus: this.bus,
        ref,
        store,
        log: this.log.child({ channel: key }),
        runTimeoutMs: loaded.config.runner.runTimeoutMinutes * 60_000,
        runSlot: (fn) => this.runSlot(fn),
        materialize: channelMaterializer({ files: this.bus, store, workspaceDir: this.layout.workspaceDir, maxBytes: loaded.config.attachments.maxBytes, log: this.log.child({ channel: key }) }),
        busyMode: loaded.config.adapters[ref.adapter]?.busy ?? "queue",
        policyProblem: () => (activeTools().length === 0 ? noCallableToolsMessage(key) : undefined),
        onToolError: (toolCallId, toolName) => (activeTools().includes(toolName) ? Promise.resolve() : gate.hidden(toolCallId, toolName)),
        createAgent: () =>
          ChannelAgent.create({
            qualifiedChannelId: key,
            workspaceDir: this.layout.workspaceDir,
            store,
            sandbox: channelSandbox(this.sandbox, store),
            resolved,
            thinkingLevel,
            agentDir: join(loaded.paths.dataDir, ".pi"),
            listChannels: () => this.layout.listChannels().map(qualifiedChannelId),
            attach: {
              maxBytes: loaded.config.attachments.maxBytes,
              send: attachmentSender({ bus: this.bus, ref, currentRun: () => w?.currentRun, log: this.log.child({ channel: key }) }),
            },
            gate,
            activeTools,
            extraTools: [invokeTool],
            extraPrompt: () => formatCustomToolsForPrompt(allowedCustom()),
            receiptsNote: () => receiptsNote(w?.currentRun?.receipts),
            onSkillProblems: (problems) => this.log.warn({ channel: key, problems }, "some skills could not be loaded"),
          }),
      });
      this.workers.set(key, w);
    }
    return w;
  }

  private reportToolProblems(): void {
    const tools = this.customTools.tools().map((t) => t.id);
    const problems = this.customTools.problems();
    this.log.info({ tools }, `custom tools: ${tools.length} loaded`);
    for (const p of problems) this.log.warn({ path: p.path, error: p.error }, "custom tool not loaded");
  }

  private async evictIdle(idleMs: number): Promise<void> {
    const now = Date.now();
    for (const [key, w] of this.workers) {
      if (!w.busy && now - w.lastActivity > idleMs) {
        this.workers.delete(key);
        this.gates.delete(key);
        await w.dispose();
        this.log.debug({ channel: key }, "evicted idle channel session");
      }
    }
  }
}

function receiptsNote(receipts: Receipt[] | undefined): string | undefined {
  if (!receipts?.length) return undefined;
  return `[Tool receipts of this run so far — the only actions you may say you did]\n${formatActivity(relevantActivity(receipts))}`;
}
