import { Controller, Inject } from "@nestjs/common";
import { type Delivery } from "@mom/bus";
import { JetStreamHandler } from "@mom/bus/nest";
import { ChannelMessage } from "@mom/contracts";
import { discoveryDurable, RUNNER_OPTIONS, type RunnerOptions } from "./runner-options.js";
import { RunnerService } from "./runner.service.js";

/** Every message on mom.in, shared by the replicas: its channel gets a live owner (RunnerService.onDiscover). */
@Controller()
export class DiscoveryController {
  constructor(@Inject(RunnerService) private readonly runner: RunnerService) {}

  @JetStreamHandler({
    schema: ChannelMessage,
    inject: [RUNNER_OPTIONS],
    consumer: (subjects, o: RunnerOptions) => ({
      stream: "IN",
      durable: discoveryDurable(o),
      filterSubject: subjects.wildcard("in"),
      stage: "agent-runner",
      maxInFlight: 64,
      // Failing here is always "not now" (no view to assign by, NATS electing a leader): a message
      // must never be set aside for it, its channel would go unanswered.
      maxDeliver: -1,
      // Discovery only checks the channel has an owner, which it may do twice: its ack need not
      // cost a socket write of its own on the way to the message's run.
      ackWithNextWrite: true,
    }),
  })
  discover(d: Delivery<ChannelMessage>): Promise<void> {
    return this.runner.onDiscover(d);
  }
}
