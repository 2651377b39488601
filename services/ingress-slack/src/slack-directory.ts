import { Directory, type Sender } from "@mom/ingress-sdk";
import type { ConversationsListResponse, UsersInfoResponse, UsersListResponse, WebClient } from "@slack/web-api";
import type { Logger } from "pino";

type RawUser = NonNullable<UsersListResponse["members"]>[number] | NonNullable<UsersInfoResponse["user"]>;
type RawChannel = NonNullable<ConversationsListResponse["channels"]>[number];

/** Users (the SDK's Directory) and channels of the workspace: learnt on start, users looked up one by one when new. */
export class SlackDirectory {
  readonly users: Directory;
  private readonly channels = new Map<string, { name?: string; isIm: boolean }>();

  constructor(
    private readonly client: WebClient,
    private readonly log: Logger,
  ) {
    this.users = new Directory({ log, lookup: async (id) => this.addUser((await client.users.info({ user: id })).user) });
  }

  /** users.list + conversations.list, every page. A failure is logged; lookups then happen one by one. */
  async learn(): Promise<void> {
    let users = 0;
    try {
      for await (const page of this.client.paginate("users.list", { limit: 200 })) {
        for (const m of (page as UsersListResponse).members ?? []) users += this.addUser(m) ? 1 : 0;
      }
    } catch (err) {
      this.log.warn({ err }, "could not list users (scope users:read?); names are looked up one by one");
    }
    try {
      for await (const page of this.client.paginate("conversations.list", { limit: 200, types: "public_channel,private_channel,mpim,im", exclude_archived: true })) {
        for (const c of (page as ConversationsListResponse).channels ?? []) this.addChannel(c);
      }
    } catch (err) {
      this.log.warn({ err }, "could not list conversations (scopes channels:read, groups:read, im:read, mpim:read?)");
    }
    this.log.info({ users, channels: this.channels.size }, "learnt the workspace");
  }

  /** A Slack user as mom names them: the handle (`name`), what mom writes as `@username`. */
  private addUser(m: RawUser | undefined): Sender | undefined {
    if (!m?.id) return undefined;
    const display = m.profile?.display_name || m.profile?.real_name || m.real_name;
    return this.users.learn({ id: m.id, username: m.name || m.id, isBot: m.is_bot ?? false, ...(display && { displayName: display }) }, !m.deleted);
  }

  private addChannel(c: RawChannel): void {
    if (c.id) this.channels.set(c.id, { isIm: c.is_im ?? false, ...(c.name && { name: c.name }) });
  }

  channelName(id: string): string | undefined {
    return this.channels.get(id)?.name;
  }

  /** True when the id is a known DM, or looks like one (`D…`). */
  isIm(id: string): boolean {
    return this.channels.get(id)?.isIm ?? id.startsWith("D");
  }
}
