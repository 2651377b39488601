import type { Sender } from "@mom/contracts";
import { RecentMap } from "@mom/render";
import type { Logger } from "pino";

export interface DirectoryOptions {
  log: Logger;
  /** Asks the platform about one person, who it `learn`s; undefined when the platform has nobody by that id. */
  lookup?(id: string): Promise<Sender | undefined>;
  /** Usernames match whatever their case (Discord). */
  caseless?: boolean;
  /** People kept (the least recently learnt are forgotten first); default 100,000. */
  capacity?: number;
}

/**
 * The people of a platform as mom writes them (`@username`), by platform id: learnt from what the
 * platform lists or sends, a newcomer looked up once — callers at the same time share the lookup —
 * and, when that fails, called by their id. `idOf` turns the `@username` mom writes back into the
 * platform's id for a mention.
 */
export class Directory {
  private readonly people: RecentMap<Sender>;
  private readonly ids: RecentMap<string>;
  private readonly lookups = new Map<string, Promise<Sender>>();

  constructor(private readonly o: DirectoryOptions) {
    this.people = new RecentMap(o.capacity ?? 100_000);
    this.ids = new RecentMap(o.capacity ?? 100_000);
  }

  private key(username: string): string {
    return this.o.caseless ? username.toLowerCase() : username;
  }

  /** Remembers a person; `named: false` (a deactivated account) keeps their name from standing for them in mentions. */
  learn(person: Sender, named = true): Sender {
    this.people.set(person.id, person);
    if (named) this.ids.set(this.key(person.username), person.id);
    return person;
  }

  get(id: string): Sender | undefined {
    return this.people.get(id);
  }

  /** The id of the person mom writes as `@username`, when known. */
  idOf(username: string): string | undefined {
    return this.ids.get(this.key(username));
  }

  /** The person: known, or looked up (not kept when the lookup fails: asked again next time). */
  resolve(id: string): Promise<Sender> {
    const known = this.people.get(id);
    if (known) return Promise.resolve(known);
    let pending = this.lookups.get(id);
    if (!pending) {
      const byId = { id, username: id, isBot: false };
      pending = (this.o.lookup?.(id) ?? Promise.resolve(undefined))
        .then((p) => p ?? byId)
        .catch((err: unknown) => {
          this.o.log.warn({ err, user: id }, "could not look a user up; using the id as the name");
          return byId;
        })
        .finally(() => this.lookups.delete(id));
      this.lookups.set(id, pending);
    }
    return pending;
  }
}
