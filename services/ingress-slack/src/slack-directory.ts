import { Directory, type Sender } from "@mom/ingress-sdk";
import type { ConversationsListResponse, UsersInfoResponse, UsersListResponse, WebClient } from "@slack/web-api";
import type { Logger } from "pino";

type RawUser = NonNullable<UsersListResponse["members"]>[number] | NonNullable<UsersInfoResponse["user"]>;

/** Users (the SDK's Directory) and channel names of the workspace: learnt on start, users looked up one by one when new. */
export class SlackDirectory {
  readonly users: Directory;
  /** Channel id -> name, for a `<#C…>` Slack writes without one. */
  readonly channels = new Map<string, string>();

  constructor(
    private readonly client: WebClient,
    private readonly log: Logger,
  ) {
    this.users = new Directory({ log, lookup: async (id) => this.addUser((await client.users.info({ user: id })).user) });
  }

  /** users.list + conversations.list (channels: DMs have no names), every page. A failure is logged; lookups then happen one by one. */
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
      for await (const page of this.client.paginate("conversations.list", { limit: 200, types: "public_channel,private_channel", exclude_archived: true })) {
        for (const c of (page as ConversationsListResponse).channels ?? []) if (c.id && c.name) this.channels.set(c.id, c.name);
      }
    } catch (err) {
      this.log.warn({ err }, "could not list channels (scopes channels:read, groups:read?)");
    }
    this.log.info({ users, channels: this.channels.size }, "learnt the workspace");
  }

  /** A Slack user as mom names them: the handle (`name`), what mom writes as `@username`. */
  private addUser(m: RawUser | undefined): Sender | undefined {
    if (!m?.id) return undefined;
    const display = m.profile?.display_name || m.profile?.real_name || m.real_name;
    return this.users.learn({ id: m.id, username: m.name || m.id, isBot: m.is_bot ?? false, ...(display && { displayName: display }) }, !m.deleted);
  }
}
