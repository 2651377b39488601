import type { WebClient } from "@slack/web-api";
import type { Logger } from "pino";

export interface SlackUser {
  id: string;
  /** Slack handle (`name`), what mom writes as `@username`. */
  username: string;
  displayName?: string;
  isBot: boolean;
}

export interface SlackChannel {
  id: string;
  name?: string;
  isIm: boolean;
  /** The other person of a DM. */
  user?: string;
}

interface RawUser {
  id?: string;
  name?: string;
  real_name?: string;
  deleted?: boolean;
  is_bot?: boolean;
  profile?: { display_name?: string; real_name?: string };
}

interface RawChannel {
  id?: string;
  name?: string;
  is_im?: boolean;
  user?: string;
}

/** Users and channels of the workspace: learnt on start, looked up one by one when new. */
export class SlackDirectory {
  private readonly users = new Map<string, SlackUser>();
  private readonly byName = new Map<string, string>();
  private readonly channels = new Map<string, SlackChannel>();
  private readonly lookups = new Map<string, Promise<SlackUser>>();

  constructor(
    private readonly client: WebClient,
    private readonly log: Logger,
  ) {}

  /** users.list + conversations.list, every page. A failure is logged; lookups then happen one by one. */
  async learn(): Promise<void> {
    try {
      for await (const page of this.client.paginate("users.list", { limit: 200 })) {
        for (const m of ((page as { members?: RawUser[] }).members ?? [])) this.addUser(m);
      }
    } catch (err) {
      this.log.warn({ err }, "could not list users (scope users:read?); names are looked up one by one");
    }
    try {
      for await (const page of this.client.paginate("conversations.list", { limit: 200, types: "public_channel,private_channel,mpim,im", exclude_archived: true })) {
        for (const c of ((page as { channels?: RawChannel[] }).channels ?? [])) this.addChannel(c);
      }
    } catch (err) {
      this.log.warn({ err }, "could not list conversations (scopes channels:read, groups:read, im:read, mpim:read?)");
    }
    this.log.info({ users: this.users.size, channels: this.channels.size }, "learnt the workspace");
  }

  addUser(m: RawUser): SlackUser | undefined {
    if (!m.id) return undefined;
    const display = m.profile?.display_name || m.profile?.real_name || m.real_name;
    const user: SlackUser = { id: m.id, username: m.name || m.id, isBot: m.is_bot ?? false, ...(display && { displayName: display }) };
    this.users.set(user.id, user);
    if (!m.deleted) this.byName.set(user.username, user.id);
    return user;
  }

  addChannel(c: RawChannel): void {
    if (!c.id) return;
    this.channels.set(c.id, { id: c.id, isIm: c.is_im ?? false, ...(c.name && { name: c.name }), ...(c.user && { user: c.user }) });
  }

  user(id: string): SlackUser | undefined {
    return this.users.get(id);
  }

  /** The user, from the cache or users.info; an unknown id becomes a user named by its id. */
  resolveUser(id: string): Promise<SlackUser> {
    const known = this.users.get(id);
    if (known) return Promise.resolve(known);
    let pending = this.lookups.get(id);
    if (!pending) {
      pending = this.client.users
        .info({ user: id })
        .then((r) => this.addUser(r.user as RawUser) ?? { id, username: id, isBot: false })
        .catch((err: unknown) => {
          this.log.warn({ err, user: id }, "users.info failed; using the id as the name");
          return { id, username: id, isBot: false };
        })
        .finally(() => this.lookups.delete(id));
      this.lookups.set(id, pending);
    }
    return pending;
  }

  userIdFor(username: string): string | undefined {
    return this.byName.get(username);
  }

  channelName(id: string): string | undefined {
    return this.channels.get(id)?.name;
  }

  /** True when the id is a known DM, or looks like one (`D…`). */
  isIm(id: string): boolean {
    return this.channels.get(id)?.isIm ?? id.startsWith("D");
  }
}
