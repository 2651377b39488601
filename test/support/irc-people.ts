import type { TestIrcServer } from "@mom/testing";
import { Client } from "irc-framework";

/** One line someone received: a PRIVMSG or NOTICE from `nick` to `target` (a channel, or them). */
export interface IrcLine {
  nick: string;
  target: string;
  message: string;
  type: "privmsg" | "notice";
}

/**
 * Someone on IRC as an irc-framework client, in `channel`. What they received is kept across
 * connections (`connect` again after the server went away), as a person's scrollback would be.
 */
export class IrcPerson {
  readonly lines: IrcLine[] = [];
  private client?: Client;
  private members = new Set<string>();

  constructor(
    private readonly server: TestIrcServer,
    readonly nick: string,
    private readonly channel: string,
  ) {}

  async connect(): Promise<void> {
    const client = new Client();
    const lower = (t: string) => client.caseLower(t);
    this.members = new Set();
    client.on("privmsg", (e) => this.lines.push({ nick: e.nick, target: e.target, message: e.message, type: "privmsg" }));
    client.on("notice", (e: IrcLine) => this.lines.push({ nick: e.nick, target: e.target, message: e.message, type: "notice" }));
    // Who is in the channel, from the NAMES list at join and the joins and quits after it.
    client.on("userlist", (e: { channel: string; users: Array<{ nick: string }> }) => lower(e.channel) === lower(this.channel) && (this.members = new Set(e.users.map((u) => lower(u.nick)))));
    client.on("join", (e: { nick: string; channel: string }) => lower(e.channel) === lower(this.channel) && this.members.add(lower(e.nick)));
    client.on("part", (e: { nick: string; channel: string }) => lower(e.channel) === lower(this.channel) && this.members.delete(lower(e.nick)));
    client.on("quit", (e: { nick: string }) => this.members.delete(lower(e.nick)));
    await new Promise<void>((resolve, reject) => {
      client.once("registered", () => client.join(this.channel));
      client.on("join", (e: { nick: string }) => lower(e.nick) === lower(this.nick) && resolve());
      client.once("close", () => reject(new Error(`${this.nick} could not connect to ngircd:\n${this.server.log()}`)));
      client.connect({ host: this.server.host, port: this.server.port, nick: this.nick, auto_reconnect: false });
    });
    this.client = client;
  }

  /** Says `text` to a channel or a nick: one PRIVMSG per line. */
  say(target: string, text: string): void {
    if (!this.client?.connected) throw new Error(`${this.nick} is not connected`);
    this.client.say(target, text);
  }

  /** Whether `nick` is in the channel, as this person's client sees it. */
  sees(nick: string): boolean {
    return !!this.client && this.members.has(this.client.caseLower(nick));
  }

  /** What `from` said to `target` (a channel, or this person's own nick for private lines), oldest first. */
  from(from: string, target: string): IrcLine[] {
    const lower = (t: string) => this.client?.caseLower(t) ?? t.toLowerCase();
    return this.lines.filter((l) => lower(l.nick) === lower(from) && lower(l.target) === lower(target));
  }

  async quit(): Promise<void> {
    const c = this.client;
    this.client = undefined;
    if (!c?.connected) return;
    await new Promise((r) => (c.once("close", r), c.quit()));
  }
}
