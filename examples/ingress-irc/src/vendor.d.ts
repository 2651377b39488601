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
  }
  export class Client {
    user: { nick: string };
    /** Without options: again, with the last ones. */
    connect(options?: ClientOptions): void;
    say(target: string, message: string): void;
    notice(target: string, message: string): void;
    join(channel: string): void;
    quit(message?: string): void;
    changeNick(nick: string): void;
    caseLower(text: string): string;
    on(event: "privmsg", listener: (e: MessageEvent) => void): this;
    on(event: string, listener: (...args: any[]) => void): this;
    once(event: string, listener: (...args: any[]) => void): this;
    off(event: string, listener: (...args: any[]) => void): this;
  }
}
