import type { BackgroundJobs, JobLimitsView } from "@mom/agent";
import type { Bus } from "@mom/bus";
import type { MomConfig } from "@mom/config";
import type { ChannelRef } from "@mom/contracts";
import type { Executor, Sandbox } from "@mom/sandbox";
import type { ChannelStore } from "@mom/store";
import { hostname } from "node:os";
import type { Logger } from "pino";
import type { ActiveRun } from "../active-run.js";
import type { ChannelSlot } from "../cluster/channel-slots.js";
import { channelSandbox } from "../workspace-sandbox.js";
import { ChannelJobs } from "./channel-jobs.js";
import { inboundMsgIdOf } from "./job-message.js";

export interface RunnerJobsOptions {
  bus: Bus;
  ref: ChannelRef;
  store: ChannelStore;
  slot: ChannelSlot;
  sandbox: Sandbox;
  runnerId: string;
  config: MomConfig["runner"];
  log: Logger;
}

/**
 * One channel's background jobs as the runner wires them: the channel's own sandbox (made once,
 * after the runner's files in it are checked), job ends published on the channel's inbound
 * subject, and no job started while the channel is being handed over. `forRun` is what the
 * `process` tool sees: starts are credited to the run in progress (its requester, its thread).
 */
export function channelJobs(o: RunnerJobsOptions): { manager: ChannelJobs; limits: JobLimitsView; forRun: (active: ActiveRun) => BackgroundJobs } {
  const { maxPerChannel, maxRuntimeMinutes, outputKeptBytes } = o.config.jobs;
  const limits: JobLimitsView = { maxPerChannel, maxRuntimeMs: maxRuntimeMinutes * 60_000, outputKeptBytes };
  let executor: Promise<Executor> | undefined;
  const subject = o.bus.subjects.channel("in", o.ref);
  const manager = new ChannelJobs({
    ref: o.ref,
    store: o.store,
    executor: () => {
      executor ??= o.store.prepareFiles().then(() => channelSandbox(o.sandbox, o.store).executor);
      executor.catch(() => (executor = undefined));
      return executor;
    },
    limits,
    runnerId: o.runnerId,
    host: process.env.HOSTNAME || hostname(),
    publish: async (message) => {
      await o.bus.publish(subject, message, inboundMsgIdOf(o.ref, message), { retryForMs: o.config.publishRetrySeconds * 1000 });
    },
    refusal: () => (o.slot.state === "owned" ? undefined : "this channel is being handed to another runner; start the job again in a moment"),
    log: o.log.child({ component: "jobs" }),
  });
  const forRun = (active: ActiveRun): BackgroundJobs => ({
    limits,
    start: (command) => {
      const m = active.current?.message;
      return manager.start(command, m ? { id: m.sender.id, username: m.sender.username } : { id: "unknown", username: "unknown" }, m?.replyTo);
    },
    poll: (id) => manager.poll(id),
    list: () => manager.list(),
    kill: (id) => manager.kill(id, { kind: "tool" }),
  });
  return { manager, limits, forRun };
}
