/** Who the suite plays on the platform; their ids are the platform's user ids as the ingress publishes them. */
export type Person = "admin" | "member" | "stranger";

export interface SentFile {
  filename: string;
  bytes: Uint8Array;
}

/**
 * The platform side of the conformance suite: a fake platform server (or a real one) driven as
 * people would. The adapter under test must be configured with `admins: [users.admin]` and
 * `dm: [users.member]`, so the admin and the member may DM mom and the stranger may not.
 */
export interface PlatformDriver {
  users: Record<Person, string>;
  /** A channel mom is in where the member writes, as its channelId on the bus (on platforms without shared rooms, the member's own chat). */
  room: string;
  /** The channelId of a direct conversation with `who`; absent when the platform has none apart from rooms. */
  dmWith?(who: Person): string;
  /**
   * True when the ingress asks the platform who can see a chat (PlatformConnection.canSee): the
   * member, once they wrote in `room`, can see it and the stranger cannot. Otherwise a post asked
   * for by anyone of the platform is refused, the member's too.
   */
  checksMembership?: boolean;
  /** True when every message is addressed to mom (e-mail): the "not mentioned" check is skipped. */
  everyMessageAddressed?: boolean;
  /** `who` posts `text` in `channel`, addressing mom when `mention` (the driver writes the platform's mention). */
  send(channel: string, who: Person, text: string, o?: { mention?: boolean; file?: SentFile }): Promise<void>;
  /** The platform delivers the last sent message again, as a webhook retry or a replayed gateway event would. */
  redeliverLast?(): Promise<void>;
  /** What people see from mom in `channel` now: the current text of each of its messages, oldest first. */
  botTexts(channel: string): Promise<string[]>;
  /**
   * Files mom sent to `channel`. Absent when the platform cannot carry files either way (IRC): the
   * answer then names the file it could not send, and no file is sent to mom.
   */
  botFiles?(channel: string): Promise<SentFile[]>;
  /**
   * `who` allows or denies the approval prompt of `approvalId` of a run in `channel` (a button, a
   * reaction, a reply with its code), once the prompt is there: it waits for it, wherever the
   * platform shows it (the channel, or the approvers' own chats), and fails when it never comes or
   * does not show the call's arguments (`argsSummary`).
   */
  decide(channel: string, approval: { approvalId: string; argsSummary: string }, decision: "allow-once" | "deny", who: Person): Promise<void>;
  /**
   * Why a prompt shown before a restart of the ingress cannot be decided after it, when it cannot
   * (IRC: its approval codes live in the process); the case is then skipped with this reason.
   */
  promptsLostOnRestart?: string;
  /** The platform answers mom's next `n` calls with its rate limit (and a short retry-after). */
  rateLimitNext?(n: number): void;
  /** Cuts the ingress's connection to the platform (gateway, long poll, IMAP), resolving once the ingress has met the cut; it must come back by itself. */
  dropConnection?(): Promise<void>;
}

/** The ingress under test, as the suite starts and stops it. */
export interface IngressUnderTest {
  /** Resolves once the ingress receives and draws. */
  start(): Promise<void>;
  /** A graceful stop (SIGTERM). */
  stop(): Promise<void>;
  /** A crash (kill -9 of its process); absent when the ingress runs in the test's own process. */
  kill?(): Promise<void>;
  /** True when the platform keeps what was sent while the ingress was away and hands it over on reconnect. */
  buffersWhileDown?: boolean;
}
