// irc-framework ships no type declarations: the part of it this ingress uses.
declare module "irc-framework" {
  export interface MessageEvent {
    nick: string;
    /** A channel, or our own nick for a private message. */
    target: string;
    message: string;
    tags: Record<string, string>;
    /** Server time (IRCv3 server-time), in ms. */
    time?: number;
    /** The sender's services account (IRCv3 account-tag), when the server sends it. */
    account?: string;
  }
  export interface ClientOptions {
    host: string;
    port: number;
    tls: boolean;
    nick: string;
    username: string;
    gecos: string;
    password?: string;
    account?: { account: string; password: string };
    message_max_length: number;
    auto_reconnect: boolean;
    auto_reconnect_max_wait: number;
    auto_reconnect_max_retries: number;
  }
  type IrcErrorEvent = { error: string; channel?: string; reason?: string };
  export class Client {
    user: { nick: string };
    connect(options: ClientOptions): void;
    say(target: string, message: string): void;
    notice(target: string, message: string): void;
    join(channel: string): void;
    quit(message?: string): void;
    changeNick(nick: string): void;
    caseLower(text: string): string;
    on(event: "privmsg", listener: (e: MessageEvent) => void): this;
    on(event: "join", listener: (e: { nick: string; channel: string }) => void): this;
    on(event: "reconnecting", listener: (e: { attempt: number; wait: number }) => void): this;
    on(event: "nick in use", listener: (e: { nick: string }) => void): this;
    on(event: "irc error", listener: (e: IrcErrorEvent) => void): this;
    on(event: string, listener: (...args: any[]) => void): this;
    once(event: string, listener: (...args: any[]) => void): this;
    off(event: string, listener: (...args: any[]) => void): this;
  }
}
